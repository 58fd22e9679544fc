package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/repo"
)

func newListCmd(g *globals) *cobra.Command {
	var asJSON, binlogs, status bool
	var kind string
	cmd := &cobra.Command{
		Use:  "list",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkKind(kind); err != nil {
				return err
			}
			r, err := g.openRepo(cmd.Context(), false)
			if err != nil {
				return err
			}
			if binlogs || status {
				return listBinlogs(cmd.Context(), g, r, asJSON, status)
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

// listBinlogs is list --binlogs (every file, then each server's window)
// and list --status (each server's window only), as text or JSON.
func listBinlogs(ctx context.Context, g *globals, r *repo.Repo, asJSON, status bool) error {
	b, err := inventory.ListBinlogs(ctx, r)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(g.stdout, b.JSON(status))
	}
	return b.WriteText(g.stdout, g.stderr, status)
}
