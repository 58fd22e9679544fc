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
			if err := target.ParseFlags(rest); err != nil { // --defaults-group-suffix too: a global flag
				return usageError{err}
			}
			if err := g.applyOptionFiles(target); err != nil {
				return err
			}
			return g.sources.WriteEffective(g.stdout, target.Name(), target.Flags())
		},
	}
}

// applyOptionFiles sets the flags of cmd that the command line left
// unset from the option files (options.ApplyFiles), and records where
// each value came from.
func (g *globals) applyOptionFiles(cmd *cobra.Command) error {
	var err error
	if g.sources, err = options.ApplyFiles(cmd.Name(), cmd.Flags(), g.groupSuffix); err != nil {
		return usageError{err}
	}
	return nil
}
