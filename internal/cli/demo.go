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
		Use:  "demo",
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
