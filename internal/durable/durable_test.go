package durable

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

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

func TestDirsNamesWhatFailed(t *testing.T) {
	root, _ := tree(t)
	if err := Dirs(root, filepath.Join(root, "db")); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(root, "ibdata1", "x")
	if err := Dirs(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("Dirs of a path under a file: %v, want an error naming it", err)
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

func TestFSSyncsTheFileSystem(t *testing.T) {
	root, _ := tree(t)
	var fds []int
	syncFS = func(fd int) error { fds = append(fds, fd); return unix.Syncfs(fd) }
	t.Cleanup(func() { syncFS = unix.Syncfs })
	if err := FS(root); err != nil || len(fds) != 1 {
		t.Fatalf("FS: %v, %d syncfs calls; want one", err, len(fds))
	}
	big := filepath.Join(root, "ibdata1")
	if pages, ok := testkit.PageCache(t, big); ok {
		if pages != (testkit.Pages{}) {
			t.Errorf("%s: %+v pages not on disk after FS", big, pages)
		}
	}
	missing := filepath.Join(root, "no-such-dir")
	if err := FS(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("FS of a missing directory: %v, want an error naming it", err)
	}
}
