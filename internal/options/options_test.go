package options

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// panics reports whether f panics.
func panics(f func()) (did bool) {
	defer func() { did = recover() != nil }()
	f()
	return false
}

// Binding a name the table lacks, to a command that does not take it, or
// as the wrong kind is a programming error.
func TestBindPanicsOnMistakes(t *testing.T) {
	var s string
	var b bool
	for what, bind := range map[string]func(Flags){
		"unknown name":           func(f Flags) { f.String("no-such-option", &s) },
		"command without it":     func(f Flags) { f.Bool("incremental", &b) },
		"wrong kind":             func(f Flags) { f.Bool("compress", &b) },
		"a list bound as a text": func(f Flags) { f.String("database", &s) },
	} {
		if !panics(func() { bind(Bind(pflag.NewFlagSet("restore", pflag.ContinueOnError))) }) {
			t.Errorf("%s: bound without a panic", what)
		}
	}
	fs := pflag.NewFlagSet("backup", pflag.ContinueOnError)
	Bind(fs).String("compress", &s)
	if f := fs.Lookup("compress"); f == nil || f.DefValue != "zstd" || !strings.HasPrefix(f.Usage, "compression: ") {
		t.Errorf("backup --compress bound as %+v", f)
	}
}

// A command's variant gives it its own help, default or kind; the others
// keep the option's.
func TestOfAppliesVariants(t *testing.T) {
	backup, _ := Of("backup", "parallel")
	restore, _ := Of("restore", "parallel")
	if backup.Default != NumCPU || restore.Default != 0 || !strings.Contains(restore.Help, "decoding threads") || backup.Help == restore.Help {
		t.Errorf("--parallel: backup %v %q, restore %v %q", backup.Default, backup.Help, restore.Default, restore.Help)
	}
	copyTo, _ := Of("copy", "to")
	sendTo, _ := Of("send", "to")
	if copyTo.Kind != String || sendTo.Kind != Repeatable {
		t.Errorf("--to: copy %s, send %s", copyTo.Kind, sendTo.Kind)
	}
	if _, ok := Of("backup", "to"); ok {
		t.Error("backup takes --to")
	}
	if repo, ok := Of("cat", "repo"); !ok || repo.Group != Repository || repo.Env != "BACKSTREAM_REPO" {
		t.Errorf("cat --repo: %+v, %v", repo, ok)
	}
	if list, _ := Of("list", "json"); list.Group != Output {
		t.Errorf("list --json under %q", list.Group)
	}
}

// The table holds each name once, in order, and every option binds for
// every command that takes it: its default is of its kind.
func TestTableBindsForEveryCommand(t *testing.T) {
	for i, o := range table {
		if i > 0 && table[i-1].Name >= o.Name {
			t.Errorf("%q after %q: the table is by name, each once", o.Name, table[i-1].Name)
		}
		commands := strings.Fields(o.In)
		if o.In == "" {
			commands = []string{Root}
		}
		for _, v := range o.Variants {
			commands = append(commands, strings.Fields(v.In)...)
		}
		for _, c := range commands {
			if panics(func() { bindAny(pflag.NewFlagSet(c, pflag.ContinueOnError), c, o.Name) }) {
				t.Errorf("%s --%s does not bind", c, o.Name)
			}
		}
	}
}

// bindAny binds name as command takes it.
func bindAny(fs *pflag.FlagSet, command, name string) {
	o, _ := Of(command, name)
	f := Bind(fs)
	switch o.Kind {
	case Bool:
		f.Bool(name, new(bool))
	case Int:
		f.Int(name, new(int))
	case Duration:
		f.Duration(name, new(time.Duration))
	case Span:
		f.Span(name, new(time.Duration))
	case Rate:
		f.Rate(name, new(int64))
	case Size:
		if o.Default == nil { // use-memory: passed to mariabackup as given
			f.String(name, new(string))
		} else {
			f.Size(name, new(int64), 0)
		}
	case Repeatable, List:
		f.Strings(name, new([]string))
	default:
		f.String(name, new(string))
	}
}
