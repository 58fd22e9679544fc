package s3test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("GOPATH", gopath)
	t.Setenv("GOBIN", "")
	if got, err := findMinio(); err != nil || got != want {
		t.Fatalf("findMinio() = %q, %v; want %q", got, err, want)
	}
}

// scripts/minio.sh builds the pinned release into a cache outside the
// checkout, keyed by its version; the tests take it from there first.
func TestFindMinioInTheCache(t *testing.T) {
	cache := t.TempDir()
	want := filepath.Join(cache, "backstream-minio", PinnedMinio, "minio")
	if err := os.MkdirAll(filepath.Dir(want), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(want, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", cache)
	if got, err := findMinio(); err != nil || got != want {
		t.Fatalf("findMinio() = %q, %v; want %q", got, err, want)
	}
}

// The script and the tests name one MinIO release.
func TestPinnedMinioIsTheScripts(t *testing.T) {
	script, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "scripts", "minio.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if pin := "MINIO_MODULE=github.com/minio/minio@" + PinnedMinio + "\n"; !strings.Contains(string(script), pin) {
		t.Errorf("scripts/minio.sh does not pin %q: the script and PinnedMinio disagree", pin)
	}
}

// While scripts/test.sh builds MinIO beside the tests, findMinio waits
// for the build's lock and then finds what it built.
func TestFindMinioWaitsForTheBuild(t *testing.T) {
	cache := t.TempDir()
	want := filepath.Join(cache, "backstream-minio", PinnedMinio, "minio")
	lock := filepath.Join(t.TempDir(), "minio.lock")
	held, err := os.Create(lock)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("PATH", t.TempDir())
	t.Setenv(InstallingEnv, lock)
	built := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		err := os.MkdirAll(filepath.Dir(want), 0o755)
		if err == nil {
			err = os.WriteFile(want, []byte("#!/bin/sh\n"), 0o755)
		}
		held.Close() // the build ends: its lock goes
		built <- err
	}()
	got, err := findMinio()
	if err := <-built; err != nil {
		t.Fatal(err)
	}
	if err != nil || got != want {
		t.Fatalf("findMinio() = %q, %v; want %q", got, err, want)
	}
}

// Main sets the credentials at once: a test whose first S3 is a private
// server it started (StartPrivate) finds them before the shared server
// has started.
func TestMainSetsTheCredentialsBeforeTheStart(t *testing.T) {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL"} {
		t.Setenv(k, "") // restored after the test
	}
	m := Main()
	user, pass := processCredentials()
	if os.Getenv("AWS_ACCESS_KEY_ID") != user || os.Getenv("AWS_SECRET_ACCESS_KEY") != pass || user == "" {
		t.Errorf("after Main the environment has key %q, want %q, and the secret set", os.Getenv("AWS_ACCESS_KEY_ID"), user)
	}
	if os.Getenv("AWS_ENDPOINT_URL") != "" || m.Endpoint != "" {
		t.Errorf("Main started a server (endpoint %q, %q); it starts on the first bucket", os.Getenv("AWS_ENDPOINT_URL"), m.Endpoint)
	}
}
