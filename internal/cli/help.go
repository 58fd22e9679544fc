package cli

import (
	"strings"
	"sync"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagGroups are the headings a command's help sorts its flags under, in
// order, with the flags each holds; a flag in none goes under the first.
var flagGroups = []struct {
	title string
	flags []string
}{
	{"Options", nil},
	{"Option files", []string{"defaults-file", "defaults-extra-file", "no-defaults", "defaults-group-suffix"}},
	{"Connection", append(append([]string(nil), connFlagNames...), "primary-host", "primary-port", "primary-user", "primary-defaults-file", "primary-ssl",
		"from", "from-user", "from-defaults-file", "to", "to-user", "to-defaults-file")},
	{"Repository", []string{"repo", "s3-endpoint", "s3-retry-window", "lock-wait"}},
	{"Performance and impact", []string{"parallel", "compress", "hash", "memory", "use-memory", "max-rate", "max-io",
		"limit-upload", "limit-download", "chunk-size", "work-dir", "no-sync"}},
	{"Filters", []string{"database", "exclude-database", "table", "exclude-table", "rename-database", "skip-views", "skip-triggers",
		"skip-routines", "skip-events", "skip-users", "users", "replace-users"}},
	{"Security", []string{"encrypt", "recipient-file", "identity-file", "passphrase-file", "token-file", "tls-cert", "tls-key", "tls-ca",
		"tls-server-name", "server-defaults-file"}},
	{"Output", []string{"progress", "progress-interval", "json", "metrics-file", "verbose"}},
}

// groupOf names the heading of flag name.
func groupOf(name string) string {
	for _, g := range flagGroups[1:] {
		for _, f := range g.flags {
			if f == name {
				return g.title
			}
		}
	}
	return flagGroups[0].title
}

// groupedFlagUsages prints c's flags, its own and those it inherits,
// under the headings of flagGroups.
func groupedFlagUsages(c *cobra.Command) string {
	sets := map[string]*pflag.FlagSet{}
	add := func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		g := groupOf(f.Name)
		if sets[g] == nil {
			sets[g] = pflag.NewFlagSet(g, pflag.ContinueOnError)
			sets[g].SortFlags = true
		}
		if sets[g].Lookup(f.Name) == nil {
			sets[g].AddFlag(shownFlag(f))
		}
	}
	c.LocalFlags().VisitAll(add)
	c.InheritedFlags().VisitAll(add)
	var b strings.Builder
	for _, g := range flagGroups {
		if fs := sets[g.title]; fs != nil {
			b.WriteString("\n" + g.title + ":\n" + fs.FlagUsages())
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
