package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The masked logical backup and its restores are internal/servercopy's
// TestMaskLogicalBackupAndRestore; here, that backup refuses a key file
// without rules (--logical --mask-key-file without --mask), a check of
// its flags made before anything is opened, and writes nothing.
func TestMaskKeyFileNeedsRules(t *testing.T) {
	t.Parallel()
	keyFile := filepath.Join(t.TempDir(), "mask.key")
	if err := os.WriteFile(keyFile, []byte("a key of more than sixteen bytes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	repoDir := newRepoDir(t)
	r := run(t, "backup", "--repo", repoDir, "--logical", "--mask-key-file", keyFile, "--socket", "/nonexistent.sock", "--user", "root", "--no-defaults")
	if want := "--mask-key-file needs --mask"; r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), want) {
		t.Errorf("backup --logical --mask-key-file: exit %d, %v; want exit %d saying %q", r.code, r.err, ExitUsage, want)
	}
	if entries, _ := os.ReadDir(filepath.Join(repoDir, "backups")); len(entries) > 0 {
		t.Fatalf("a refused backup left %d entries in the repository", len(entries))
	}
}

// Rules in option files: every mask line of a command's group adds one
// rule (a comma inside a fixed value included), and they add to those
// of the command line rather than giving way to them; the other
// repeatable options (mariabackup-option, rename-database) take a value
// per line too. A physical backup, and a point-in-time restore, refuse
// rules that come from a file.
func TestMaskOptionFiles(t *testing.T) {
	t.Parallel()
	cnf := filepath.Join(t.TempDir(), "masks.cnf")
	err := os.WriteFile(cnf, []byte(`[backstream-backup]
mask = shop.customers.email=email
mask = shop.customers.note=fixed:a, b
mariabackup-option = --databases=a,b
mariabackup-option = --no-lock
[backstream-restore]
mask = *.*.phone=phone
rename-database = a:b
rename-database = c:d
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	values := func(command string, args ...string) (*globals, func(flag string) []string) {
		t.Helper()
		cmd, _, err := NewRoot("test").Find([]string{command})
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.ParseFlags(append([]string{"--defaults-file", cnf}, args...)); err != nil {
			t.Fatal(err)
		}
		g := &globals{}
		if err := g.applyOptionFiles(cmd); err != nil {
			t.Fatal(err)
		}
		return g, func(flag string) []string {
			v, err := cmd.Flags().GetStringArray(flag)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	g, get := values("backup", "--mask", "shop.orders.email=email")
	if got, want := get("mask"), []string{"shop.orders.email=email", "shop.customers.email=email", "shop.customers.note=fixed:a, b"}; !slices.Equal(got, want) {
		t.Errorf("backup --mask with two mask lines in its group: %q, want %q", got, want)
	}
	if got, want := g.sources["mask"], "command line and "+cnf+":2 [backstream-backup], "+cnf+":3 [backstream-backup]"; got != want {
		t.Errorf("the rules' source: %q, want %q", got, want)
	}
	if got, want := get("mariabackup-option"), []string{"--databases=a,b", "--no-lock"}; !slices.Equal(got, want) {
		t.Errorf("mariabackup-option lines: %q, want %q", got, want)
	}
	_, get = values("backup", "--mariabackup-option", "--galera-info")
	if got, want := get("mariabackup-option"), []string{"--galera-info"}; !slices.Equal(got, want) {
		t.Errorf("mariabackup-option on the command line: %q, want %q (the command line beats the files)", got, want)
	}
	_, get = values("restore")
	if got := get("mask"); !slices.Equal(got, []string{"*.*.phone=phone"}) {
		t.Errorf("restore's rules: %q", got)
	}
	if got := get("rename-database"); !slices.Equal(got, []string{"a:b", "c:d"}) {
		t.Errorf("rename-database lines: %q", got)
	}

	repoDir := newRepoDir(t)
	r := run(t, "backup", "--defaults-file", cnf, "--repo", repoDir, "--socket", "/nonexistent.sock", "--user", "root")
	if r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), "--mask needs --logical") {
		t.Errorf("a physical backup with rules from an option file: exit %d, %v", r.code, r.err)
	}
	r = run(t, "restore", "--defaults-file", cnf, "--repo", repoDir, "--until", "end", "--target-dir", t.TempDir())
	if r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), "--mask masks the load of a logical backup") {
		t.Errorf("a point-in-time restore with rules from an option file: exit %d, %v", r.code, r.err)
	}
}
