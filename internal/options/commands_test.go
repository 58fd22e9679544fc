package options

import (
	"strings"
	"testing"
)

// Every command's help says what it does in a line and at length, and
// the table names each command once.
func TestEveryCommandIsDocumented(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Commands() {
		name := c.Name()
		if seen[name] {
			t.Errorf("%s is in the table of commands twice", name)
		}
		seen[name] = true
		if strings.TrimSpace(c.Short) == "" || strings.TrimSpace(c.Long) == "" {
			t.Errorf("%s lacks its Short or its Long", name)
		}
		if d, ok := Doc(name); !ok || d != c {
			t.Errorf("Doc(%q) = %+v, %v", name, d, ok)
		}
	}
	if !seen[Root] {
		t.Errorf("the table of commands lacks %s", Root)
	}
	if _, ok := Doc("no-such-command"); ok {
		t.Error("Doc found a command the table lacks")
	}
}

// The commands an option names are commands of the table.
func TestOptionsNameDocumentedCommands(t *testing.T) {
	for _, o := range All() {
		ins := []string{o.In}
		for _, v := range o.Variants {
			ins = append(ins, v.In)
		}
		for _, in := range ins {
			for _, name := range strings.Fields(in) {
				if _, ok := Doc(name); !ok {
					t.Errorf("--%s names command %q, which the table of commands lacks", o.Name, name)
				}
			}
		}
	}
}
