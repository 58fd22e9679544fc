package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// leftInTmp names what backstream left in a TMPDIR: anything named
// backstream-*.
func leftInTmp(t *testing.T, tmp string) []string {
	t.Helper()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "backstream-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// Temporary files (mariabackup's option file with the password, its log
// and work directories) leave nothing in TMPDIR after a backup that
// succeeds, one that fails, and one interrupted with SIGINT or SIGTERM; what
// a SIGKILLed backup left is swept by the next command run with the same
// TMPDIR, while the directory of a process that still runs is kept.
func TestTempFilesLeftBehind(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1}); err != nil {
		t.Fatal(err)
	}
	repoDir := newRepoDir(t)
	tmp := t.TempDir()
	start := func(args ...string) (*exec.Cmd, *bytes.Buffer) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stderr, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &stderr
	}
	backup := func(mariabackup string) []string {
		return append([]string{"backup", "--repo", repoDir, "--parallel", "1", "--progress", "none", "--mariabackup", mariabackup}, sandboxConn(src)...)
	}
	real, err := exec.LookPath("mariabackup")
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string) {
		t.Helper()
		if left := leftInTmp(t, tmp); len(left) > 0 {
			t.Errorf("after %s, TMPDIR holds %v", what, left)
		}
	}

	// Succeeds.
	cmd, out := start(backup(real)...)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("backup: %v\n%s", err, out)
	}
	check("a backup that succeeded")

	// Fails: a mariabackup that, once backstream's temporary files exist,
	// records them and exits 1.
	failing := filepath.Join(t.TempDir(), "mariabackup")
	seen := filepath.Join(t.TempDir(), "seen")
	script := fmt.Sprintf("#!/bin/sh\ncase \" $* \" in *\" --backup \"*) ls -d \"$TMPDIR\"/backstream-* > %q; exit 1;; esac\nexec %q \"$@\"\n", seen, real)
	if err := os.WriteFile(failing, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd, out = start(backup(failing)...)
	if err := cmd.Wait(); err == nil {
		t.Fatalf("backup with a failing mariabackup succeeded:\n%s", out)
	}
	if data, err := os.ReadFile(seen); err != nil || len(bytes.TrimSpace(data)) == 0 {
		t.Errorf("the failing mariabackup saw no temporary directory of backstream (%v): the check proves nothing", err)
	}
	check("a backup that failed")

	// Held mariabackup: interrupted, then killed.
	held := func(what string) (*exec.Cmd, *bytes.Buffer, func()) {
		t.Helper()
		gated, open := usecasetest.GatedMariabackup(t, "--backup")
		cmd, out := start(backup(gated)...)
		w := watchProcs(cmd.Process.Pid, bin, nil)
		defer w.finish()
		for deadline := time.Now().Add(2 * time.Minute); !w.saw("--backup", "dash", "sh", "bash"); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				open()
				cmd.Wait()
				t.Fatalf("%s: no mariabackup --backup in 2 minutes:\n%s", what, out)
			}
		}
		if len(leftInTmp(t, tmp)) == 0 {
			t.Errorf("%s: no temporary directory while mariabackup runs: the check proves nothing", what)
		}
		return cmd, out, open
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		cmd, out, open := held(sig.String())
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		open()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != ExitInterrupted {
			t.Errorf("backup sent %v: %v, want exit %d\n%s", sig, err, ExitInterrupted, out)
		}
		check("a backup interrupted with " + sig.String())
	}

	cmd, _, open := held("SIGKILL")
	live := filepath.Join(tmp, fmt.Sprintf("backstream-%d-0-live", os.Getpid())) // a running process's: kept
	if err := os.Mkdir(live, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	open() // the orphaned mariabackup ends on its closed pipe
	left := leftInTmp(t, tmp)
	if len(left) < 2 {
		t.Errorf("after SIGKILL, TMPDIR holds %v: want the killed backup's directory beside %s", left, filepath.Base(live))
	}
	cmd, out = start("list", "--repo", repoDir)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("list: %v\n%s", err, out)
	}
	if left := leftInTmp(t, tmp); len(left) != 1 || left[0] != filepath.Base(live) {
		t.Errorf("after a SIGKILLed backup and a list, TMPDIR holds %v, want only %s", left, filepath.Base(live))
	}
}
