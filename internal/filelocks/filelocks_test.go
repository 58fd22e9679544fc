package filelocks

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The kernel's lines, a waiter's ("->") too, name each file by device
// and inode with the pid before it; a line of another shape is skipped.
func TestParse(t *testing.T) {
	held, err := parse(strings.NewReader("1: POSIX  ADVISORY  WRITE 3807 fe:00:778327 0 EOF\n" +
		"2: -> POSIX  ADVISORY  WRITE 4001 103:02:12 0 EOF\n" +
		"3: FLOCK  ADVISORY  WRITE 77 00:2f:5 0 EOF\n" +
		"garbage line\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[File]string{{0xfe, 0, 778327}: "3807", {0x103, 2, 12}: "4001", {0, 0x2f, 5}: "77"}
	if len(held) != len(want) {
		t.Fatalf("parse: %v, want %v", held, want)
	}
	for f, pid := range want {
		if held[f] != pid {
			t.Errorf("parse: %v holds %q, want %q", f, held[f], pid)
		}
	}
}

// A lock this process takes is listed under the file Of names.
func TestHoldersSeesALock(t *testing.T) {
	p := filepath.Join(t.TempDir(), "locked")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	id, ok := Of(fi)
	if !ok {
		t.Fatal("no device and inode")
	}
	held, err := Holders("/proc/locks")
	if err != nil {
		t.Fatal(err)
	}
	if pid := held[id]; pid != strconv.Itoa(os.Getpid()) {
		t.Errorf("%s (%v) locked by pid %q in /proc/locks, want %d", p, id, pid, os.Getpid())
	}
	if m, err := Holders(filepath.Join(t.TempDir(), "none")); err != nil || len(m) != 0 {
		t.Errorf("a missing list: %v, %v; want empty", m, err)
	}
}
