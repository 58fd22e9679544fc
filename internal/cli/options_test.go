package cli

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/options"
)

// commands are root and every command under it, each with cobra's --help.
func commands(root *cobra.Command) map[string]*cobra.Command {
	all := map[string]*cobra.Command{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.InitDefaultHelpFlag()
		all[c.Name()] = c
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return all
}

// bound is option o bound as command takes it, to a flag set of its own:
// the flag the table makes.
func bound(command string, o options.Option) *pflag.Flag {
	fs := pflag.NewFlagSet(command, pflag.ContinueOnError)
	b := options.Bind(fs)
	switch o.Kind {
	case options.Bool:
		b.Bool(o.Name, new(bool))
	case options.Int:
		b.Int(o.Name, new(int))
	case options.Duration:
		b.Duration(o.Name, new(time.Duration))
	case options.Span:
		b.Span(o.Name, new(time.Duration))
	case options.Rate:
		b.Rate(o.Name, new(int64))
	case options.Size:
		if o.Default == nil { // use-memory: passed to mariabackup as given
			b.String(o.Name, new(string))
		} else {
			b.Size(o.Name, new(int64), 0)
		}
	case options.Repeatable, options.List:
		b.Strings(o.Name, new([]string))
	default:
		b.String(o.Name, new(string))
	}
	return fs.Lookup(o.Name)
}

// Every flag of every command is the options table's: bound from it
// with the table's kind, default and help, or, for the commands not
// bound from it yet, registered as it says. The table has no option that
// no command takes, each option can be set in option files under its
// name or says why not, config shows it, and docs/guide.md's option
// reference lists it.
func TestEveryOptionIsDefinedOnce(t *testing.T) {
	cmds := commands(NewRoot("test"))
	registered := map[string]bool{} // "command name"
	for name, c := range cmds {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			registered[name+" "+f.Name] = true
			o, ok := options.Of(name, f.Name)
			if !ok {
				t.Errorf("%s --%s is not in the options table (or not as an option of %s)", name, f.Name, name)
				return
			}
			if f.Name == "help" {
				return // cobra's own, with its own help
			}
			want := bound(name, o)
			if f.Value.Type() != want.Value.Type() || f.Usage != want.Usage || f.DefValue != want.DefValue ||
				f.Shorthand != want.Shorthand || f.NoOptDefVal != want.NoOptDefVal || f.Hidden != want.Hidden {
				t.Errorf("%s --%s: registered as (%s, -%s, default %q, bare %q, hidden %v, %q), the table says (%s, -%s, default %q, bare %q, hidden %v, %q)",
					name, f.Name, f.Value.Type(), f.Shorthand, f.DefValue, f.NoOptDefVal, f.Hidden, f.Usage,
					want.Value.Type(), want.Shorthand, want.DefValue, want.NoOptDefVal, want.Hidden, want.Usage)
			}
		})
	}
	for _, o := range options.All() {
		in := strings.Fields(o.In)
		if o.In == "" {
			in = []string{options.Root} // inherited by every command
		}
		for _, name := range in {
			if !registered[name+" "+o.Name] && !(o.Name == "help" && registered[options.Root+" help"]) {
				t.Errorf("the options table gives --%s to %s, which does not register it", o.Name, name)
			}
		}
		for _, v := range o.Variants {
			for _, name := range strings.Fields(v.In) {
				if !slices.Contains(in, name) {
					t.Errorf("--%s has a variant for %s, which does not take it", o.Name, name)
				}
			}
		}
	}
	checkOptionFilesSetEveryOption(t, cmds)
	checkConfigShowsEveryOption(t, cmds)
	checkGuideListsEveryOption(t)
}

// fileValue is a value of kind for an option file.
func fileValue(kind options.Kind) string {
	return cmp.Or(map[options.Kind]string{options.Bool: "true", options.Int: "3", options.Duration: "7s", options.List: "a,b",
		options.Size: "1GiB", options.Rate: "1MiB/s", options.Span: "2d"}[kind], "x")
}

// checkOptionFilesSetEveryOption gives every option of every command a
// value in the command's group of an option file: it is set under its
// name, unless the table says why option files cannot set it.
func checkOptionFilesSetEveryOption(t *testing.T, cmds map[string]*cobra.Command) {
	for _, env := range []string{"BACKSTREAM_REPO", "BACKSTREAM_MARIADB_PATH"} {
		t.Setenv(env, "")
	}
	for name := range cmds {
		if name == options.Root {
			continue // runs no operation: reads no option files
		}
		cmd, _, err := NewRoot("test").Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		cmd.InitDefaultHelpFlag() // as a run has it
		var lines strings.Builder
		for _, o := range options.All() {
			if o, ok := options.Of(name, o.Name); ok {
				fmt.Fprintf(&lines, "%s = %s\n", o.Name, fileValue(o.Kind))
			}
		}
		cnf := filepath.Join(t.TempDir(), "my.cnf")
		if err := os.WriteFile(cnf, []byte("[backstream-"+name+"]\n"+lines.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Flags().Set("defaults-file", cnf); err != nil { // config and sst parse no flags
			t.Fatal(err)
		}
		g := &globals{}
		if err := g.applyOptionFiles(cmd); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, o := range options.All() {
			o, ok := options.Of(name, o.Name)
			fromFile := strings.HasPrefix(g.sources[o.Name], cnf)
			switch {
			case ok && o.CommandLineOnly == "" && !fromFile:
				t.Errorf("%s: %s = %s in an option file did not set --%s", name, o.Name, fileValue(o.Kind), o.Name)
			case ok && o.CommandLineOnly != "" && fromFile:
				t.Errorf("%s: an option file set --%s, which the table says it cannot (%s)", name, o.Name, o.CommandLineOnly)
			}
		}
	}
}

// checkConfigShowsEveryOption runs config for every command: each option
// of the command is a line of its output, but those shown as the
// connection resolved, and help.
func checkConfigShowsEveryOption(t *testing.T, cmds map[string]*cobra.Command) {
	for name := range cmds {
		if name == options.Root || name == "config" {
			continue // config shows the options of a command that runs an operation
		}
		out := run(t, "config", name, "--no-defaults").mustSucceed(t).stdout
		for _, o := range options.All() {
			if o, ok := options.Of(name, o.Name); !ok || o.Hidden || o.CommandLineOnly == options.NotAnOption {
				continue
			}
			want := "\n--" + o.Name + " "
			if o.CommandLineOnly == options.ClientConnection {
				want = "\nconnection: "
			}
			if !strings.Contains(out, want) {
				t.Errorf("config %s does not show --%s (no %q):\n%s", name, o.Name, want[1:], out)
			}
		}
	}
}

// The option reference in docs/guide.md, made from the table.
const (
	referenceBegin = "<!-- option reference: generated by TestEveryOptionIsDefinedOnce, do not edit -->\n"
	referenceEnd   = "<!-- end of option reference -->\n"
)

// checkGuideListsEveryOption compares docs/guide.md's option reference
// with the one the table makes.
func checkGuideListsEveryOption(t *testing.T) {
	var b strings.Builder
	for _, o := range options.All() {
		if o.Hidden {
			continue
		}
		b.WriteString(referenceLine(o))
	}
	want := b.String()
	doc, err := os.ReadFile("../../docs/guide.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), referenceBegin)
	got, _, ok2 := strings.Cut(rest, referenceEnd)
	if !ok || !ok2 || got != want {
		t.Errorf("docs/guide.md's option reference is missing or out of date; between its markers put:\n%s%s%s", referenceBegin, want, referenceEnd)
	}
}

// referenceLine is o's entry in the option reference.
func referenceLine(o options.Option) string {
	name := "`--" + o.Name + "`"
	if o.Short != "" {
		name += ", `-" + o.Short + "`"
	}
	facts := []string{o.Kind.String()}
	if d := defaultText(o); d != "" {
		facts = append(facts, "default "+d)
	}
	if o.In == "" {
		facts = append(facts, "every command")
	} else {
		facts = append(facts, strings.ReplaceAll(o.In, " ", ", "))
	}
	if o.CommandLineOnly != "" {
		facts = append(facts, "command line only: "+o.CommandLineOnly)
	}
	if o.Secret {
		facts = append(facts, "a secret config masks")
	}
	if o.AddsToCommandLine {
		facts = append(facts, "option files add to the command line's")
	}
	esc := strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace
	line := fmt.Sprintf("- %s (%s): %s\n", name, strings.Join(facts, "; "), esc(o.Help))
	for _, v := range o.Variants {
		var own []string
		if v.Kind != 0 {
			own = append(own, v.Kind.String())
		}
		if v.Default != nil {
			own = append(own, "default "+defaultText(options.Option{Default: v.Default}))
		}
		if v.Help != "" {
			own = append(own, esc(v.Help))
		}
		line += fmt.Sprintf("  - %s: %s\n", strings.ReplaceAll(v.In, " ", ", "), strings.Join(own, "; "))
	}
	return line
}

// defaultText is o's default as the reference shows it.
func defaultText(o options.Option) string {
	switch d := o.Default.(type) {
	case nil:
		if o.Env != "" {
			return "$" + o.Env
		}
		return ""
	case string:
		return "`" + d + "`"
	case time.Duration:
		return "`" + d.String() + "`"
	case fmt.Stringer:
		return d.String()
	}
	return fmt.Sprintf("`%v`", o.Default)
}

// An alias (databases for database) is its option in option files too:
// a later line of a list replaces an earlier one's.
func TestOptionFileAliasIsItsOption(t *testing.T) {
	cnf := filepath.Join(t.TempDir(), "my.cnf")
	if err := os.WriteFile(cnf, []byte("[backstream-backup]\ndatabases = a,b\ndatabases = c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, _, err := NewRoot("test").Find([]string{"backup"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.ParseFlags([]string{"--defaults-file", cnf}); err != nil {
		t.Fatal(err)
	}
	if err := (&globals{}).applyOptionFiles(cmd); err != nil {
		t.Fatal(err)
	}
	if got, _ := cmd.Flags().GetStringSlice("database"); !slices.Equal(got, []string{"c"}) {
		t.Errorf("databases = a,b then databases = c: --database %q, want [c]", got)
	}
}
