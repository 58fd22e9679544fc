package mariadb

import (
	"slices"
	"strings"
	"testing"
)

func TestShellWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"mariadbd --defaults-file=/etc/my.cnf &", []string{"mariadbd", "--defaults-file=/etc/my.cnf", "&"}},
		{`sudo -u mysql mariadbd '--log-bin=/a b/bin' --x="q\"uote" --y=\ z`, []string{"sudo", "-u", "mysql", "mariadbd", "--log-bin=/a b/bin", `--x=q"uote`, "--y= z"}},
		{`a"b c"'d e'f ""`, []string{"ab cd ef", ""}},
		{"  ", nil},
	} {
		got, err := ShellWords(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ShellWords(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"mariadbd '--log-bin=x", `mariadbd "--log-bin=x`, `x "a\"`} {
		if _, err := ShellWords(bad); err == nil {
			t.Errorf("ShellWords(%q): an unterminated quote was accepted", bad)
		}
	}
}

func TestStartCommandSource(t *testing.T) {
	src, err := StartCommandSource(`mariadbd --defaults-file=/etc/a.cnf --defaults-extra-file='/etc/b c.cnf' --log-bin=x -u mysql &`, "the --start command")
	if err != nil {
		t.Fatal(err)
	}
	if src.DefaultsFile != "/etc/a.cnf" || src.DefaultsExtraFile != "/etc/b c.cnf" || src.NoDefaults ||
		!slices.Equal(src.Args, []string{"--log-bin=x"}) || src.ArgsFrom != "the --start command" {
		t.Errorf("StartCommandSource: %+v", src)
	}
	if src, _ := StartCommandSource("mariadbd --no-defaults", ""); !src.NoDefaults {
		t.Errorf("--no-defaults not seen: %+v", src)
	}
	if _, err := StartCommandSource("mariadbd 'x", ""); err == nil || !strings.Contains(err.Error(), "unterminated quote") {
		t.Errorf("an unterminated quote: %v", err)
	}
}

// FuzzShellWords: any input splits or is refused, never panics, and a
// command rebuilt from the words by single-quoting each splits back into
// the same words.
func FuzzShellWords(f *testing.F) {
	for _, s := range []string{"mariadbd --x=1 &", `a "b\"c" 'd'`, `\`, `"`, "'"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := ShellWords(s)
		if err != nil {
			return
		}
		var quoted []string
		for _, w := range words {
			if strings.Contains(w, "'") {
				return
			}
			quoted = append(quoted, "'"+w+"'")
		}
		again, err := ShellWords(strings.Join(quoted, " "))
		if err != nil || !slices.Equal(again, words) {
			t.Errorf("ShellWords(%q) = %q; quoted back it splits into %q, %v", s, words, again, err)
		}
	})
}
