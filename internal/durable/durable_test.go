package durable

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/backstream/backstream/internal/testkit"
)

// tree makes a small datadir-like tree under a new directory and returns
// its root: files at two depths, an empty directory, and a symbolic link
// to a file outside it.
func tree(t *testing.T) (root, outside string) {
	t.Helper()
	base := testkit.DiskTempDir(t)
	root = filepath.Join(base, "data")
	outside = filepath.Join(base, "elsewhere")
	for _, d := range []string{"db", "empty"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for name, size := range map[string]int{"ibdata1": 3 << 20, "db/t.ibd": 1 << 20, "db/t.frm": 100} {
		if err := os.WriteFile(filepath.Join(root, name), bytes.Repeat([]byte{'x'}, size), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(outside, []byte("not ours"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "db", "link")); err != nil {
		t.Fatal(err)
	}
	return root, outside
}

// syncs is what recordSyncs saw synced, in order.
type syncs struct {
	mu    sync.Mutex
	names []string
}

func (s *syncs) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.names)
}

// recordSyncs records every sync until the test ends.
func recordSyncs(t *testing.T) *syncs {
	s := &syncs{}
	syncFile = func(f *os.File) error {
		s.mu.Lock()
		s.names = append(s.names, f.Name())
		s.mu.Unlock()
		return f.Sync()
	}
	t.Cleanup(func() { syncFile = (*os.File).Sync })
	return s
}

func TestTreeSyncsEveryFileAndDirectory(t *testing.T) {
	root, outside := tree(t)
	rec := recordSyncs(t)
	if err := Tree(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	synced := rec.list()
	want := []string{filepath.Dir(root), root, filepath.Join(root, "db"), filepath.Join(root, "empty"),
		filepath.Join(root, "ibdata1"), filepath.Join(root, "db/t.ibd"), filepath.Join(root, "db/t.frm")}
	slices.Sort(want)
	slices.Sort(synced)
	synced = slices.Compact(synced)
	if !slices.Equal(synced, want) {
		t.Errorf("synced %q,\nwant %q", synced, want)
	}
	if slices.Contains(synced, outside) {
		t.Errorf("Tree followed a symbolic link out of the tree to %s", outside)
	}
}

func TestTreeLeavesNoDirtyPage(t *testing.T) {
	root, _ := tree(t)
	big := filepath.Join(root, "ibdata1")
	if pages, ok := testkit.PageCache(t, big); !ok {
		t.Log("this kernel or file system cannot say which pages are dirty; TestTreeSyncsEveryFileAndDirectory covers what Tree syncs")
		return
	} else if pages.Dirty == 0 {
		t.Fatalf("%s has no dirty page just after it was written: the check below could not fail", big)
	}
	if err := Tree(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ibdata1", "db/t.ibd", "db/t.frm"} {
		if pages, _ := testkit.PageCache(t, filepath.Join(root, name)); pages != (testkit.Pages{}) {
			t.Errorf("%s: %+v pages not on disk after Tree", name, pages)
		}
	}
}

func TestTreeNamesWhatFailed(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-dir")
	err := Tree(context.Background(), missing)
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("Tree of a missing directory: %v, want an error naming it", err)
	}
}

// TestWritebackStartsTheDisk: what a Writeback was told of is queued for
// the disk at once (dirty pages become pages under writeback, or clean),
// in whatever order it was written, and the content is what was written.
func TestWritebackStartsTheDisk(t *testing.T) {
	dir := testkit.DiskTempDir(t)
	want := make([]byte, 3*WritebackStep+12345)
	for i := range want {
		want[i] = byte(i * 7)
	}
	write := func(name string, tell bool) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		wb := NewWriteback(f)
		// Out of order, as a seek makes it: the second half first. The
		// halves meet at a page boundary: a page written again while
		// the kernel writes it stays dirty (a hint skips pages under
		// writeback; the final sync takes them).
		half := len(want) / 2 &^ 4095
		for _, r := range [][2]int{{half, len(want)}, {0, half}} {
			for off := r[0]; off < r[1]; off += 1 << 20 {
				end := min(off+1<<20, r[1])
				if _, err := f.WriteAt(want[off:end], int64(off)); err != nil {
					t.Fatal(err)
				}
				if tell {
					wb.Wrote(int64(off), int64(end-off))
				}
			}
		}
		if tell {
			wb.Flush()
		}
		return p
	}
	plain, started := write("plain", false), write("started", true)
	if got, err := os.ReadFile(started); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the file written with a Writeback differs from what was written (%v)", err)
	}
	pages, ok := testkit.PageCache(t, plain)
	if !ok {
		t.Log("this kernel or file system cannot say which pages are dirty; only the content was checked")
		return
	}
	if pages.Dirty == 0 {
		t.Fatalf("the file written without a Writeback has no dirty page: the check below could not fail")
	}
	if pages, _ := testkit.PageCache(t, started); pages.Dirty != 0 {
		t.Errorf("%d pages of the file written with a Writeback were never queued for the disk", pages.Dirty)
	}
}

func TestFilesSyncsTheFilesAndTheirDirectories(t *testing.T) {
	root, _ := tree(t)
	rec := recordSyncs(t)
	if err := Files(context.Background(), root+"/", filepath.Join(root, "db/t.ibd"), filepath.Join(root, "db/t.frm")); err != nil {
		t.Fatal(err)
	}
	synced := rec.list()
	// The directories after the files in them, deepest first.
	if n := len(synced); n != 4 || synced[2] != filepath.Join(root, "db") || synced[3] != root {
		t.Errorf("synced %q: want the two files, then db, then root", synced)
	}
	// The files, their directory, and its entry in root; not root's
	// parent, nor the other files.
	want := []string{root, filepath.Join(root, "db"), filepath.Join(root, "db/t.ibd"), filepath.Join(root, "db/t.frm")}
	slices.Sort(want)
	slices.Sort(synced)
	if !slices.Equal(synced, want) {
		t.Errorf("synced %q,\nwant %q (each once)", synced, want)
	}
	for _, bad := range []string{filepath.Join(root, "db/missing"), filepath.Join(filepath.Dir(root), "elsewhere")} {
		if err := Files(context.Background(), root, bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("Files(%s): %v, want an error naming it", bad, err)
		}
	}
}
