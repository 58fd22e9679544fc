package testkit

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// holders names a process holding a file open under a directory (what
// a power-cut file system's umount reports when it stays busy).
func TestHoldersNamesWhoHoldsADirectory(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "held"))
	if err != nil {
		t.Fatal(err)
	}
	got := holders(dir)
	f.Close()
	if !strings.Contains(got, "pid "+strconv.Itoa(os.Getpid())+" ") {
		t.Errorf("holders(%s) = %q, want this process", dir, got)
	}
	if got := holders(dir); strings.Contains(got, "pid "+strconv.Itoa(os.Getpid())+" ") {
		t.Errorf("after the file closed, holders = %q", got)
	}
}
