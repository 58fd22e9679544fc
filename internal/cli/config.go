package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/options"
)

func newConfigCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:                "config",
		Args:               cobra.MinimumNArgs(1),
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == "-h" || args[0] == "--help" {
				return cmd.Help()
			}
			target, rest, err := cmd.Root().Find(args)
			if err != nil || target == cmd.Root() || target == cmd {
				return usagef("config: no command %q", strings.Join(args, " "))
			}
			if err := target.ParseFlags(rest); err != nil {
				return usageError{err}
			}
			if v, _ := target.Flags().GetString("defaults-group-suffix"); v != "" {
				g.groupSuffix = v
			}
			if err := g.applyOptionFiles(target); err != nil {
				return err
			}
			if err := g.sources.WriteEffective(g.stdout, target.Name(), target.Flags()); err != nil {
				return err
			}
			if target.Flags().Lookup("socket") == nil {
				return nil // a command that connects to no server
			}
			return options.WriteConnection(g.stdout, target.Flags())
		},
	}
}
