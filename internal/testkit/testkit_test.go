package testkit

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const self = "github.com/backstream/backstream/internal/testkit"

// The binary never links the test helpers.
func TestNotInBinary(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./cmd/backstream")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list named only %d packages: %q", len(deps), deps)
	}
	for _, p := range deps {
		if p == self {
			t.Errorf("the binary depends on %s", p)
		}
	}
}

func TestSyncBuffer(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for range 100 {
				fmt.Fprintf(&b, "%d", i)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := b.String(); len(got) != 400 || strings.Count(got, "3") != 100 {
		t.Errorf("%d bytes, %d of writer 3's; want 400 and 100", len(got), strings.Count(got, "3"))
	}
}

func TestRandomHex(t *testing.T) {
	a, b := RandomHex(8), RandomHex(8)
	if len(a) != 16 || strings.Trim(a, "0123456789abcdef") != "" || a == b {
		t.Errorf("RandomHex(8) gave %q then %q", a, b)
	}
}

func write(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

func TestReadTree(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a"), "A", 0o640)
	write(t, filepath.Join(dir, "d", "e", "b"), "BB", 0o640)
	write(t, filepath.Join(dir, "d", "empty"), "", 0o640)
	if err := os.Symlink("a", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	got := ReadTree(t, dir)
	if len(got) != 3 || string(got["a"]) != "A" || string(got["d/e/b"]) != "BB" || got["d/empty"] == nil || len(got["d/empty"]) != 0 {
		t.Errorf("ReadTree = %q", got)
	}
}

// recorder keeps what a helper reports instead of failing the test.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatal(args ...any) { r.errs = append(r.errs, fmt.Sprint(args...)) }

func TestCheckTree(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tree")
	write(t, filepath.Join(dir, "db", "t.ibd"), "x", 0o640)
	write(t, filepath.Join(dir, "ibdata1"), "y", 0o640)
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	uid, gid := os.Getuid(), os.Getgid()
	var r recorder
	if n := CheckTree(&r, "datadir", dir, 0o750, 0o640, uid, gid); n != 4 || len(r.errs) != 0 {
		t.Errorf("a tree as wanted: %d entries checked, reports %q; want 4, none", n, r.errs)
	}
	for _, tt := range []struct {
		name  string
		apply func(t *testing.T)
		uid   int
		want  string
	}{
		{"a file's mode", func(t *testing.T) { os.Chmod(filepath.Join(dir, "ibdata1"), 0o644) }, -1, "ibdata1 has mode 0644, want 0640"},
		{"a directory's mode", func(t *testing.T) { os.Chmod(filepath.Join(dir, "db"), 0o755) }, -1, "db has mode 0755, want 0750"},
		{"the top's mode", func(t *testing.T) { os.Chmod(dir, 0o700) }, -1, "tree has mode 0700, want 0750"},
		{"the owner", func(t *testing.T) {}, uid + 1, fmt.Sprintf("is owned by %d:%d, want %d:%d", uid, gid, uid+1, gid)},
		{"a link", func(t *testing.T) { os.Symlink("ibdata1", filepath.Join(dir, "db", "link")) }, -1, "link is a L---------, want only directories and regular files"},
	} {
		tt.apply(t)
		var r recorder
		CheckTree(&r, "datadir", dir, 0o750, 0o640, tt.uid, gid)
		if len(r.errs) == 0 || !strings.Contains(strings.Join(r.errs, "\n"), tt.want) || !strings.HasPrefix(r.errs[0], "datadir: ") {
			t.Errorf("%s: reports %q, want one saying %q", tt.name, r.errs, tt.want)
		}
		os.Chmod(dir, 0o750)
		os.Chmod(filepath.Join(dir, "db"), 0o750)
		os.Chmod(filepath.Join(dir, "ibdata1"), 0o640)
	}
	var missing recorder
	CheckTree(&missing, "datadir", filepath.Join(dir, "none"), 0o750, 0o640, -1, -1)
	if len(missing.errs) != 1 {
		t.Errorf("a missing tree: reports %q, want one", missing.errs)
	}
}

func TestServeTCP(t *testing.T) {
	addr := ServeTCP(t, func(c net.Conn) {
		line, _ := bufio.NewReader(c).ReadString('\n')
		fmt.Fprintf(c, "echo %s", line)
	})
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("address %s is not on the loopback", addr)
	}
	// Two connections at once: each has its own handler, and each is
	// closed when its handler returns.
	var conns []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	for i := len(conns) - 1; i >= 0; i-- {
		fmt.Fprintf(conns[i], "%d\n", i)
		got, err := io.ReadAll(conns[i])
		if err != nil || string(got) != fmt.Sprintf("echo %d\n", i) {
			t.Errorf("connection %d: %q, %v", i, got, err)
		}
	}
}

// TestPowerCut: after the cut and the recovery, a file synced before the
// cut is whole and one written without a sync is not there.
func TestPowerCut(t *testing.T) {
	p := NewPowerCut(t, 64<<20)
	synced := bytes.Repeat([]byte("synced "), 100000)
	f, err := os.Create(filepath.Join(p.Dir, "synced"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(synced); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	dir, err := os.Open(p.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := dir.Sync(); err != nil {
		t.Fatal(err)
	}
	dir.Close()
	if err := os.WriteFile(filepath.Join(p.Dir, "unsynced"), bytes.Repeat([]byte("lost "), 100000), 0o644); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	p.Recover()
	if got, err := os.ReadFile(filepath.Join(p.Dir, "synced")); err != nil || !bytes.Equal(got, synced) {
		t.Errorf("the synced file after the cut: %d bytes, %v; want its %d bytes", len(got), err, len(synced))
	}
	if got, err := os.ReadFile(filepath.Join(p.Dir, "unsynced")); err == nil && len(got) > 0 {
		t.Errorf("the file written without a sync has %d bytes after the cut: the power was not cut", len(got))
	}
}
