package cli

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/sst"
)

// newSSTCmd is the state snapshot transfer a Galera server runs through
// wsrep_sst_backstream (contrib/galera): its arguments are the server's,
// not flags of backstream's making, so they reach package sst as given.
func newSSTCmd(g *globals, version string) *cobra.Command {
	return &cobra.Command{
		Use:   "sst --role joiner|donor --address ADDR --datadir DIR ...",
		Short: "Galera state snapshot transfer (run by the server as wsrep_sst_backstream, not by hand)",
		Long: `sst is what a Galera node set to wsrep_sst_method=backstream runs, through the script
wsrep_sst_backstream beside the backstream binary: the joiner listens and restores,
verifies and prepares the snapshot as it arrives, then moves it into its datadir and
reports the cluster position; the donor streams a mariabackup --galera-info backup of
itself to it. Settings come from the [sst] group of the server's option files
(token-file, parallel, compress, max-rate, tls-cert, tls-key, tls-ca); see the guide's
chapter "Galera SST".`,
		Example: `  # what the server runs; see docs/guide.md, "Galera SST"
  wsrep_sst_backstream --role joiner --address 10.0.0.3:4444 --datadir /var/lib/mysql --parent 4242`,
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			req, err := sst.ParseArgs(args)
			if err != nil {
				return usageError{err}
			}
			t := g.tracker("sst "+string(req.Role), 0)
			err = sst.Run(cmd.Context(), req, sst.Options{Stdout: g.stdout, Log: g.stderr,
				Auth: os.Getenv(sst.AuthEnv), Progress: t, Version: version})
			t.Finish(err)
			return err
		},
	}
}
