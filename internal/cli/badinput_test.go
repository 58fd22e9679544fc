package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// smallBackup backs up a sandbox with a little data into a local repo.
func smallBackup(t *testing.T) (src *sandbox.Server, repoDir, id string) {
	t.Helper()
	repoDir = newRepoDir(t)
	src, id = smallBackupInto(t, repoDir)
	return src, repoDir, id
}

// smallBackupInto backs up a sandbox with a little data into location.
func smallBackupInto(t *testing.T, location string) (*sandbox.Server, string) {
	t.Helper()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 2, BigTableMB: 8}); err != nil {
		t.Fatal(err)
	}
	run(t, append([]string{"backup", "--repo", location, "--parallel", "2"}, sandboxConn(src)...)...).mustSucceed(t)
	return src, backupListing(t, location)[0].ID
}

func TestDamagedBackupIsRefused(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, repo testRepo) {
		_, id := smallBackupInto(t, repo.Location)
		object := "backups/" + id + "/streams/00001.xbs.zst"
		original := repo.Read(t, object)
		cases := []struct {
			name   string
			damage func([]byte) []byte
			want   []string
		}{
			{"flipped byte", func(b []byte) []byte {
				b = bytes.Clone(b)
				b[len(b)/2] ^= 1
				return b
			}, []string{"00001.xbs.zst", "frame", "checksum mismatch"}},
			{"truncated object", func(b []byte) []byte { return b[:len(b)*2/3] }, []string{"00001.xbs.zst", "frame", "truncated"}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				repo.Write(t, object, tc.damage(original))
				defer repo.Write(t, object, original)
				for _, cmd := range [][]string{
					{"verify", id, "--repo", repo.Location},
					{"restore", id, "--repo", repo.Location, "--target-dir", filepath.Join(t.TempDir(), "target")},
				} {
					r := run(t, cmd...)
					if r.code != ExitCorrupt {
						t.Errorf("%s: exit %d (%v), want %d", cmd[0], r.code, r.err, ExitCorrupt)
					}
					for _, w := range append(tc.want, id) {
						if r.err == nil || !strings.Contains(r.err.Error(), w) {
							t.Errorf("%s: error %v does not name %q", cmd[0], r.err, w)
						}
					}
					if cmd[0] == "restore" {
						if _, err := os.Stat(cmd[len(cmd)-1]); !os.IsNotExist(err) {
							t.Errorf("restore left its target behind after failing (%v)", err)
						}
					}
				}
			})
		}
		// Undamaged again, it verifies.
		run(t, "verify", id, "--repo", repo.Location).mustSucceed(t)
	})
}

func TestRestoreRefusesNonEmptyTarget(t *testing.T) {
	t.Parallel()
	_, repoDir, id := smallBackup(t)
	target := t.TempDir()
	keep := filepath.Join(target, "precious")
	os.WriteFile(keep, []byte("do not touch"), 0o600)
	r := run(t, "restore", id, "--repo", repoDir, "--target-dir", target)
	if r.code == ExitOK || !strings.Contains(r.err.Error(), "not empty") {
		t.Fatalf("exit %d, err %v: want a refusal naming the non-empty target", r.code, r.err)
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "do not touch" {
		t.Errorf("the existing file was touched: %q %v", b, err)
	}
}

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
			repoDir := newRepoDir(t)
			r := run(t, append([]string{"backup", "--repo", repoDir, "--mariabackup", tc.path}, sandboxConn(src)...)...)
			if r.code == ExitOK {
				t.Fatal("backup succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(r.err.Error(), w) {
					t.Errorf("error %q does not mention %q", r.err, w)
				}
			}
			if n := len(backupListing(t, repoDir)); n != 0 {
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
	repoDir := newRepoDir(t)
	r := run(t, append([]string{"backup", "--repo", repoDir, "--mariabackup", fake}, sandboxConn(src)...)...)
	if r.code != ExitFailure {
		t.Fatalf("exit %d (%v), want %d", r.code, r.err, ExitFailure)
	}
	if !strings.Contains(r.err.Error(), "nothing was committed") {
		t.Errorf("error %q does not say that nothing was committed", r.err)
	}
	left, _ := filepath.Glob(filepath.Join(repoDir, "backups", "*"))
	if len(left) != 0 {
		t.Errorf("objects left behind: %v", left)
	}
}

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
