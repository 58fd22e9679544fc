package cli

import (
	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/options"
)

func newInitCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:  "init",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := g.repos.Create(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g.stdout, r.Created())
			}
			r.Created().WriteText(g.stdout)
			return nil
		},
	}
	g.registerEncrypt(cmd.Flags())
	options.Bind(cmd.Flags()).Bool("json", &asJSON)
	options.Bind(cmd.Flags()).Bool("dedup", &g.repos.Dedup)
	return cmd
}
