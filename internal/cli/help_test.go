package cli

import (
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/options"
)

// Every command's usage line and texts are those of options' table of
// commands, which documents no command backstream lacks; a command that
// brings a usage line or texts of its own is refused.
func TestHelpTextsComeFromTheTable(t *testing.T) {
	commands := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		commands[c.Name()] = true
		got := options.Command{Use: c.Use, Short: c.Short, Long: c.Long, Example: c.Example}
		if d, ok := options.Doc(c.Name()); !ok || got != d {
			t.Errorf("%s's help is not the table's: %+v", c.Name(), got)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRoot("test"))
	for _, d := range options.Commands() {
		if !commands[d.Name()] {
			t.Errorf("the table of commands documents %s, which backstream lacks", d.Name())
		}
	}
	for what, c := range map[string]*cobra.Command{
		"an inline Long":         {Use: "restore", Long: "restore restores"},
		"an inline Short":        {Use: "restore", Short: "Restore"},
		"an inline Example":      {Use: "restore", Example: "  backstream restore latest"},
		"its own usage line":     {Use: "restore [ID|latest]"},
		"a name the table lacks": {Use: "no-such-command"},
	} {
		if !panics(func() { document(c) }) {
			t.Errorf("a command with %s was documented", what)
		}
	}
}

// panics reports whether f panics.
func panics(f func()) (did bool) {
	defer func() { did = recover() != nil }()
	f()
	return false
}

// Every command's help teaches by example, and every example names
// flags the command has.
func TestEveryCommandHasExamples(t *testing.T) {
	root := NewRoot("test")
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s has no Examples section", c.Name())
			continue
		}
		for _, line := range strings.Split(c.Example, "\n") {
			line, _, _ = strings.Cut(line, "#")
			for _, w := range strings.Fields(line) {
				name, ok := strings.CutPrefix(w, "--")
				if !ok {
					continue
				}
				name, _, _ = strings.Cut(name, "=")
				if c.Flags().Lookup(name) == nil && c.InheritedFlags().Lookup(name) == nil && root.PersistentFlags().Lookup(name) == nil {
					t.Errorf("%s's example %q names --%s, which it does not have", c.Name(), strings.TrimSpace(line), name)
				}
			}
		}
	}
}

// A command's help sorts its flags under headings.
func TestHelpGroupsFlags(t *testing.T) {
	out := run(t, "backup", "--help").mustSucceed(t).stdout
	last := -1
	for _, h := range []string{"Options:", "Option files:", "Connection:", "Repository:", "Performance and impact:", "Filters:", "Security:", "Output:"} {
		i := strings.Index(out, "\n"+h+"\n")
		if i < 0 || i < last {
			t.Errorf("backup --help: heading %q missing or out of order", h)
		}
		last = i
	}
	for _, f := range []string{"socket", "parallel", "encrypt", "repo", "json", "database"} {
		line := regexp.MustCompile(`(?m)^ +(-[A-Za-z], )?--` + f + ` `)
		if n := len(line.FindAllString(out, -1)); n != 1 {
			t.Errorf("backup --help lists --%s %d times", f, n)
		}
	}
}
