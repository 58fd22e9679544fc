package cli

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/options"
)

// reportMade prints the backup m the command made: with --json one JSON
// object (inventory.Made), else text.
func (g *globals) reportMade(m *archive.Manifest, text string) error {
	g.made = m
	if !g.json {
		_, err := fmt.Fprintln(g.stdout, text)
		return err
	}
	return printJSON(g.stdout, inventory.MadeOf(m))
}

// registerJSON adds --json to a command that makes a backup.
func (g *globals) registerJSON(f *pflag.FlagSet) {
	options.Bind(f).Bool("json", &g.json)
}
