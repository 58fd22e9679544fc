package local

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/storagetest"
)

func newBackend(t *testing.T, dir string) *Backend {
	t.Helper()
	b, err := New(dir)
	if err != nil {
		t.Fatalf("New(%s): %v", dir, err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Backend {
		return newBackend(t, t.TempDir())
	})
}

func TestNew(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "new", "repo")
	b := newBackend(t, dir)
	if b.Location() != dir {
		t.Errorf("Location() = %q, want %q", b.Location(), dir)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("new root has mode %v, want 0700", fi.Mode().Perm())
	}

	// Opening an existing repository leaves its objects alone.
	put(t, b, "x", "data")
	b2 := newBackend(t, dir)
	if got := readAll(t, b2, "x"); got != "data" {
		t.Errorf("reopened backend reads %q", got)
	}

	file := filepath.Join(parent, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := New(file); err == nil {
		b.Close()
		t.Errorf("New on a regular file succeeded")
	}
}

func TestLocationIsAbsolute(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	b := newBackend(t, "rel")
	want := filepath.Join(dir, "rel")
	if got := b.Location(); got != want {
		t.Errorf("Location() = %q, want %q", got, want)
	}
}

func put(t *testing.T, b *Backend, name, data string) {
	t.Helper()
	if _, err := b.Put(t.Context(), name, strings.NewReader(data)); err != nil {
		t.Fatalf("Put(%q): %v", name, err)
	}
}

func readAll(t *testing.T, b *Backend, name string) string {
	t.Helper()
	rc, err := b.Open(t.Context(), name, 0, -1)
	if err != nil {
		t.Fatalf("Open(%q): %v", name, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %q: %v", name, err)
	}
	return string(data)
}

// tempFiles returns the temporary files below root.
func tempFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if storage.IsTempName(d.Name()) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTempFileNeverVisible(t *testing.T) {
	dir := t.TempDir()
	b := newBackend(t, dir)
	put(t, b, "s/existing", "old")

	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := b.Put(t.Context(), "s/existing", pr)
		done <- err
	}()
	// More than one copy buffer, so the temporary file holds data on disk
	// while Put waits for the rest.
	if _, err := pw.Write(bytes.Repeat([]byte("n"), 3<<20/2)); err != nil {
		t.Fatal(err)
	}
	// The buffer is written before the next read blocks; wait for that.
	var tmps []string
	for range 1000 {
		tmps = tempFiles(t, dir)
		if len(tmps) == 1 {
			if fi, err := os.Stat(tmps[0]); err == nil && fi.Size() > 0 {
				break
			}
		}
		waitABit()
	}
	if len(tmps) != 1 {
		t.Fatalf("found temporary files %q during Put, want exactly one", tmps)
	}
	if filepath.Dir(tmps[0]) != filepath.Join(dir, "s") {
		t.Errorf("temporary file %s is not in the target's directory", tmps[0])
	}
	if fi, err := os.Stat(tmps[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("temporary file: %v, %v; want mode 0600", fi, err)
	}
	infos, err := b.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{"s/existing"}; !slices.Equal(names(infos), got) {
		t.Errorf("List during Put = %q, want %q", names(infos), got)
	}
	if got := readAll(t, b, "s/existing"); got != "old" {
		t.Errorf("object reads %q during its replacement, want the old content", got)
	}

	pw.CloseWithError(errors.New("producer died"))
	if err := <-done; err == nil || !strings.Contains(err.Error(), "producer died") {
		t.Errorf("Put = %v, want the reader's error", err)
	}
	if tmps := tempFiles(t, dir); len(tmps) != 0 {
		t.Errorf("temporary files left after a failed Put: %q", tmps)
	}
	if got := readAll(t, b, "s/existing"); got != "old" {
		t.Errorf("object reads %q after a failed replacement, want the old content", got)
	}
}

func names(infos []storage.Info) []string {
	var out []string
	for _, in := range infos {
		out = append(out, in.Name)
	}
	return out
}

func TestModes(t *testing.T) {
	dir := t.TempDir()
	b := newBackend(t, dir)
	put(t, b, "m/n/o", "x")
	for _, tc := range []struct {
		path string
		mode fs.FileMode
	}{
		{"m", 0o700 | fs.ModeDir},
		{"m/n", 0o700 | fs.ModeDir},
		{"m/n/o", 0o600},
	} {
		fi, err := os.Stat(filepath.Join(dir, tc.path))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode() & (fs.ModePerm | fs.ModeDir); got != tc.mode {
			t.Errorf("%s has mode %v, want %v", tc.path, got, tc.mode)
		}
	}
}

func TestDeleteLeavesNoDirectories(t *testing.T) {
	dir := t.TempDir()
	b := newBackend(t, dir)
	put(t, b, "backups/X/streams/00000.xbs", "a")
	put(t, b, "backups/X/manifest.json", "b")
	put(t, b, "backups/Y/manifest.json", "c")
	for _, name := range []string{"backups/X/streams/00000.xbs", "backups/X/manifest.json"} {
		if err := b.Delete(t.Context(), name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "backups/X")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("backups/X still exists after deleting all its objects (%v)", err)
	}
	if err := b.Delete(t.Context(), "backups/Y/manifest.json"); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("root gone after deleting everything: %v", err)
	}
	if len(entries) != 0 {
		t.Errorf("root holds %v after deleting everything", entries)
	}
}

func TestFailedPutLeavesNoDirectories(t *testing.T) {
	dir := t.TempDir()
	b := newBackend(t, dir)
	_, err := b.Put(t.Context(), "new/sub/obj", io.MultiReader(strings.NewReader("x"), errReader{}))
	if err == nil {
		t.Fatal("Put from a failing reader succeeded")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("root holds %v after a failed Put", entries)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("broken") }

func TestSymlinkCannotEscape(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	b := newBackend(t, dir)
	put(t, b, "real/obj", "ok")
	for link, target := range map[string]string{
		"evil":          outside,
		"real/evilfile": secret,
		"relative":      "../" + filepath.Base(outside),
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	ctx := t.Context()

	for _, name := range []string{"evil/secret", "real/evilfile", "relative/secret"} {
		if rc, err := b.Open(ctx, name, 0, -1); err == nil {
			data, _ := io.ReadAll(rc)
			rc.Close()
			t.Errorf("Open(%q) succeeded and read %q", name, data)
		}
		if info, err := b.Stat(ctx, name); err == nil {
			t.Errorf("Stat(%q) = %+v, want an error", name, info)
		}
		if err := b.Delete(ctx, name); err != nil {
			t.Logf("Delete(%q): %v", name, err)
		}
	}
	if _, err := b.Put(ctx, "evil/planted", strings.NewReader("x")); err == nil {
		t.Errorf("Put(evil/planted) succeeded")
	}
	if _, err := b.Put(ctx, "relative/new/planted", strings.NewReader("x")); err == nil {
		t.Errorf("Put(relative/new/planted) succeeded")
	}
	// Replacing the link in the repository with an object is fine; what
	// matters is that the file outside is not written through it.
	put(t, b, "real/evilfile", "replaced")

	got, err := os.ReadFile(secret)
	if err != nil || string(got) != "secret" {
		t.Errorf("file outside the root now reads %q, %v", got, err)
	}
	entries, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory outside the root holds %d entries, want only the secret", len(entries))
	}

	infos, err := b.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(infos), []string{"real/evilfile", "real/obj"}; !slices.Equal(got, want) {
		t.Errorf("List = %q, want %q", got, want)
	}
	for _, prefix := range []string{"evil/", "relative/"} {
		infos, err := b.List(ctx, prefix)
		if len(infos) != 0 {
			t.Errorf("List(%q) = %q, %v; want nothing", prefix, names(infos), err)
		}
	}
}

func TestObjectThroughFile(t *testing.T) {
	b := newBackend(t, t.TempDir())
	put(t, b, "f", "file")
	if _, err := b.Put(t.Context(), "f/x", strings.NewReader("x")); err == nil {
		t.Error("Put(f/x) below the object f succeeded")
	}
	infos, err := b.List(t.Context(), "f/")
	if err != nil || len(infos) != 0 {
		t.Errorf("List(f/) = %+v, %v; want nothing", infos, err)
	}
	if err := b.Delete(t.Context(), "f/x"); err != nil {
		t.Errorf("Delete(f/x) = %v, want nil", err)
	}
	if got := readAll(t, b, "f"); got != "file" {
		t.Errorf("f reads %q", got)
	}
}

func waitABit() { time.Sleep(5 * time.Millisecond) }

// countingReader yields size bytes, calling cancel once after have passed.
type countingReader struct {
	size, after, read int
	cancel            func()
}

func (r *countingReader) Read(p []byte) (int, error) {
	if r.read >= r.size {
		return 0, io.EOF
	}
	n := min(len(p), r.size-r.read, 32<<10)
	r.read += n
	if r.read >= r.after {
		r.cancel()
	}
	return n, nil
}

// Cancellation must stop the copy within about one buffer, not merely
// discard the result after reading everything.
func TestPutStopsReadingWhenCancelled(t *testing.T) {
	b := newBackend(t, t.TempDir())
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r := &countingReader{size: 64 << 20, after: 2 << 20, cancel: cancel}
	if _, err := b.Put(ctx, "x", r); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put = %v, want context.Canceled", err)
	}
	if limit := r.after + 2*copyBufferSize; r.read > limit {
		t.Errorf("Put read %d bytes after cancellation at %d, want at most %d", r.read, r.after, limit)
	}
}

// A temporary name cut to fit NAME_MAX must stay UTF-8, or listing the
// directory during the Put would fail.
func TestLongNameTemp(t *testing.T) {
	dir := t.TempDir()
	b := newBackend(t, dir)
	name := "long/a" + strings.Repeat("ü", 120) // 241 bytes; byte 200 is inside a "ü"
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := b.Put(t.Context(), name, pr)
		done <- err
	}()
	if _, err := pw.Write(bytes.Repeat([]byte("x"), 3<<20/2)); err != nil {
		t.Fatal(err)
	}
	if tmps := tempFiles(t, dir); len(tmps) != 1 || !utf8.ValidString(tmps[0]) {
		t.Errorf("temporary files %q, want one with a UTF-8 name", tmps)
	}
	if infos, err := b.List(t.Context(), ""); err != nil || len(infos) != 0 {
		t.Errorf("List during Put = %+v, %v; want nothing", infos, err)
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if infos, err := b.List(t.Context(), ""); err != nil || len(infos) != 1 || infos[0].Name != name {
		t.Errorf("List after Put = %+v, %v; want %q", infos, err, name)
	}
}
