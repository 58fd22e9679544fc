package scratch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Dir is private to the user; Sweep removes only the directories of
// processes that no longer run, never a running one's, another name's or
// its own; Cleanup removes this process's.
func TestSweepAndCleanup(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	d, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 || filepath.Dir(d) != tmp {
		t.Fatalf("scratch directory %s: %v, %v; want a 0700 directory in %s", d, fi.Mode(), err, tmp)
	}
	f, err := CreateTemp("x-*")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()

	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadPid := dead.Process.Pid
	parent := os.Getppid()
	mk := func(name string) string {
		p := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(p, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gone := []string{
		mk(fmt.Sprintf("backstream-%d-0-abc", deadPid)),                      // its process ended
		mk(fmt.Sprintf("backstream-%d-%d-abc", parent, startTime(parent)+1)), // its pid now runs another process
	}
	kept := []string{
		d,
		mk(fmt.Sprintf("backstream-%d-%d-abc", parent, startTime(parent))), // running
		mk(fmt.Sprintf("backstream-%d-0-abc", parent)),                     // running, start unknown
		mk("backstream-sandbox-0"),
		mk(fmt.Sprintf("other-%d-0-abc", deadPid)),
	}
	removed, err := Sweep()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range gone {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("Sweep left %s (%v); removed %v", p, err, removed)
		}
	}
	for _, p := range kept {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("Sweep removed %s: %v", p, err)
		}
	}
	if err := Cleanup(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d); !os.IsNotExist(err) {
		t.Errorf("Cleanup left %s: %v", d, err)
	}
}
