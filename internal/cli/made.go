package cli

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/options"
)

// reportMade prints the backup the command made: with --json one JSON
// object, else text.
func (g *globals) reportMade(made inventory.Made, text string) error {
	g.made = made
	if !g.json {
		_, err := fmt.Fprintln(g.stdout, text)
		return err
	}
	return printJSON(g.stdout, made)
}

// registerJSON adds --json to a command that makes a backup.
func (g *globals) registerJSON(f *pflag.FlagSet) {
	options.Bind(f).Bool("json", &g.json)
}
