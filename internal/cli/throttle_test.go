package cli

import (
	"bytes"
	"context"
	"errors"
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

// Limits given wrongly are usage errors that name the flag, before any
// server or repository is touched.
func TestMaxRateUsageErrors(t *testing.T) {
	t.Parallel()
	repoDir := filepath.Join(t.TempDir(), "repo") // never created: every backup here is refused
	conn := []string{"--socket", filepath.Join(t.TempDir(), "no.sock"), "--user", "root", "--no-defaults"}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--max-rate", "fast"}, []string{"--max-rate", `"fast"`}},
		{[]string{"--max-rate", "200MiB/h"}, []string{"--max-rate", "200MiB/h"}},
		{[]string{"--max-rate", "-5MiB/s"}, []string{"--max-rate", "-5MiB/s"}},
		{[]string{"--max-rate", "200"}, []string{"--max-rate", `"200"`, "64KiB/s"}},
		{[]string{"--max-io", "-1"}, []string{"--max-io", "-1"}},
		{[]string{"--max-io", "many"}, []string{"max-io", "many"}},
		{[]string{"--logical", "--max-io", "100"}, []string{"--max-io", "--max-rate"}},
	} {
		for _, cmd := range []string{"backup", "send"} {
			if cmd == "send" && tc.args[0] == "--logical" {
				continue
			}
			dest := []string{"--repo", repoDir}
			if cmd == "send" {
				dest = []string{"--to", "127.0.0.1:1"}
			}
			r := run(t, append(append(append([]string{cmd}, dest...), tc.args...), conn...)...)
			if r.code != ExitUsage {
				t.Errorf("%s %v: exit %d (%v), want %d", cmd, tc.args, r.code, r.err, ExitUsage)
				continue
			}
			for _, w := range tc.want {
				if !strings.Contains(r.err.Error(), w) {
					t.Errorf("%s %v: error %q does not name %s", cmd, tc.args, r.err, w)
				}
			}
		}
	}
	if _, err := os.Stat(repoDir); !os.IsNotExist(err) {
		t.Errorf("a refused backup created its repository (%v)", err)
	}
}

// Ctrl-C while a throttled backup waits on its budget: exit 130 at once, no
// child left and nothing in the repository, physical or logical.
func TestInterruptedThrottledBackup(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1, BigTableMB: 24}); err != nil {
		t.Fatal(err)
	}
	// At 1MiB/s either backup would run for half a minute or more.
	for _, kind := range []struct {
		name string
		args []string
	}{{"physical", nil}, {"logical", []string{"--logical", "--chunk-size", "256KiB"}}} {
		t.Run(kind.name, func(t *testing.T) {
			repoDir := newRepoDir(t)
			var stderr bytes.Buffer
			args := append(append([]string{"backup", "--repo", repoDir, "--parallel", "2", "--progress", "none", "--max-rate", "1MiB/s"}, kind.args...), sandboxConn(src)...)
			cmd := exec.Command(bin, args...)
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait until stream data is arriving, then interrupt.
			for deadline := time.Now().Add(time.Minute); usecasetest.DirBytes(filepath.Join(repoDir, "backups")) < 64<<10; time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("no stream data after a minute; stderr: %s", stderr.String())
				}
			}
			var children []int
			if kind.name == "physical" {
				if children = mariabackupChildren(t, cmd.Process.Pid, src.Datadir); len(children) != 1 {
					cmd.Process.Kill()
					t.Fatalf("%d mariabackup children of backstream mid-backup, want 1", len(children))
				}
			}
			cmd.Process.Signal(syscall.SIGINT)
			interrupted := time.Now()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				cmd.Process.Kill()
				t.Fatal("backstream did not exit within a minute of SIGINT")
			}
			t.Logf("exited %v after SIGINT", time.Since(interrupted).Round(time.Millisecond))
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != ExitInterrupted {
				t.Fatalf("exit: %v, want code %d; stderr: %s", err, ExitInterrupted, stderr.String())
			}
			if left := usecasetest.DirBytes(filepath.Join(repoDir, "backups")); left != 0 {
				t.Errorf("%d bytes left under backups/ after the interrupt", left)
			}
			for _, pid := range children {
				if !processGone(pid) {
					t.Errorf("mariabackup (pid %d) still running after backstream exited", pid)
				}
			}
		})
	}
}
