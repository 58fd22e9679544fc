// Package testkit holds helpers that tests of several packages share. It
// is imported only by _test.go files and by test-support packages (such as
// s3test), never by the binary: TestNotInBinary checks that.
package testkit

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SyncBuffer is a bytes.Buffer that a writer goroutine (a child's output,
// a log follower, a progress tracker) and the test may use at once.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// ServeTCP listens on a loopback port until the test ends and hands each
// connection to serve in a goroutine of its own, closing the connection
// when serve returns. It returns the address.
func ServeTCP(t testing.TB, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// RandomHex returns n random bytes from crypto/rand, hex-encoded: names and
// secrets that no other test run uses.
func RandomHex(n int) string {
	b := make([]byte, n)
	// crypto/rand.Read never fails since Go 1.24: it aborts the program
	// rather than return fewer random bytes.
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ReadTree returns the content of every regular file under dir, by path
// relative to dir with slashes.
func ReadTree(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// CheckTree fails t for every directory under dir (dir included) whose
// permissions are not dirMode, every regular file whose permissions are
// not fileMode, anything else (a link, a socket), and with uid >= 0 for
// everything not owned by uid:gid; what names the tree in the messages.
// It returns the number of entries it checked.
func CheckTree(t testing.TB, what, dir string, dirMode, fileMode fs.FileMode, uid, gid int) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		n++
		if st := info.Sys().(*syscall.Stat_t); uid >= 0 && (int(st.Uid) != uid || int(st.Gid) != gid) {
			t.Errorf("%s: %s is owned by %d:%d, want %d:%d", what, p, st.Uid, st.Gid, uid, gid)
		}
		want := fileMode
		switch {
		case d.IsDir():
			want = dirMode
		case !d.Type().IsRegular():
			t.Errorf("%s: %s is a %v, want only directories and regular files", what, p, d.Type())
			return nil
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s: %s has mode %04o, want %04o", what, p, info.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// FlipInAgeStanza returns a copy of the age file stored with one byte of
// its first X25519 recipient stanza's body (the wrapped file key) changed
// to another base64 letter: the header still parses, but that stanza no
// longer opens with its recipient's key.
func FlipInAgeStanza(t testing.TB, stored []byte) []byte {
	t.Helper()
	at := bytes.Index(stored, []byte("\n-> X25519 "))
	if at < 0 {
		t.Fatal("no X25519 recipient stanza in the age header")
	}
	body := at + 1 + bytes.IndexByte(stored[at+1:], '\n') + 1
	out := bytes.Clone(stored)
	for i := body + 10; i < len(out) && out[i] != '\n'; i++ {
		if c := out[i] | 0x20; c >= 'a' && c <= 'z' {
			out[i] ^= 0x20 // the other case: still base64
			return out
		}
	}
	t.Fatal("no letter in the stanza's body")
	return nil
}

// Pages is what the page cache holds of a file, in pages.
type Pages struct {
	Dirty     int64 // written, not yet queued for the disk
	Writeback int64 // being written to the disk
}

// PageCache reports the dirty pages of the file at p and those under
// writeback, through the cachestat system call (Linux 6.5 and newer). ok
// is false where that cannot be known: an older kernel, or a file system
// that keeps its files in memory (tmpfs), where a sync writes nothing.
func PageCache(t testing.TB, p string) (pages Pages, ok bool) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if st.Type == unix.TMPFS_MAGIC || st.Type == unix.RAMFS_MAGIC {
		return Pages{}, false
	}
	var rng struct{ off, len uint64 } // struct cachestat_range; len 0: to the end
	var cs struct{ cache, dirty, writeback, evicted, recentlyEvicted uint64 }
	_, _, errno := unix.Syscall6(unix.SYS_CACHESTAT, f.Fd(), uintptr(unsafe.Pointer(&rng)), uintptr(unsafe.Pointer(&cs)), 0, 0, 0)
	if errno == unix.ENOSYS {
		return Pages{}, false
	}
	if errno != 0 {
		t.Fatalf("cachestat %s: %v", p, errno)
	}
	return Pages{Dirty: int64(cs.dirty), Writeback: int64(cs.writeback)}, true
}

// DiskTempDirEnv names a directory on a disk-backed file system for tests
// that need one, when TMPDIR is in memory: scripts/test.sh runs the suite
// with TMPDIR on tmpfs (creating files there costs a fraction of what it
// costs on ext4 after many deletes) and sets this to the TMPDIR it had.
const DiskTempDirEnv = "BACKSTREAM_DISK_TMPDIR"

// DiskTempDir is t.TempDir on a file system that writes to a disk, for a
// test that checks what reaches the disk (dirty pages after a sync): under
// DiskTempDirEnv when it is set, else t.TempDir. It is removed when the
// test ends.
func DiskTempDir(t testing.TB) string {
	t.Helper()
	parent := os.Getenv(DiskTempDirEnv)
	if parent == "" {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp(parent, "backstream-disk-test-")
	if err != nil {
		t.Fatalf("a directory on disk under $%s: %v", DiskTempDirEnv, err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
	})
	return dir
}

// SocketPath is a path for a Unix socket named name in a new short
// directory under /tmp, removed when the test ends: a path under
// t.TempDir() can pass the 107 bytes a socket's path can have (a long
// test name, a TMPDIR on tmpfs).
func SocketPath(t testing.TB, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "bs-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, name)
}
