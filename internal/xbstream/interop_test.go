package xbstream

import (
	"bytes"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/testkit"
)

// model applies chunks to an in-memory tree the way mbstream -x applies them
// to a directory; a test compares it with what the real mbstream did.
type model struct {
	files map[string][]byte
	open  map[string]bool
}

func newModel() *model { return &model{files: map[string][]byte{}, open: map[string]bool{}} }

func (m *model) apply(c *Chunk) {
	opening := func() {
		if m.open[c.Path] {
			return
		}
		m.open[c.Path] = true
		if _, ok := m.files[c.Path]; !ok || c.Flags&FlagRewrite != 0 {
			m.files[c.Path] = []byte{}
		}
	}
	switch c.Type {
	case TypePayload:
		opening()
		f := m.files[c.Path]
		if end := int(c.Offset) + len(c.Payload); end > len(f) {
			f = append(f, make([]byte, end-len(f))...)
		}
		copy(f[c.Offset:], c.Payload)
		m.files[c.Path] = f
	case TypeSeek:
		opening()
		// mbstream only moves the file position; a seek past the end
		// extends the file only once something is written there.
	case TypeEOF:
		opening()
		delete(m.open, c.Path)
	case TypeRemove:
		for p := range m.files {
			if p == c.Path || strings.HasPrefix(p, c.Path+"/") {
				delete(m.files, p)
			}
		}
	case TypeRename:
		for p, data := range m.files {
			if p == c.Path || strings.HasPrefix(p, c.Path+"/") {
				delete(m.files, p)
				m.files[c.NewPath+p[len(c.Path):]] = data
			}
		}
	}
}

func sameTree(t *testing.T, got, want map[string][]byte) {
	t.Helper()
	if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want))) {
		t.Fatalf("files differ:\n got %q\nwant %q", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	for p, w := range want {
		if !bytes.Equal(got[p], w) {
			t.Errorf("%s: content differs (%d bytes, want %d)", p, len(got[p]), len(w))
		}
	}
}

func mbstream(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("mbstream")
	if err != nil {
		t.Fatalf("mbstream is required for the interop tests: %v", err)
	}
	return path
}

// extract runs mbstream -x on stream into a new directory and returns the
// tree it made; mbstream exits 0 after some failures, so stderr must be
// empty too.
func extract(t *testing.T, stream []byte) map[string][]byte {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(mbstream(t), "-x", "-C", dir)
	cmd.Stdin = bytes.NewReader(stream)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("mbstream -x: %v: %s", err, stderr.String())
	}
	return testkit.ReadTree(t, dir)
}

// randomTree is a small datadir-like tree. mbstream -x creates only the last
// directory of a path (one mkdir, not mkdir -p), so a deeper directory needs
// an earlier file in its parent: written in sorted order, these do.
func randomTree(t *testing.T) map[string][]byte {
	rng := rand.New(rand.NewPCG(7, 11))
	rnd := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	return map[string][]byte{
		"ibdata1":                rnd(6<<20 + 4321),
		"backup-my.cnf":          []byte("[mysqld]\ninnodb_page_size=16384\n"),
		"db1/t1.ibd":             rnd(65536),
		"db1/t1.frm":             rnd(999),
		"db1/empty.MYD":          {},
		"db2/file.bin":           rnd(1 << 20),
		"db2/sub/deep.bin":       rnd(3000), // sorted after db2/file.bin, so db2 exists
		"xtrabackup_checkpoints": []byte("backup_type = full-backuped\n"),
	}
}

func TestInteropWriterToMbstream(t *testing.T) {
	tree := randomTree(t)
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, p := range slices.Sorted(maps.Keys(tree)) {
		if err := w.WriteFile(p, bytes.NewReader(tree[p]), 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	sameTree(t, extract(t, buf.Bytes()), tree)
}

func TestInteropSemanticsWithMbstream(t *testing.T) {
	// Every chunk type and the rewrite flag, as mariabackup 10.11 uses them
	// (aria log tail: seek back and overwrite; DDL during backup: re-copy
	// with rewrite, remove, rename), extracted by mbstream and by the model.
	chunks := []Chunk{
		p("aria_log.00000001", 0, strings.Repeat("A", 64)),
		p("aria_log.00000001", 64, strings.Repeat("B", 64)),
		s("aria_log.00000001", 20),
		p("aria_log.00000001", 20, "LSN1234"),
		e("aria_log.00000001"),
		p("hole", 0, "start"),
		s("hole", 100),
		p("hole", 100, "end"),
		e("hole"),
		e("db/empty.MYD"),
		p("db/t.frm", 0, "old definition, longer than the new one"),
		e("db/t.frm"),
		pw("db/t.frm", 0, "new definition"),
		e("db/t.frm"),
		p("db/gone.MAD", 0, "x"),
		e("db/gone.MAD"),
		d("db/gone.MAD"),
		p("db/a.MAI", 0, "index"),
		e("db/a.MAI"),
		r("db/a.MAI", "db/b.MAI"),
		p("db/a.MAI", 0, "a new a"),
		e("db/a.MAI"),
		p("dropped/t.MYD", 0, "data"),
		e("dropped/t.MYD"),
		d("dropped"),
		d("never/written"),
	}
	stream := writeAll(t, chunks)
	m := newModel()
	rd := NewReader(bytes.NewReader(stream))
	for {
		c, _, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		m.apply(&c)
	}
	got := extract(t, stream)
	sameTree(t, got, m.files)
	// Spot checks that the model itself is right, not just consistent.
	if want := strings.Repeat("A", 20) + "LSN1234" + strings.Repeat("A", 37) + strings.Repeat("B", 64); string(got["aria_log.00000001"]) != want {
		t.Errorf("seek overwrite: got %q", got["aria_log.00000001"])
	}
	if want := "start" + strings.Repeat("\x00", 95) + "end"; string(got["hole"]) != want {
		t.Errorf("seek hole: got %q", got["hole"])
	}
	if string(got["db/t.frm"]) != "new definition" {
		t.Errorf("rewrite did not truncate: %q", got["db/t.frm"])
	}
}

func TestInteropMbstreamToReader(t *testing.T) {
	src := t.TempDir()
	tree := randomTree(t)
	// mbstream -c splits at 10 MiB; make one file span several chunks.
	tree["big.ibd"] = bytes.Repeat([]byte("0123456789abcdef"), (21<<20)/16+3)
	for p, data := range tree {
		full := filepath.Join(src, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(mbstream(t), append([]string{"-c"}, slices.Sorted(maps.Keys(tree))...)...)
	cmd.Dir = src
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mbstream -c: %v: %s", err, stderr.String())
	}
	m := newModel()
	rd := NewReader(bytes.NewReader(out))
	counts := map[Type]int{}
	for {
		c, _, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		counts[c.Type]++
		m.apply(&c)
	}
	if rd.Offset() != int64(len(out)) {
		t.Fatalf("Offset %d, stream is %d bytes", rd.Offset(), len(out))
	}
	// One P per non-empty file, three for the 21 MiB one, none for the empty one.
	if counts[TypeEOF] != len(tree) || counts[TypePayload] != len(tree)+1 {
		t.Fatalf("chunk counts %v for %d files", counts, len(tree))
	}
	sameTree(t, m.files, tree)
}
