package s3test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// On a fresh machine scripts/minio.sh installs minio into $GOPATH/bin,
// which need not be on PATH, with GOBIN unset: the tests must find it there.
func TestFindMinioInGOPATH(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	gopath := t.TempDir()
	want := filepath.Join(gopath, "bin", "minio")
	if err := os.MkdirAll(filepath.Dir(want), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(want, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", filepath.Dir(goBin))
	t.Setenv("GOPATH", gopath)
	t.Setenv("GOBIN", "")
	if got, err := findMinio(); err != nil || got != want {
		t.Fatalf("findMinio() = %q, %v; want %q", got, err, want)
	}
}
