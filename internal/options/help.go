package options

import (
	"strings"
	"unicode"

	"github.com/spf13/pflag"
)

// FlagUsages is help's list of command's flags, its own (local) and
// those it inherits, under the headings of the table.
func FlagUsages(command string, local, inherited *pflag.FlagSet) string {
	sets := map[Group]*pflag.FlagSet{}
	add := func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		g := General
		if o, ok := Of(command, f.Name); ok {
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
	local.VisitAll(add)
	inherited.VisitAll(add)
	var b strings.Builder
	for _, g := range Groups {
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

// UsageTemplate is cobra's usage template, with the flags under the
// headings of the table (FlagUsages, registered as the template function
// groupedFlagUsages) instead of "Flags" and "Global Flags".
const UsageTemplate = `Usage:{{if .Runnable}}
  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} [command]{{end}}{{if gt (len .Aliases) 0}}

Aliases:
  {{.NameAndAliases}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}

Available Commands:{{range .Commands}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}
{{groupedFlagUsages .Name .LocalFlags .InheritedFlags}}{{if .HasAvailableSubCommands}}
Use "{{.CommandPath}} [command] --help" for more information about a command.{{end}}
`
