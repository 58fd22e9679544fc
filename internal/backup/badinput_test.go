package backup_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// A mariabackup that is not there, or of another version than the
// server: the backup fails naming it (and what to do), and nothing is
// listed.
func TestBackupRefusesWrongMariabackup(t *testing.T) {
	t.Parallel()
	src := sandboxtest.Start(t, sandbox.Options{})
	fake := filepath.Join(t.TempDir(), "mariabackup")
	os.WriteFile(fake, []byte("#!/bin/sh\necho 'mariabackup based on MariaDB server 10.6.20-MariaDB debian-linux-gnu (x86_64)' >&2\n"), 0o755)
	cases := []struct {
		name, path string
		want       []string
	}{
		{"missing", "/nonexistent/mariabackup", []string{"/nonexistent/mariabackup"}},
		{"wrong version", fake, []string{"10.6", "10.11", "--mariabackup"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := usecasetest.NewLocalRepo(t)
			req := usecasetest.BackupOf(t, r, src)
			req.Physical.Mariabackup = tc.path
			_, err := backup.Run(context.Background(), req)
			if err == nil {
				t.Fatal("backup succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if n := len(usecasetest.List(t, r)); n != 0 {
				t.Errorf("%d backups listed after a failed backup", n)
			}
		})
	}
}

// A mariabackup that streams and then fails must not leave a committed
// backup, nor any stream objects.
func TestBackupFailingMariabackupLeavesNothing(t *testing.T) {
	t.Parallel()
	src := sandboxtest.Start(t, sandbox.Options{})
	real, err := exec.LookPath("mariabackup")
	if err != nil {
		t.Fatal(err)
	}
	// Passes --version through; for a backup, streams the real output, then exits 1.
	fake := filepath.Join(t.TempDir(), "mariabackup")
	script := "#!/bin/bash\nif [ \"$1\" = --version ]; then exec " + real + " --version; fi\n" + real + " \"$@\"\nexit 1\n"
	os.WriteFile(fake, []byte(script), 0o755)
	r := usecasetest.NewLocalRepo(t)
	req := usecasetest.BackupOf(t, r, src)
	req.Physical.Mariabackup = fake
	_, err = backup.Run(context.Background(), req)
	if !usecasetest.Failed(err) {
		t.Fatalf("%v; want a failure (exit 1)", err)
	}
	if !strings.Contains(err.Error(), "nothing was committed") {
		t.Errorf("error %q does not say that nothing was committed", err)
	}
	left, _ := filepath.Glob(filepath.Join(r.Location, "backups", "*"))
	if len(left) != 0 {
		t.Errorf("objects left behind: %v", left)
	}
}
