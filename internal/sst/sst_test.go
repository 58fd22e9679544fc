package sst

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A transfer that fails says why in the server's error log the way the
// stock scripts do (WSREP_SST: [ERROR]), and returns the same error.
func TestRunLogsItsFailure(t *testing.T) {
	cnf := filepath.Join(t.TempDir(), "node.cnf")
	if err := os.WriteFile(cnf, []byte("[sst]\nparallel = none\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	err := Run(context.Background(), Request{Role: Joiner, DefaultsFile: cnf, Datadir: t.TempDir()}, Options{Stdout: &bytes.Buffer{}, Log: &log})
	if err == nil {
		t.Fatal("a joiner with a bad setting ran")
	}
	if got := log.String(); !strings.HasPrefix(got, "WSREP_SST: [ERROR] backstream: ") || !strings.Contains(got, err.Error()) {
		t.Errorf("the error log has %q; want the error %q as WSREP_SST: [ERROR] backstream: ...", got, err)
	}
}
