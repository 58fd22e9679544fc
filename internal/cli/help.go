package cli

import (
	"fmt"
	"sync"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/options"
)

// document gives c and every command under it the usage line and texts
// of options' table of commands, so that help has one source: a command
// states only its name (its Use), and one the table lacks, or with a
// usage line or texts of its own, is a programming error: it panics.
func document(c *cobra.Command) {
	d, ok := options.Doc(c.Name())
	if !ok || c.Use != d.Name() || c.Short != "" || c.Long != "" || c.Example != "" {
		panic(fmt.Sprintf("cli: %s's usage line and texts belong in options' table of commands, and only there", c.Name()))
	}
	c.Use, c.Short, c.Long, c.Example = d.Use, d.Short, d.Long, d.Example
	for _, sub := range c.Commands() {
		document(sub)
	}
}

// addTemplateFuncs registers options.FlagUsages with cobra's templates,
// which are process-wide, once: NewRoot runs again in every in-process
// test.
var addTemplateFuncs sync.Once
