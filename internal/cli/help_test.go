package cli

import (
	"regexp"
	"strings"
	"testing"
)

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
