package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --mariadb-path comes from the command line, else
// BACKSTREAM_MARIADB_PATH, else the option files' mariadb-path, as config
// shows. Not parallel: t.Setenv.
func TestMariadbPathOption(t *testing.T) {
	cnf := filepath.Join(t.TempDir(), "my.cnf")
	if err := os.WriteFile(cnf, []byte("[backstream]\nmariadb-path = /usr:/usr/local/bin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	line := func(args ...string) string {
		t.Helper()
		out := run(t, append([]string{"config", "restore", "--defaults-file", cnf}, args...)...).mustSucceed(t).stdout
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "--mariadb-path ") {
				return strings.Join(strings.Fields(l), " ")
			}
		}
		t.Fatalf("config restore shows no --mariadb-path:\n%s", out)
		return ""
	}
	t.Setenv("BACKSTREAM_MARIADB_PATH", "")
	if got, want := line(), "--mariadb-path /usr:/usr/local/bin "+cnf+":2 [backstream]"; got != want {
		t.Errorf("from the file: %q, want %q", got, want)
	}
	if got, want := line("--mariadb-path", "/usr/sbin"), "--mariadb-path /usr/sbin command line"; got != want {
		t.Errorf("on the command line: %q, want %q", got, want)
	}
	t.Setenv("BACKSTREAM_MARIADB_PATH", "/usr/local")
	if got, want := line(), "--mariadb-path /usr/local $BACKSTREAM_MARIADB_PATH"; got != want {
		t.Errorf("from the environment: %q, want %q", got, want)
	}
	// A directory that is not there is a mistake, said at once.
	r := run(t, "version", "--mariadb-path", "/usr:/no/such/mariadb")
	if r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), "/no/such/mariadb is not a directory") {
		t.Errorf("--mariadb-path with a missing directory: exit %d, %v", r.code, r.err)
	}
}
