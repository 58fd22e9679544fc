package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/usecasetest"
)

// Mistakes in how backstream is called exit 2, whoever finds them: an
// unknown command (with a suggestion when one is close), a stray argument,
// an unknown flag. Without arguments the help is printed.
func TestUsageMistakesExit2(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"nosuch"}, `unknown command "nosuch" for "backstream"`},
		{[]string{"backp"}, "did you mean backup?"},
		{[]string{"token", "extra"}, `unknown command "extra" for "backstream token"`},
		{[]string{"list", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"binlog", "--repo", t.TempDir(), "--no-defaults", "--ssl", "--skip-ssl"}, "--ssl and --skip-ssl contradict each other"},
	} {
		r := run(t, c.args...)
		if r.code != ExitUsage || r.err == nil || !strings.Contains(r.err.Error(), c.want) {
			t.Errorf("%v: exit %d, %v; want %d and %q", c.args, r.code, r.err, ExitUsage, c.want)
		}
	}
	// Encryption flags that cannot work, and options of one kind of backup
	// given to the other, are refused, and nothing is created.
	pub, _ := usecasetest.AgeKeys(t)
	repoDir := filepath.Join(t.TempDir(), "repo")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--encrypt"}, "--encrypt needs --recipient-file"},
		{[]string{"--recipient-file", pub}, "--recipient-file needs --encrypt"},
		{[]string{"--parallel", "0"}, "--parallel must be at least 1"},
		{[]string{"--logical", "--max-io", "0"}, "--max-io is mariabackup's I/O limit"},
		{[]string{"--logical", "--checkpoint"}, "--checkpoint is for physical backups"},
		{[]string{"--logical", "--incremental"}, "--incremental is for physical backups"},
		{[]string{"--chunk-size", "16MiB"}, "--chunk-size needs --logical"},
		{[]string{"--databases", "shop"}, "--database needs --logical"},
		{[]string{"--full-every", "7d"}, "--full-every needs --incremental"},
	} {
		r := run(t, append([]string{"backup", "--repo", repoDir, "--socket", "/nonexistent.sock"}, c.args...)...)
		if r.code != ExitUsage || r.err == nil || !strings.Contains(r.err.Error(), c.want) {
			t.Errorf("backup %v: exit %d, %v; want %d and %q", c.args, r.code, r.err, ExitUsage, c.want)
		}
		if _, err := os.Stat(repoDir); err == nil {
			t.Errorf("backup %v created the repository %s", c.args, repoDir)
		}
	}
	if r := run(t); r.code != ExitOK || !strings.Contains(r.stdout, "Available Commands") {
		t.Errorf("no arguments: exit %d, %v, output %.80q", r.code, r.err, r.stdout)
	}
}
