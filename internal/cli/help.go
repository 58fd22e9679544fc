package cli

import (
	"fmt"
	"strings"
	"sync"
	"unicode"

	"github.com/backstream/backstream/internal/options"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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

// groupedFlagUsages prints c's flags, its own and those it inherits,
// under the headings of the options table.
func groupedFlagUsages(c *cobra.Command) string {
	sets := map[options.Group]*pflag.FlagSet{}
	add := func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		g := options.General
		if o, ok := options.Of(c.Name(), f.Name); ok {
			g = o.Group
		}
		if sets[g] == nil {
			sets[g] = pflag.NewFlagSet(string(g), pflag.ContinueOnError)
			sets[g].SortFlags = true
		}
		if sets[g].Lookup(f.Name) == nil {
			sets[g].AddFlag(shownFlag(f))
		}
	}
	c.LocalFlags().VisitAll(add)
	c.InheritedFlags().VisitAll(add)
	var b strings.Builder
	for _, g := range options.Groups {
		if fs := sets[g]; fs != nil {
			b.WriteString("\n" + string(g) + ":\n" + fs.FlagUsages())
		}
	}
	return b.String()
}

// shownFlag is f as help shows it. A value a flag takes when given
// without one that is not printable (--password's request to prompt, a
// NUL and a word no password can be) is left out of the usage line, whose
// help says what the bare flag does.
func shownFlag(f *pflag.Flag) *pflag.Flag {
	if strings.IndexFunc(f.NoOptDefVal, func(r rune) bool { return !unicode.IsPrint(r) }) < 0 {
		return f
	}
	shown := *f
	shown.NoOptDefVal = ""
	return &shown
}

// addTemplateFuncs registers groupedFlagUsages with cobra's templates,
// which are process-wide, once: NewRoot runs again in every in-process
// test.
var addTemplateFuncs sync.Once

// usageTemplate is cobra's, with the flags under groupedFlagUsages'
// headings instead of "Flags" and "Global Flags".
const usageTemplate = `Usage:{{if .Runnable}}
  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} [command]{{end}}{{if gt (len .Aliases) 0}}

Aliases:
  {{.NameAndAliases}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}

Available Commands:{{range .Commands}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}
{{groupedFlagUsages .}}{{if .HasAvailableSubCommands}}
Use "{{.CommandPath}} [command] --help" for more information about a command.{{end}}
`
