package cli

import (
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
