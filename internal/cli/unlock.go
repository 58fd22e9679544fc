package cli

import (
	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/options"
)

func newUnlockCmd(g *globals) *cobra.Command {
	var all, asJSON bool
	cmd := &cobra.Command{
		Use:  "unlock",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := g.repos.Unlock(cmd.Context(), all)
			if res == nil {
				return err
			}
			if !asJSON {
				res.WriteText(g.stdout)
			} else if perr := printJSON(g.stdout, res); perr != nil {
				return perr
			}
			return err
		},
	}
	o := options.Bind(cmd.Flags())
	o.Bool("all", &all)
	o.Bool("json", &asJSON)
	return cmd
}
