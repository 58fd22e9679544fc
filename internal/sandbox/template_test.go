package sandbox

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestTemplateCache replaces templateCacheDir and so must not run in
// parallel with tests that start servers.
func TestTemplateCache(t *testing.T) {
	cache := t.TempDir()
	templateCacheDir = func() string { return cache }
	t.Cleanup(func() { templateCacheDir = defaultTemplateCacheDir })

	installs := 0
	// A redo log of zeros, as mariadb-install-db leaves it: the template
	// keeps it as a hole.
	redo := append([]byte("log header"), make([]byte, 4<<20)...)
	fake := func(datadir, tmpdir string) error {
		installs++
		if err := os.MkdirAll(filepath.Join(datadir, "mysql"), 0o750); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(datadir, "ib_logfile0"), redo, 0o640); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(datadir, "ibdata1"), []byte("pages"), 0o640)
	}
	failing := func(datadir, tmpdir string) error {
		if err := os.MkdirAll(datadir, 0o750); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(datadir, "half"), nil, 0o600); err != nil {
			return err
		}
		return errors.New("install failed")
	}

	if _, err := ensureTemplate("k1", failing); err == nil {
		t.Fatal("failing install produced a template")
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 0 {
		t.Fatalf("failed install left %v in the cache", entries)
	}

	tpl, err := ensureTemplate("k1", fake)
	if err != nil {
		t.Fatal(err)
	}
	tpl2, err := ensureTemplate("k1", fake)
	if err != nil {
		t.Fatal(err)
	}
	if tpl != tpl2 || installs != 1 {
		t.Fatalf("templates %s, %s after %d installs; want one install", tpl, tpl2, installs)
	}

	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(tpl, "ib_logfile0"), &st); err != nil {
		t.Fatal(err)
	}
	if allocated := st.Blocks * 512; allocated > 1<<20 {
		t.Errorf("the template's redo log of %d bytes, mostly zeros, takes %d bytes on disk: the template is not sparse", len(redo), allocated)
	}

	dst := filepath.Join(t.TempDir(), "data")
	if err := copyDatadir(tpl, dst); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "ib_logfile0")); err != nil || !bytes.Equal(b, redo) {
		t.Errorf("copied redo log differs (%v)", err)
	}
	b, err := os.ReadFile(filepath.Join(dst, "ibdata1"))
	if err != nil || string(b) != "pages" {
		t.Fatalf("copied ibdata1 = %q, %v", b, err)
	}
	fi, err := os.Stat(filepath.Join(dst, "ibdata1"))
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("copied ibdata1 mode %v, %v; want 0640", fi.Mode(), err)
	}
	if _, err := os.Stat(filepath.Join(dst, ".complete")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("completion marker copied into the datadir: %v", err)
	}
	if ok, err := isDatadir(dst); !ok || err != nil {
		t.Errorf("copy is not recognised as a datadir: %v", err)
	}
	if err := copyDatadir(tpl, dst); err == nil {
		t.Errorf("copy over an existing datadir succeeded")
	}
}

func TestTemplateKey(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "mariadbd")
	if err := os.WriteFile(bin, []byte("v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	k1, err := templateKey(bin, bin, nil)
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := templateKey(bin, bin, []string{"--innodb-page-size=4k"})
	if err := os.WriteFile(bin, []byte("v2, longer"), 0o755); err != nil {
		t.Fatal(err)
	}
	k3, _ := templateKey(bin, bin, nil)
	if k1 == k2 || k1 == k3 {
		t.Errorf("keys do not follow options or binary: %s %s %s", k1, k2, k3)
	}
	if _, err := templateKey(filepath.Join(t.TempDir(), "missing"), bin, nil); err == nil {
		t.Errorf("key for a missing binary")
	}
}

// A template's file copies whole, with holes where whole blocks are
// zeros: same size and bytes, fewer blocks on disk.
func TestCopySparse(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "ib_logfile0"), filepath.Join(dir, "copy")
	data := make([]byte, 8<<20+123)
	copy(data, "header")
	copy(data[5<<20:], "a record in the middle")
	data[len(data)-1] = 7
	if err := os.WriteFile(src, data, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(src, dst); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("the copy differs: %d bytes, want %d", len(got), len(data))
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dst, &st); err != nil {
		t.Fatal(err)
	}
	if allocated := st.Blocks * 512; allocated > 4<<20 {
		t.Errorf("the copy of a file of %d bytes, mostly zeros, takes %d bytes on disk: no holes", len(data), allocated)
	}

	// A sparse source (as a template is): holes in it stay holes, data
	// after a hole is copied, and a hole at the end keeps the size.
	sparse, again := filepath.Join(dir, "sparse"), filepath.Join(dir, "again")
	f, err := os.OpenFile(sparse, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 10<<20)
	for _, w := range []struct {
		off  int64
		text string
	}{{0, "first page"}, {3<<20 + 5, "after a hole"}, {6 << 20, "and another"}} {
		copy(want[w.off:], w.text)
		if _, err := f.WriteAt([]byte(w.text), w.off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(int64(len(want))); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(sparse, again); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(again); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the copy of a sparse file differs: %d bytes (%v), want %d", len(got), err, len(want))
	}
	if err := syscall.Stat(again, &st); err != nil {
		t.Fatal(err)
	}
	if allocated := st.Blocks * 512; allocated > 1<<20 {
		t.Errorf("the copy of a sparse file of %d bytes takes %d bytes on disk: its holes were filled", len(want), allocated)
	}
}
