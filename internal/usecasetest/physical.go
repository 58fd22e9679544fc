package usecasetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/restoretest"
	"github.com/backstream/backstream/internal/sandbox"
)

// RequireVersion fails the test unless s is MariaDB version (major.minor).
func RequireVersion(t testing.TB, s *sandbox.Server, version string) {
	t.Helper()
	got, err := s.Version(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, version+".") {
		t.Fatalf("server is MariaDB %s, want %s", got, version)
	}
}

// TableOf is the restore test's result of table name.
func TableOf(t testing.TB, rep *restoretest.Report, name string) restoretest.Table {
	t.Helper()
	for _, tb := range rep.Tables {
		if tb.Name == name {
			return tb
		}
	}
	t.Fatalf("the report has no table %s: %+v", name, rep.Tables)
	return restoretest.Table{}
}

// GatedMariabackup returns a mariabackup for --mariabackup that waits, when
// its arguments hold mode (--backup, --prepare), until open is called: a
// backup that holds its lock, or a prepare that stays visible, for as long
// as a test needs, however fast or loaded the machine.
func GatedMariabackup(t *testing.T, mode string) (binary string, open func()) {
	t.Helper()
	real, err := exec.LookPath("mariabackup")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gate := filepath.Join(dir, "open")
	binary = filepath.Join(dir, "mariabackup")
	script := fmt.Sprintf("#!/bin/sh\ncase \" $* \" in *\" %s \"*) while [ ! -e %q ]; do sleep 0.05; done;; esac\nexec %q \"$@\"\n", mode, gate, real)
	if err := os.WriteFile(binary, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return binary, func() {
		if err := os.WriteFile(gate, nil, 0o600); err != nil {
			t.Error(err)
		}
	}
}

// RestoreTest runs the restore test of backup ref of r (restoretest.Prove)
// as `verify ref --restore-test` does with the user's defaults, the
// repository locked for it, and returns its report and the error the
// command exits with: what kept the test from running (the report is then
// nil), else the Failure of a report that did not pass.
func RestoreTest(t testing.TB, r Repo, ref string) (*restoretest.Report, error) {
	t.Helper()
	return RestoreTestWith(t, r, ref, nil)
}
