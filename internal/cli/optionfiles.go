package cli

import (
	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/options"
)

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
