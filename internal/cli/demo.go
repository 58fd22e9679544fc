package cli

import (
	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/demo"
	"github.com/backstream/backstream/internal/options"
)

func newDemoCmd(g *globals, version string) *cobra.Command {
	var (
		bigMB    int
		parallel int
		dir      string
	)
	cmd := &cobra.Command{
		Use:     "demo",
		Short:   "Back up and restore a throwaway sandbox server, and check the result",
		Example: `  backstream demo`,
		Long: `demo starts a throwaway MariaDB server (mariadbd from this host, in a temp dir, on a
free loopback port) with sample data, backs it up into a temp repository, restores and
prepares it into a new datadir, starts a second server on that, and compares CHECKSUM
TABLE of every table. It touches no existing server.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return demo.Run(cmd.Context(), demo.Options{Dir: dir, BigMB: bigMB, Parallel: parallel, Version: version, Out: g.stdout})
		},
	}
	o := options.Bind(cmd.Flags())
	o.Int("size-mb", &bigMB)
	o.Int("parallel", &parallel)
	o.String("dir", &dir)
	return cmd
}
