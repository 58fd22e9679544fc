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
		Use:                "sst",
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
