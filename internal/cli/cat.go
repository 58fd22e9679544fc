package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repoaccess"
)

func newCatCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use: "cat",
		RunE: func(cmd *cobra.Command, args []string) error {
			if term.IsTerminal(int(os.Stdout.Fd())) {
				return usagef("refusing to write a binary stream to a terminal; pipe it into mbstream -x or a file")
			}
			ref, err := backupRef(args)
			if err != nil {
				return err
			}
			r, m, ctx, release, err := g.repos.ResolveLocked(cmd.Context(), ref, "", repoaccess.OpCat)
			if err != nil {
				return err
			}
			defer release()
			if err := archive.WriteStream(ctx, archive.ReadOptions{Input: r.Input(m), Manifest: m, Memory: g.repos.Memory}, g.stdout); err != nil {
				return fmt.Errorf("backup %s: %w", m.ID, err)
			}
			return nil
		},
	}
	return cmd
}
