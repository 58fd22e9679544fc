package physical

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/xbstream"
)

func pc(path string, off uint64, data string) xbstream.Chunk {
	return xbstream.Chunk{Type: xbstream.TypePayload, Path: path, Offset: off, Payload: []byte(data)}
}
func ec(path string) xbstream.Chunk { return xbstream.Chunk{Type: xbstream.TypeEOF, Path: path} }
func sc(path string, off uint64) xbstream.Chunk {
	return xbstream.Chunk{Type: xbstream.TypeSeek, Path: path, Offset: off}
}
func dc(path string) xbstream.Chunk { return xbstream.Chunk{Type: xbstream.TypeRemove, Path: path} }
func rc(from, to string) xbstream.Chunk {
	return xbstream.Chunk{Type: xbstream.TypeRename, Path: from, NewPath: to}
}
func rewrite(c xbstream.Chunk) xbstream.Chunk { c.Flags |= xbstream.FlagRewrite; return c }

// writerCases are streams whose outcome must equal mbstream -x's. want lists
// the resulting files and their contents ("" for an empty file); dirs lists
// directories that must exist.
var writerCases = []struct {
	name   string
	chunks []xbstream.Chunk
	want   map[string]string
	dirs   []string
}{
	{
		name:   "payloads then end",
		chunks: []xbstream.Chunk{pc("db/t.ibd", 0, "hello "), pc("db/t.ibd", 6, "world"), ec("db/t.ibd")},
		want:   map[string]string{"db/t.ibd": "hello world"},
	},
	{
		name:   "end alone makes an empty file",
		chunks: []xbstream.Chunk{ec("empty"), ec("db/e.frm")},
		want:   map[string]string{"empty": "", "db/e.frm": ""},
	},
	{
		name: "seek back and overwrite",
		chunks: []xbstream.Chunk{pc("f", 0, "hello world"), sc("f", 0), pc("f", 0, "J"),
			sc("f", 6), pc("f", 6, "W"), ec("f")},
		want: map[string]string{"f": "Jello World"},
	},
	{
		name:   "seek past the end does not extend",
		chunks: []xbstream.Chunk{pc("f", 0, "abc"), sc("f", 100), ec("f")},
		want:   map[string]string{"f": "abc"},
	},
	{
		name:   "seek past the end then write leaves a hole",
		chunks: []xbstream.Chunk{pc("f", 0, "abc"), sc("f", 6), pc("f", 6, "xyz"), ec("f")},
		want:   map[string]string{"f": "abc\x00\x00\x00xyz"},
	},
	{
		name: "rewrite flag truncates an existing file",
		chunks: []xbstream.Chunk{pc("aria_log_control", 0, "old content, long"), ec("aria_log_control"),
			rewrite(pc("aria_log_control", 0, "new")), ec("aria_log_control")},
		want: map[string]string{"aria_log_control": "new"},
	},
	{
		name:   "rewrite flag on a new file",
		chunks: []xbstream.Chunk{rewrite(pc("n", 0, "x")), ec("n")},
		want:   map[string]string{"n": "x"},
	},
	{
		name: "remove a file and a directory",
		chunks: []xbstream.Chunk{pc("db/a.frm", 0, "a"), ec("db/a.frm"), pc("db/b.frm", 0, "b"), ec("db/b.frm"),
			pc("gone/x", 0, "x"), ec("gone/x"), pc("gone/y", 0, "y"), ec("gone/y"),
			dc("db/a.frm"), dc("gone"), dc("never/was"), dc("db/nope")},
		want: map[string]string{"db/b.frm": "b"},
		dirs: []string{"db"},
	},
	{
		name: "remove by prefix pattern",
		// mbstream 10.11 removes only the file named exactly as the prefix.
		chunks: []xbstream.Chunk{pc("db/t#P#p1.ibd", 0, "1"), ec("db/t#P#p1.ibd"), pc("db/t#P#", 0, "2"), ec("db/t#P#"),
			pc("top", 0, "t"), ec("top"), pc("top2", 0, "t2"), ec("top2"), pc("db/u.ibd", 0, "u"), ec("db/u.ibd"),
			dc("db/t#P#*"), dc("top*"), dc("nodir/x*"), dc("db/*"), dc("*"), dc("db*")},
		want: map[string]string{"db/t#P#p1.ibd": "1", "db/u.ibd": "u", "top2": "t2"},
		dirs: []string{"db"},
	},
	{
		name: "rename, and renames of missing names are ignored",
		chunks: []xbstream.Chunk{pc("db/old.ibd", 0, "data"), ec("db/old.ibd"), rc("db/old.ibd", "db/new.ibd"),
			rc("db/missing.ibd", "db/other.ibd"), pc("keep", 0, "k"), ec("keep"), rc("keep", "nodir/keep")},
		want: map[string]string{"db/new.ibd": "data", "keep": "k"},
	},
	{
		name:   "file reopened after remove",
		chunks: []xbstream.Chunk{pc("f", 0, "first"), ec("f"), dc("f"), pc("f", 0, "second"), ec("f")},
		want:   map[string]string{"f": "second"},
	},
}

func applyAll(t *testing.T, dir string, chunks []xbstream.Chunk) error {
	t.Helper()
	w, err := NewDatadirWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range chunks {
		if err := w.Chunk(&chunks[i]); err != nil {
			w.Close()
			return fmt.Errorf("chunk %d: %w", i, err)
		}
	}
	return w.Close()
}

func encodeStream(t *testing.T, chunks []xbstream.Chunk) []byte {
	t.Helper()
	var b []byte
	for i := range chunks {
		var err error
		if b, err = xbstream.AppendChunk(b, &chunks[i]); err != nil {
			t.Fatalf("encode chunk %d: %v", i, err)
		}
	}
	return b
}

// TestDatadirWriterMatchesMbstream applies each case with our writer and
// with the real mbstream -x and requires the same files and contents.
func TestDatadirWriterMatchesMbstream(t *testing.T) {
	mbstream, err := exec.LookPath("mbstream")
	if err != nil {
		t.Fatalf("mbstream not installed (scripts/deps.sh installs it): %v", err)
	}
	for _, tc := range writerCases {
		t.Run(tc.name, func(t *testing.T) {
			ours := filepath.Join(t.TempDir(), "ours")
			if err := applyAll(t, ours, tc.chunks); err != nil {
				t.Fatalf("DatadirWriter: %v", err)
			}
			theirs := t.TempDir()
			cmd := exec.Command(mbstream, "-x", "-C", theirs)
			cmd.Stdin = bytes.NewReader(encodeStream(t, tc.chunks))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("mbstream -x: %v: %s", err, out)
			}
			got := readTree(t, ours)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("ours: %q, want %q", got, tc.want)
			}
			if mb := readTree(t, theirs); fmt.Sprint(mb) != fmt.Sprint(got) {
				t.Errorf("mbstream: %q, ours: %q", mb, got)
			}
			for _, d := range tc.dirs {
				if fi, err := os.Stat(filepath.Join(ours, d)); err != nil || !fi.IsDir() {
					t.Errorf("directory %s: %v", d, err)
				}
			}
		})
	}
}

// readTree maps every regular file under dir to its content.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for p, b := range testkit.ReadTree(t, dir) {
		m[p] = string(b)
	}
	return m
}

func TestDatadirWriterModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	if err := applyAll(t, dir, []xbstream.Chunk{pc("db/t.ibd", 0, "x"), ec("db/t.ibd")}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{dir: DirMode, filepath.Join(dir, "db"): DirMode, filepath.Join(dir, "db/t.ibd"): FileMode} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		// The umask may only remove bits.
		if fi.Mode().Perm()&^want != 0 {
			t.Errorf("%s: mode %v, want at most %v", p, fi.Mode().Perm(), want)
		}
	}
}

// TestDatadirWriterRefuses covers what must fail, and that nothing is written
// outside the directory.
func TestDatadirWriterRefuses(t *testing.T) {
	outside := t.TempDir()
	cases := []struct {
		name    string
		setup   func(t *testing.T, dir string)
		chunks  []xbstream.Chunk
		wantErr string
	}{
		{name: "dot-dot", chunks: []xbstream.Chunk{pc("../x", 0, "evil")}, wantErr: `".."`},
		{name: "dot-dot inside", chunks: []xbstream.Chunk{pc("db/../../x", 0, "evil")}, wantErr: `".."`},
		{name: "absolute", chunks: []xbstream.Chunk{pc(outside+"/x", 0, "evil")}, wantErr: "absolute"},
		{name: "absolute etc", chunks: []xbstream.Chunk{pc("/etc/x", 0, "evil")}, wantErr: "absolute"},
		{name: "empty path", chunks: []xbstream.Chunk{ec("")}, wantErr: "empty path"},
		{name: "remove absolute", chunks: []xbstream.Chunk{dc(outside)}, wantErr: "absolute"},
		{name: "remove dot-dot pattern", chunks: []xbstream.Chunk{dc("../*")}, wantErr: `".."`},
		{name: "remove dot-dot prefix pattern", chunks: []xbstream.Chunk{dc("../x*")}, wantErr: `".."`},
		{name: "rename out", chunks: []xbstream.Chunk{pc("a", 0, "a"), ec("a"), rc("a", "../a")}, wantErr: `".."`},
		{
			name: "symlink escape",
			setup: func(t *testing.T, dir string) {
				if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
					t.Fatal(err)
				}
			},
			chunks:  []xbstream.Chunk{pc("link/x", 0, "evil")},
			wantErr: "escapes",
		},
		{
			name: "symlink escape by remove",
			setup: func(t *testing.T, dir string) {
				if err := os.WriteFile(filepath.Join(outside, "victim"), []byte("v"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
					t.Fatal(err)
				}
			},
			chunks:  []xbstream.Chunk{dc("link/victim")},
			wantErr: "escapes",
		},
		{
			name: "symlink as the file, with rewrite",
			setup: func(t *testing.T, dir string) {
				if err := os.WriteFile(filepath.Join(outside, "victim"), []byte("v"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join(outside, "victim"), filepath.Join(dir, "f")); err != nil {
					t.Fatal(err)
				}
			},
			chunks:  []xbstream.Chunk{rewrite(pc("f", 0, "evil")), ec("f")},
			wantErr: "create f",
		},
		{name: "out of order", chunks: []xbstream.Chunk{pc("f", 0, "abc"), pc("f", 4, "d")}, wantErr: "out-of-order"},
		{name: "first payload not at 0", chunks: []xbstream.Chunk{pc("f", 5, "abc")}, wantErr: "out-of-order"},
		{
			name:    "existing file without rewrite",
			chunks:  []xbstream.Chunk{pc("f", 0, "a"), ec("f"), pc("f", 0, "b")},
			wantErr: "file exists",
		},
		{name: "rename open file", chunks: []xbstream.Chunk{pc("f", 0, "a"), rc("f", "g")}, wantErr: "still open"},
		{name: "unknown type", chunks: []xbstream.Chunk{{Type: 'Z', Path: "f"}}, wantErr: "unknown chunk type"},
		{name: "truncated stream", chunks: []xbstream.Chunk{pc("db/t.ibd", 0, "a"), pc("other", 0, "b"), ec("other")}, wantErr: "still open (truncated stream?): db/t.ibd"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			err := applyAll(t, dir, tc.chunks)
			if err == nil {
				t.Fatalf("no error, want one containing %q", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q lacks %q", err, tc.wantErr)
			}
			if _, err := os.Stat(filepath.Join(outside, "x")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a file was written outside the directory: %v", err)
			}
			if strings.HasPrefix(tc.name, "symlink") {
				if b, err := os.ReadFile(filepath.Join(outside, "victim")); err == nil && string(b) != "v" {
					t.Errorf("a file outside the directory was changed: %q", b)
				}
			}
			if tc.name == "symlink escape by remove" {
				if _, err := os.Stat(filepath.Join(outside, "victim")); err != nil {
					t.Errorf("a file outside the directory was removed: %v", err)
				}
			}
		})
	}
}

// TestDatadirWriterConcurrent feeds many files from several goroutines, as
// the archive's parallel reader does; run with -race.
func TestDatadirWriterConcurrent(t *testing.T) {
	dir := t.TempDir()
	w, err := NewDatadirWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	const goroutines, filesEach, chunksEach = 4, 5, 20
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range filesEach {
				p := fmt.Sprintf("db%d/f%d.ibd", f%2, g*filesEach+f)
				var off uint64
				for i := range chunksEach {
					c := pc(p, off, fmt.Sprintf("%s:%03d;", p, i))
					if err := w.Chunk(&c); err != nil {
						errs <- err
						return
					}
					off += uint64(len(c.Payload))
				}
				c := ec(p)
				if err := w.Chunk(&c); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := readTree(t, dir)
	if len(got) != goroutines*filesEach {
		t.Fatalf("%d files, want %d", len(got), goroutines*filesEach)
	}
	for p, content := range got {
		var want strings.Builder
		for i := range chunksEach {
			fmt.Fprintf(&want, "%s:%03d;", p, i)
		}
		if content != want.String() {
			t.Errorf("%s = %q", p, content)
		}
	}
}

func TestDatadirWriterAfterClose(t *testing.T) {
	w, err := NewDatadirWriter(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	c := pc("f", 0, "x")
	if err := w.Chunk(&c); err == nil {
		t.Error("Chunk after Close succeeded")
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// FuzzDatadirWriterPaths feeds arbitrary paths and chunk types: whatever
// happens, nothing may appear or vanish outside the writer's directory.
func FuzzDatadirWriterPaths(f *testing.F) {
	f.Add(byte('P'), "db/t.ibd", "", []byte("x"))
	f.Add(byte('P'), "../x", "", []byte("x"))
	f.Add(byte('R'), "a", "../b", []byte(nil))
	f.Add(byte('D'), "../*", "", []byte(nil))
	f.Add(byte('D'), "..", "", []byte(nil))
	f.Add(byte('E'), "/abs", "", []byte(nil))
	f.Add(byte('S'), "a/./b", "", []byte(nil))
	f.Fuzz(func(t *testing.T, typ byte, p, np string, data []byte) {
		parent := t.TempDir()
		sentinel := filepath.Join(parent, "sentinel")
		if err := os.WriteFile(sentinel, []byte("s"), 0o600); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(parent, "d")
		w, err := NewDatadirWriter(dir)
		if err != nil {
			t.Fatal(err)
		}
		// Pre-existing content the chunks may act on.
		for _, c := range []xbstream.Chunk{pc("a", 0, "a"), ec("a"), pc("sub/b", 0, "b"), ec("sub/b")} {
			if err := w.Chunk(&c); err != nil {
				t.Fatal(err)
			}
		}
		c := xbstream.Chunk{Type: xbstream.Type(typ), Path: p, NewPath: np}
		if c.Type == xbstream.TypePayload {
			c.Payload = data
		}
		_ = w.Chunk(&c)
		_ = w.Close()
		entries, err := os.ReadDir(parent)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 2 {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Fatalf("chunk %q %q -> %q changed the parent directory: %v", typ, p, np, names)
		}
		if b, err := os.ReadFile(sentinel); err != nil || string(b) != "s" {
			t.Fatalf("chunk %q %q -> %q touched the sentinel: %q, %v", typ, p, np, b, err)
		}
	})
}
