package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// restore --datadir restores beside the datadir and renames the result
// into place: an occupied datadir is refused, or with --force moved aside
// and kept; --start starts the server the given way, checks it runs on
// the datadir and reports; a server in use there is never replaced.
func TestRestoreIntoPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 2}); err != nil {
		t.Fatal(err)
	}
	want := checksums(t, src)
	repoDir := filepath.Join(t.TempDir(), "repo")
	run(t, append([]string{"backup", "--repo", repoDir, "--parallel", "2"}, sandboxConn(src)...)...).mustSucceed(t)
	base := t.TempDir()
	noStaging := func(dir string) {
		t.Helper()
		if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), ".*.backstream-new")); len(left) != 0 {
			t.Errorf("a staging directory was left: %v", left)
		}
	}

	// An occupied datadir is refused and left as it was.
	datadir := filepath.Join(base, "mysql")
	if err := os.MkdirAll(datadir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(datadir, "keep"), []byte("the old datadir"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, "restore", "--repo", repoDir, "--datadir", datadir)
	if r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), "datadir "+datadir+" is not empty") {
		t.Errorf("restore into an occupied datadir: exit %d, %v; want refused", r.code, r.err)
	}
	if b, err := os.ReadFile(filepath.Join(datadir, "keep")); err != nil || string(b) != "the old datadir" {
		t.Errorf("the refused datadir changed: %q, %v", b, err)
	}
	noStaging(datadir)
	if r := run(t, "restore", "--repo", repoDir, "--target-dir", t.TempDir(), "--start"); r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), "--start goes with --datadir") {
		t.Errorf("--start without --datadir: exit %d, %v", r.code, r.err)
	}

	// A symbolic link or a mount point cannot be renamed into place:
	// refused before anything is written.
	link := filepath.Join(base, "link")
	if err := os.Symlink(datadir, link); err != nil {
		t.Fatal(err)
	}
	if r := run(t, "restore", "--repo", repoDir, "--datadir", link, "--force"); r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), "is a symbolic link") {
		t.Errorf("restore --datadir onto a symbolic link: exit %d, %v", r.code, r.err)
	}
	switch {
	case os.Geteuid() == 0:
		mount := smallDisk(t, "16m")
		if r := run(t, "restore", "--repo", repoDir, "--datadir", mount, "--force"); r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), "is a mount point") {
			t.Errorf("restore --datadir onto a mount point: exit %d, %v", r.code, r.err)
		}
		noStaging(mount)
	case os.Getenv("CI") != "":
		t.Fatal("mounting a tmpfs needs root, which CI has")
	}

	// --force moves it aside; --start runs the given command, and the
	// server that answers is checked.
	sock := filepath.Join(t.TempDir(), "s.sock")
	pidFile := filepath.Join(base, "mariadbd.pid")
	start := fmt.Sprintf("mariadbd --no-defaults --datadir=%s --socket=%s --skip-networking --user=root --pid-file=%s --log-error=%s --tmpdir=%s --innodb-buffer-pool-size=64M >/dev/null 2>&1 &",
		datadir, sock, pidFile, filepath.Join(base, "error.log"), os.TempDir())
	t.Cleanup(func() { stopByPidFile(t, pidFile) })
	r = run(t, "restore", "--repo", repoDir, "--datadir", datadir, "--force", "--start="+start, "--socket", sock, "--user", "root", "--no-defaults").mustSucceed(t)
	noStaging(datadir)
	aside, _ := filepath.Glob(datadir + ".replaced-*")
	if len(aside) != 1 || !strings.Contains(r.stdout, "moved aside to "+aside[0]) {
		t.Fatalf("moved aside: %v; stdout %q", aside, r.stdout)
	}
	if b, err := os.ReadFile(filepath.Join(aside[0], "keep")); err != nil || string(b) != "the old datadir" {
		t.Errorf("what the datadir held, moved aside: %q, %v", b, err)
	}
	for _, w := range []string{"restored and prepared in place: " + datadir, "runs on " + datadir, "system tables OK", "biggest tables: sample."} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("restore --start printed %q, want %q in it", r.stdout, w)
		}
	}
	db, err := mariadb.Open(ctx, mariadb.Config{Socket: sock, User: "root"}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err := sandbox.ChecksumTables(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	compareChecksums(t, got, want)

	// A datadir a server runs on is never replaced, --force or not.
	r = run(t, "restore", "--repo", repoDir, "--datadir", datadir, "--force")
	if r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), "in use by a running process") {
		t.Errorf("restore over a running server's datadir: exit %d, %v; want refused", r.code, r.err)
	}

	// Another server answering where the started one should: nothing is
	// taken for checked.
	other := filepath.Join(base, "other")
	r = run(t, append([]string{"restore", "--repo", repoDir, "--datadir", other, "--start=true"}, sandboxConn(src)...)...)
	if r.code == ExitOK || !strings.Contains(fmt.Sprint(r.err), "not on the restored datadir "+other) {
		t.Errorf("--start with another server answering: exit %d, %v; want an error naming both datadirs", r.code, r.err)
	}

	// An absent datadir is made; a server starts on it as it is.
	fresh := filepath.Join(base, "fresh", "mysql")
	if err := os.MkdirAll(filepath.Dir(fresh), 0o700); err != nil {
		t.Fatal(err)
	}
	run(t, "restore", "--repo", repoDir, "--datadir", fresh).mustSucceed(t)
	compareChecksums(t, checksums(t, serverOn(t, fresh)), want)
}

// stopByPidFile kills the server whose pid the file holds and waits for it
// to end.
func stopByPidFile(t *testing.T, pidFile string) {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return
	}
	syscall.Kill(pid, syscall.SIGKILL)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			return
		}
	}
	t.Errorf("mariadbd %d did not end", pid)
}
