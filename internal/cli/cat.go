package cli

import (
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/backstream/backstream/internal/restorecase"
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
			return restorecase.Cat(cmd.Context(), g.repos, ref, g.stdout)
		},
	}
	return cmd
}
