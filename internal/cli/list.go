package cli

import (
	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/repoaccess"
)

func newListCmd(g *globals) *cobra.Command {
	var asJSON, binlogs, status bool
	var kind string
	cmd := &cobra.Command{
		Use:  "list",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := repoaccess.CheckKind(kind); err != nil {
				return err
			}
			r, err := g.repos.Open(cmd.Context())
			if err != nil {
				return err
			}
			if binlogs || status { // every file, then each server's window; --status the windows only
				b, err := inventory.ListBinlogs(cmd.Context(), r)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(g.stdout, b.JSON(status))
				}
				return b.WriteText(g.stdout, g.stderr, status)
			}
			l, err := inventory.List(cmd.Context(), r, inventory.Request{Kind: kind})
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g.stdout, l)
			}
			return l.WriteText(g.stdout, g.stderr)
		},
	}
	o := options.Bind(cmd.Flags())
	o.Bool("json", &asJSON)
	o.String("kind", &kind)
	o.Bool("binlogs", &binlogs)
	o.Bool("status", &status)
	return cmd
}
