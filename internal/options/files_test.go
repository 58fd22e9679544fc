package options

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// backupFlags is a flag set of backup with a few of its options bound,
// as the command binds them, and the files it reads chosen by
// --defaults-file.
type backupFlags struct {
	fs                  *pflag.FlagSet
	parallel            int
	databases, masks    []string
	passphrase, cnf     string
	noDefaults, encrypt bool
}

func newBackupFlags(t *testing.T, cnf string, args ...string) *backupFlags {
	t.Helper()
	b := &backupFlags{fs: pflag.NewFlagSet("backup", pflag.ContinueOnError)}
	o := Bind(b.fs)
	o.Int("parallel", &b.parallel)
	o.Strings("database", &b.databases)
	o.Strings("mask", &b.masks)
	o.String("passphrase-file", &b.passphrase)
	o.Bool("encrypt", &b.encrypt)
	o.String("defaults-file", &b.cnf)
	o.Bool("no-defaults", &b.noDefaults)
	if err := b.fs.Parse(append([]string{"--defaults-file", cnf}, args...)); err != nil {
		t.Fatal(err)
	}
	return b
}

func writeCnf(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "my.cnf")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The command's group beats [backstream], a profile's groups beat both,
// the command line beats the files, a list's later line replaces an
// earlier one's, and a repeatable option's lines add up, to the command
// line's values too when the option says so (mask). Sources says where
// each value came from, and File names the line of a usage error's flag.
func TestApplyFilesPrecedenceAndSources(t *testing.T) {
	cnf := writeCnf(t, `[backstream]
parallel = 3
database = a,b
loose-no-such-option = 1
target-dir = /only/for/restore
[backstream-backup]
parallel = 4
database = c
mask = db.t.c1:null
[backstream_prod]
mask = db.t.c2:null
passphrase-file = /secret
`)
	b := newBackupFlags(t, cnf, "--mask", "db.t.c0:null")
	sources, err := ApplyFiles("backup", b.fs, "_prod")
	if err != nil {
		t.Fatal(err)
	}
	if b.parallel != 4 || !slices.Equal(b.databases, []string{"c"}) || b.passphrase != "/secret" {
		t.Errorf("parallel %d, database %q, passphrase-file %q: want 4, [c], /secret", b.parallel, b.databases, b.passphrase)
	}
	if want := []string{"db.t.c0:null", "db.t.c1:null", "db.t.c2:null"}; !slices.Equal(b.masks, want) {
		t.Errorf("mask %q, want %q", b.masks, want)
	}
	for key, want := range map[string]string{
		"parallel":        cnf + ":7 [backstream-backup]",
		"database":        cnf + ":8 [backstream-backup]",
		"mask":            "command line and " + cnf + ":9 [backstream-backup], " + cnf + ":11 [backstream_prod]",
		"passphrase-file": cnf + ":12 [backstream_prod]",
	} {
		if sources[key] != want {
			t.Errorf("source of --%s: %q, want %q", key, sources[key], want)
		}
	}
	if got := sources.File(errorString("--parallel 4: too many")); got != cnf+":7 [backstream-backup]" {
		t.Errorf("File of a --parallel error: %q", got)
	}
	if got := sources.File(errorString("--defaults-file: no such file")); got != "" {
		t.Errorf("File of a flag set on the command line: %q, want none", got)
	}

	b = newBackupFlags(t, cnf, "--parallel", "9")
	if sources, err = ApplyFiles("backup", b.fs, ""); err != nil {
		t.Fatal(err)
	}
	if b.parallel != 9 || sources["parallel"] != "command line" || sources.File(errorString("--parallel 9: too many")) != "" {
		t.Errorf("--parallel 9 on the command line: %d from %q", b.parallel, sources["parallel"])
	}
}

// A key no command knows, one the command does not know in its own
// group, a bare key that needs a value and a bad value fail, naming the
// file and the line.
func TestApplyFilesRefusals(t *testing.T) {
	for content, want := range map[string]string{
		"[backstream]\nno-such-option = 1\n":     ":2 [backstream]: unknown option \"no-such-option\" (no backstream command has it)",
		"[backstream-backup]\ntarget-dir = /x\n": ":2 [backstream-backup]: unknown option \"target-dir\" for backup",
		"[backstream]\n\nparallel\n":             ":3 [backstream]: option \"parallel\" needs a value",
		"[backstream]\nparallel = many\n":        ":2 [backstream]: option \"parallel\": bad value \"many\": ",
		"[backstream]\nencrypt = maybe\n":        ":2 [backstream]: option \"encrypt\": bad value \"maybe\": ",
	} {
		cnf := writeCnf(t, content)
		_, err := ApplyFiles("backup", newBackupFlags(t, cnf).fs, "")
		if err == nil || !strings.HasPrefix(err.Error(), cnf+want) {
			t.Errorf("%q: %v, want %s%s...", content, err, cnf, want)
		}
	}
}

// config's table shows every option with its value and source, by name;
// a command without connection options ends there.
func TestWriteEffective(t *testing.T) {
	cnf := writeCnf(t, "[backstream]\nparallel = 3\npassphrase-file = /secret\n")
	b := newBackupFlags(t, cnf)
	sources, err := ApplyFiles("backup", b.fs, "")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := sources.WriteEffective(&out, "backup", b.fs); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	want := []string{
		"OPTION VALUE FROM",
		"--database [] default",
		"--defaults-file " + cnf + " command line",
		"--encrypt false default",
		"--mask [] default",
		"--no-defaults false default",
		"--parallel 3 " + cnf + ":2 [backstream]",
		"--passphrase-file /secret " + cnf + ":3 [backstream]",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("config's table:\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }
