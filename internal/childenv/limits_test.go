package childenv

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A child started after RaiseOpenFiles may open as many files as the hard
// limit allows, where it had the lower soft limit before.
func TestRaiseOpenFiles(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) })
	if lim.Max < 2048 {
		t.Fatalf("the hard limit of open files is %d: too low to tell a raise", lim.Max)
	}
	low := syscall.Rlimit{Cur: 1024, Max: lim.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	child := func() uint64 {
		t.Helper()
		out, err := exec.Command("sh", "-c", "ulimit -n").Output()
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 64)
		if err != nil {
			t.Fatalf("ulimit -n said %q", out)
		}
		return n
	}
	if n := child(); n != 1024 {
		t.Fatalf("before: a child may open %d files, want 1024", n)
	}
	if err := RaiseOpenFiles(); err != nil {
		t.Fatal(err)
	}
	if n := child(); n != lim.Max {
		t.Errorf("after: a child may open %d files, want the hard limit %d", n, lim.Max)
	}
}
