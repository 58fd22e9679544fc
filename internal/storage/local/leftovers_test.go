package local

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/storage"
)

// plant writes a file below root as a killed Put would have left it.
func plant(t *testing.T, root, rel, data string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// everything lists every file and directory below root, dot files
// included.
func everything(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root {
			rel, _ := filepath.Rel(root, p)
			if d.IsDir() {
				rel += "/"
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The temporary files of Puts whose process was killed are removed below
// the prefix, and only there; directories left empty go; objects stay.
func TestRemoveLeftovers(t *testing.T) {
	dir := t.TempDir()
	b := newBackend(t, dir)
	put(t, b, "backups/a/begun.json", "{}")
	put(t, b, "backups/a/streams/00000.xbs.zst", "stream")
	put(t, b, "backups/ab/manifest.json", "{}")
	put(t, b, "locks/l.json", "{}")
	const hex = ".0123456789abcdef.tmp"
	plant(t, dir, "backups/a/streams/.00001.xbs.zst"+hex, "half a stream")
	plant(t, dir, "backups/a/streams/.00001.idx"+hex, "")
	plant(t, dir, "backups/a/.manifest.json"+hex, "{")
	plant(t, dir, "backups/b/streams/.00000.xbs.zst.age"+hex, "only a temp") // a directory with nothing else
	plant(t, dir, "backups/ab/.x"+hex, "other backup")                       // "backups/a/" must not match it
	plant(t, dir, "locks/.l.json"+hex, "outside")
	if err := os.MkdirAll(filepath.Join(dir, "backups", "a", "empty"), 0o700); err != nil {
		t.Fatal(err)
	}
	before, err := b.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}

	dry, err := b.RemoveLeftovers(t.Context(), "backups/a/", storage.LeftoverOptions{DryRun: true})
	if want := (storage.Leftovers{TempFiles: 3, Bytes: int64(len("half a stream{"))}); err != nil || dry != want {
		t.Errorf("dry run under backups/a/ = %+v, %v; want %+v", dry, err, want)
	}
	if got := len(tempFiles(t, dir)); got != 6 {
		t.Fatalf("the dry run removed something: %d temporary files left of 6", got)
	}

	got, err := b.RemoveLeftovers(t.Context(), "backups/a/", storage.LeftoverOptions{})
	if err != nil || got != dry {
		t.Errorf("RemoveLeftovers(backups/a/) = %+v, %v; want %+v", got, err, dry)
	}
	want := []string{"backups/", "backups/a/", "backups/a/begun.json", "backups/a/streams/", "backups/a/streams/00000.xbs.zst",
		"backups/ab/", "backups/ab/.x" + hex, "backups/ab/manifest.json", "backups/b/", "backups/b/streams/",
		"backups/b/streams/.00000.xbs.zst.age" + hex, "locks/", "locks/.l.json" + hex, "locks/l.json"}
	if left := everything(t, dir); !slices.Equal(left, want) {
		t.Errorf("after removing under backups/a/:\n got %q\nwant %q", left, want)
	}

	got, err = b.RemoveLeftovers(t.Context(), "backups/", storage.LeftoverOptions{})
	if want := (storage.Leftovers{TempFiles: 2, Bytes: int64(len("only a tempother backup"))}); err != nil || got != want {
		t.Errorf("RemoveLeftovers(backups/) = %+v, %v; want %+v", got, err, want)
	}
	want = []string{"backups/", "backups/a/", "backups/a/begun.json", "backups/a/streams/", "backups/a/streams/00000.xbs.zst",
		"backups/ab/", "backups/ab/manifest.json", "locks/", "locks/.l.json" + hex, "locks/l.json"}
	if left := everything(t, dir); !slices.Equal(left, want) {
		t.Errorf("after removing under backups/:\n got %q\nwant %q", left, want)
	}
	after, err := b.List(t.Context(), "")
	if err != nil || !slices.Equal(names(after), names(before)) {
		t.Errorf("objects after = %q, %v; want them untouched: %q", names(after), err, names(before))
	}

	if got, err := b.RemoveLeftovers(t.Context(), "nothing/here/", storage.LeftoverOptions{}); err != nil || got.Count() != 0 {
		t.Errorf("RemoveLeftovers of a missing directory = %+v, %v; want none", got, err)
	}
	if _, err := b.RemoveLeftovers(t.Context(), "/abs", storage.LeftoverOptions{}); err == nil {
		t.Error("RemoveLeftovers accepted an invalid prefix")
	}
}

// The name a real Put gives its temporary file is recognised, including
// one cut short for a long name; a Put whose file is removed under it
// fails and leaves no object.
func TestRemoveLeftoversOfRunningPut(t *testing.T) {
	for _, name := range []string{"d/obj", "d/long" + strings.Repeat("ü", 120)} {
		dir := t.TempDir()
		b := newBackend(t, dir)
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() {
			_, err := b.Put(t.Context(), name, pr)
			done <- err
		}()
		if _, err := pw.Write(bytes.Repeat([]byte("x"), 3<<20/2)); err != nil {
			t.Fatal(err)
		}
		if tmps := tempFiles(t, dir); len(tmps) != 1 {
			t.Fatalf("temporary files %q during Put, want one", tmps)
		}
		prefix := name[:len("d/lo")]
		got, err := b.RemoveLeftovers(t.Context(), prefix, storage.LeftoverOptions{})
		if err != nil || got.TempFiles != 1 || got.Bytes == 0 {
			t.Errorf("%s: RemoveLeftovers(%q) = %+v, %v; want its temporary file", name, prefix, got, err)
		}
		pw.Close()
		if err := <-done; err == nil {
			t.Errorf("%s: Put succeeded after its temporary file was removed", name)
		}
		if left := everything(t, dir); len(left) != 0 {
			t.Errorf("%s: left %q", name, left)
		}
	}
}
