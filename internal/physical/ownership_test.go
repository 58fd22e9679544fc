package physical

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func makeTree(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "datadir")
	for _, d := range []string{"db1", "db2/sub"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o777); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]int{"ibdata1": 1000, "db1/t.ibd": 300, "db1/t.frm": 20, "db2/sub/x": 0}
	for f, n := range files {
		if err := os.WriteFile(filepath.Join(dir, f), make([]byte, n), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "db1/t.frm"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestSetOwnershipModesOnly(t *testing.T) {
	dir := makeTree(t)
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("x"), 0o604); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := SetOwnership(dir, ""); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{
		"": DirMode, "db1": DirMode, "db2/sub": DirMode, "ibdata1": FileMode, "db1/t.frm": FileMode, "db2/sub/x": FileMode,
	} {
		fi, err := os.Stat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%q: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
	if fi, _ := os.Stat(outside); fi.Mode().Perm() != 0o604 {
		t.Errorf("the symlink target outside was chmodded: %v", fi.Mode())
	}
}

func TestSetOwnershipUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	u, err := user.Lookup("mysql")
	if err != nil {
		t.Fatalf("no mysql user (scripts/deps.sh creates it): %v", err)
	}
	dir := makeTree(t)
	if err := SetOwnership(dir, "mysql"); err != nil {
		t.Fatal(err)
	}
	checkOwnership(t, dir, u, 8)
	uid, _ := strconv.Atoi(u.Uid)
	if fi, _ := os.Stat(dir); int(fi.Sys().(*syscall.Stat_t).Uid) != uid {
		t.Errorf("top directory not chowned")
	}
}

func TestSetOwnershipErrors(t *testing.T) {
	dir := makeTree(t)
	err := SetOwnership(dir, "no-such-user-backstream")
	if err == nil || !strings.Contains(err.Error(), `no such user "no-such-user-backstream"`) {
		t.Errorf("unknown user: %v", err)
	}
	if err := SetOwnership(filepath.Join(dir, "missing"), ""); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing dir: %v", err)
	}
}

func TestDatadirSize(t *testing.T) {
	dir := makeTree(t)
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if got := DatadirSize(dir); got != 1320 {
		t.Errorf("DatadirSize = %d, want 1320", got)
	}
	if got := DatadirSize(filepath.Join(dir, "missing")); got != 0 {
		t.Errorf("DatadirSize of a missing dir = %d", got)
	}
}
