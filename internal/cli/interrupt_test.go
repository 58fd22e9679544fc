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
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// built is the backstream binary that buildBinary made, in a directory
// TestMain removes.
var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// buildBinary builds backstream once per test binary run, for tests that
// need a real process (signals, exit codes).
func buildBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "backstream-cli-test-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "backstream")
		cmd := exec.Command("go", "build", "-o", built.bin, "github.com/backstream/backstream/cmd/backstream")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// Ctrl-C in the middle of a backup: exit 130, mariabackup gone, no manifest
// and no objects left in the repository.
func TestInterruptedBackupLeavesNothing(t *testing.T) {
	// Serial: it bounds how long backstream takes to exit after SIGINT, which the parallel tests' load would distort.
	bin := buildBinary(t)
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1, BigTableMB: 120}); err != nil {
		t.Fatal(err)
	}
	repoDir := newRepoDir(t)
	var stderr bytes.Buffer
	cmd := exec.Command(bin, append([]string{"backup", "--repo", repoDir, "--parallel", "2", "--progress", "none",
		"--max-io", "20"}, sandboxConn(src)...)...)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until stream data is arriving, then interrupt.
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if n := usecasetest.DirBytes(filepath.Join(repoDir, "backups")); n > 1<<20 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := usecasetest.DirBytes(filepath.Join(repoDir, "backups")); n <= 1<<20 {
		cmd.Process.Kill()
		t.Fatalf("no stream data after 60 s; stderr: %s", stderr.String())
	}
	children := mariabackupChildren(t, cmd.Process.Pid, src.Datadir)
	if len(children) != 1 {
		t.Fatalf("%d mariabackup children of backstream mid-backup, want 1", len(children))
	}
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		// SIGQUIT makes the Go runtime print every goroutine's stack:
		// where it hangs is the first thing to know.
		cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		t.Fatalf("backstream did not exit within 60 s of SIGINT; stderr (with its goroutines):\n%s", stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != ExitInterrupted {
		t.Fatalf("exit: %v, want code %d; stderr: %s", err, ExitInterrupted, stderr.String())
	}
	if left := usecasetest.DirBytes(filepath.Join(repoDir, "backups")); left != 0 {
		t.Errorf("%d bytes left under backups/ after the interrupt", left)
	}
	if !processGone(children[0]) {
		t.Errorf("mariabackup (pid %d) still running after backstream exited", children[0])
	}
	if !strings.Contains(stderr.String(), "nothing was committed") {
		t.Errorf("stderr does not say nothing was committed: %s", stderr.String())
	}
}
