package cli

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/options"
)

// madeResult is what --json prints of a backup a command made: its
// listing, how long it took, and the encryption it got.
type madeResult struct {
	inventory.Backup
	Seconds    float64             `json:"seconds"`
	Encryption *archive.Encryption `json:"encryption,omitempty"`
	NoHistory  []string            `json:"no_history,omitempty"`
	Masked     []string            `json:"masked,omitempty"` // logical: columns the dump masked, as db.table.column=function
}

// reportMade prints the backup m the command made: with --json one JSON
// object (madeResult), else text.
func (g *globals) reportMade(m *archive.Manifest, text string) error {
	g.made = m
	if !g.json {
		_, err := fmt.Fprintln(g.stdout, text)
		return err
	}
	return printJSON(g.stdout, madeOf(m))
}

// madeOf is what --json prints of backup m, made by the command.
func madeOf(m *archive.Manifest) madeResult {
	r := madeResult{Backup: inventory.Of(m), Seconds: m.Stats.Seconds, Encryption: m.Encryption}
	for _, d := range m.Databases {
		for _, t := range d.NoHistory {
			r.NoHistory = append(r.NoHistory, d.Name+"."+t)
		}
	}
	r.Masked = archive.MaskedColumns(m.Databases)
	return r
}

// registerJSON adds --json to a command that makes a backup.
func (g *globals) registerJSON(f *pflag.FlagSet) {
	options.Bind(f).Bool("json", &g.json)
}
