// Package sandboxtest is the test kit around package sandbox: a server
// bound to a test's lifetime, and the schema and comparison helpers that
// tests of logical backups use (the fidelity schema, object and account
// descriptions).
//
// Only _test.go files import it: it imports testing, which must never reach
// the shipped binary (cmd/backstream's tests check that). What the binary
// itself needs from a throwaway server (starting, stopping, sample data,
// table checksums) belongs in package sandbox, not here.
package sandboxtest

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/sandbox"
)

// errorLogTailLines is how much of a failed test's server error log is shown.
const errorLogTailLines = 30

// Start starts a server for a test and closes it in t.Cleanup; if the test
// failed, the tail of the error log is logged first. It calls t.Fatal when
// the server does not start.
func Start(t testing.TB, opt sandbox.Options) *sandbox.Server {
	t.Helper()
	s, err := sandbox.Start(context.Background(), opt)
	if err != nil {
		t.Fatalf("start sandbox server: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("sandbox error log %s (tail):\n%s", s.ErrorLog, s.ErrorLogTail(errorLogTailLines))
		}
		if err := s.Close(); err != nil {
			t.Errorf("close sandbox server: %v", err)
		}
	})
	return s
}

// quoteIdent quotes a MariaDB identifier with backticks.
func quoteIdent(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

// KillByPidFile kills (SIGKILL) the server whose pid the file holds, for
// servers a test started itself rather than with Start, and waits until
// it is gone; a missing or unreadable pid file is nothing to kill.
func KillByPidFile(t testing.TB, pidFile string) {
	t.Helper()
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
