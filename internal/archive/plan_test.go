package archive

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/xbstream"
)

// countingBackend counts the bytes read from stream objects and which
// objects were opened.
type countingBackend struct {
	storage.Backend
	mu     sync.Mutex
	read   int64
	opened map[string]int
}

func (b *countingBackend) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	rc, err := b.Backend.Open(ctx, name, off, length)
	if err != nil || !strings.Contains(name, ".xbs") {
		return rc, err
	}
	b.mu.Lock()
	if b.opened == nil {
		b.opened = map[string]int{}
	}
	b.opened[name]++
	b.mu.Unlock()
	return &countingReader{rc, b}, nil
}

type countingReader struct {
	io.ReadCloser
	b *countingBackend
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.b.mu.Lock()
	r.b.read += int64(n)
	r.b.mu.Unlock()
	return n, err
}

// storedBytesOf sums the stored sizes of the frames listed for f.
func storedBytesOf(t *testing.T, fx *fixture, f File) int64 {
	t.Helper()
	s := fx.m.Streams[f.Stream]
	frames, err := ParseIndex(mustRead(t, filepath.Join(fx.root, "backups/x", s.Index.Name)), s.Size)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, r := range f.Frames {
		for i := r[0]; i <= r[1]; i++ {
			n += int64(frames[i].Stored)
		}
	}
	return n
}

func TestPartialReadFetchesTheFilesFramesAlone(t *testing.T) {
	fx := writeBackup(t, "zstd", 2)
	for _, f := range fx.m.Files {
		if len(f.Frames) == 0 {
			t.Fatalf("file %s has no frame ranges", f.Path)
		}
	}
	for _, want := range fx.files {
		var rec File
		for _, f := range fx.m.Files {
			if f.Path == want.path {
				rec = f
			}
		}
		cb := &countingBackend{Backend: fx.backend}
		var sink memSink
		err := Read(context.Background(), ReadOptions{Input: BackendInput{Backend: cb, Dir: "backups/x"}, Manifest: fx.m, Sink: &sink,
			Only: func(p string) bool { return p == want.path }})
		if err != nil {
			t.Fatalf("%s: %v", want.path, err)
		}
		got, ok := sink.files[want.path]
		if len(sink.files) != 1 || !ok || !bytes.Equal(got, want.data) {
			t.Fatalf("%s: partial read delivered %d files, or other content", want.path, len(sink.files))
		}
		if limit := storedBytesOf(t, fx, rec); cb.read > limit {
			t.Errorf("%s: read %d bytes, its frames store %d", want.path, cb.read, limit)
		}
		if other := fx.m.Streams[1-rec.Stream].Name; cb.opened["backups/x/"+other] != 0 {
			t.Errorf("%s: stream %s was opened though it holds no chosen file", want.path, other)
		}
	}
	// The big file's frames are few of the backup's.
	cb := &countingBackend{Backend: fx.backend}
	if err := Read(context.Background(), ReadOptions{Input: BackendInput{Backend: cb, Dir: "backups/x"}, Manifest: fx.m, Sink: &memSink{},
		Only: func(p string) bool { return p == "db1/t04.ibd" }}); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, s := range fx.m.Streams {
		total += s.Size
	}
	if cb.read*4 > total {
		t.Errorf("one small file read %d of the backup's %d bytes", cb.read, total)
	}
}

func TestPartialReadChecksWhatItReads(t *testing.T) {
	only := func(p string) bool { return p == "db0/t00.ibd" } // the 3 MiB file
	find := func(fx *fixture) File {
		for _, f := range fx.m.Files {
			if f.Path == "db0/t00.ibd" {
				return f
			}
		}
		t.Fatal("no db0/t00.ibd")
		return File{}
	}
	frameOf := func(t *testing.T, fx *fixture, n int) Frame {
		s := fx.m.Streams[find(fx).Stream]
		frames, err := ParseIndex(mustRead(t, filepath.Join(fx.root, "backups/x", s.Index.Name)), s.Size)
		if err != nil {
			t.Fatal(err)
		}
		return frames[n]
	}
	read := func(fx *fixture) error {
		return Read(context.Background(), ReadOptions{Input: BackendInput{Backend: fx.backend, Dir: "backups/x"}, Manifest: fx.m, Sink: &memSink{}, Only: only})
	}
	t.Run("a flipped byte in a chosen frame", func(t *testing.T) {
		fx := writeBackup(t, "zstd", 2)
		f := find(fx)
		n := f.Frames[0][0] + 1
		fr := frameOf(t, fx, n)
		flipByte(t, filepath.Join(fx.root, "backups/x", fx.m.Streams[f.Stream].Name), fr.Offset+int64(fr.Stored)/2)
		err := read(fx)
		if !IsCorrupt(err) || !strings.Contains(err.Error(), "checksum mismatch") {
			t.Fatalf("got %v, want a checksum mismatch", err)
		}
	})
	t.Run("a flipped byte in a frame not read", func(t *testing.T) {
		fx := writeBackup(t, "zstd", 2)
		f := find(fx)
		other := -1
		for n := range fx.m.Streams[f.Stream].Frames {
			in := false
			for _, r := range f.Frames {
				in = in || n >= r[0] && n <= r[1]
			}
			if !in {
				other = n
			}
		}
		if other < 0 {
			t.Fatal("every frame of the stream holds the file")
		}
		fr := frameOf(t, fx, other)
		flipByte(t, filepath.Join(fx.root, "backups/x", fx.m.Streams[f.Stream].Name), fr.Offset+int64(fr.Stored)/2)
		if err := read(fx); err != nil {
			t.Fatalf("damage outside the file's frames failed its read: %v", err)
		}
		if err := fx.read(t, nil); !IsCorrupt(err) {
			t.Fatalf("a whole read of the damaged backup: %v", err)
		}
	})
	t.Run("a wrong digest in the manifest", func(t *testing.T) {
		fx := writeBackup(t, "zstd", 2)
		for i := range fx.m.Files {
			if fx.m.Files[i].Path == "db0/t00.ibd" {
				fx.m.Files[i].Digest = DefaultHash + ":" + strings.Repeat("00", 32)
			}
		}
		if err := read(fx); !IsCorrupt(err) || !strings.Contains(err.Error(), "content digest") {
			t.Fatalf("got %v, want a content digest mismatch", err)
		}
	})
	t.Run("frame ranges that miss a chunk", func(t *testing.T) {
		fx := writeBackup(t, "zstd", 2)
		for i := range fx.m.Files {
			if f := &fx.m.Files[i]; f.Path == "db0/t00.ibd" {
				f.Frames = []FrameRange{{f.Frames[0][0] + 1, f.Frames[len(f.Frames)-1][1]}}
			}
		}
		if err := read(fx); !IsCorrupt(err) {
			t.Fatalf("got %v, want damage", err)
		}
	})
}

func TestRenamingStreamKeepsNoFrameRanges(t *testing.T) {
	b, c, w, add := chunkWriter(t, 1, 64)
	add(xbstream.Chunk{Type: xbstream.TypePayload, Path: "a/old", Payload: bytes.Repeat([]byte{1}, 100)})
	add(xbstream.Chunk{Type: xbstream.TypePayload, Path: "a/other", Payload: bytes.Repeat([]byte{2}, 100)})
	add(xbstream.Chunk{Type: xbstream.TypeEOF, Path: "a/other"})
	add(xbstream.Chunk{Type: xbstream.TypeEOF, Path: "a/old"})
	add(xbstream.Chunk{Type: xbstream.TypeRename, Path: "a/old", NewPath: "a/new"})
	res, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Files {
		if f.Frames != nil {
			t.Errorf("file %s has frame ranges %v in a stream that renamed a path", f.Path, f.Frames)
		}
	}
	m := &Manifest{Format: FormatVersion, ID: "x", Kind: KindPhysical, Codec: c.String(), Hash: DefaultHash, Streams: res.Streams, Files: res.Files}
	var sink memSink
	if err := Read(context.Background(), ReadOptions{Input: BackendInput{Backend: b, Dir: "backups/x"}, Manifest: m, Sink: &sink,
		Only: func(p string) bool { return p == "a/new" }}); err != nil {
		t.Fatal(err)
	}
	// The whole stream reaches the sink (memSink does not rename).
	if !bytes.Equal(sink.files["a/old"], bytes.Repeat([]byte{1}, 100)) || len(sink.files["a/other"]) != 100 {
		t.Errorf("the stream was not delivered whole: %d files", len(sink.files))
	}
}

func TestFrameRangesAreValidated(t *testing.T) {
	fx := writeBackup(t, "zstd", 2)
	for _, bad := range [][]FrameRange{
		{{0, fx.m.Streams[fx.m.Files[1].Stream].Frames}}, // past the stream's end
		{{2, 1}},         // backwards
		{{3, 4}, {1, 2}}, // out of order
		{{1, 2}, {3, 4}}, // adjacent runs are one
		{{-1, 0}},
	} {
		m := *fx.m
		m.Files = append([]File(nil), fx.m.Files...)
		m.Files[1].Frames = bad
		data, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseManifest(data); err == nil || !strings.Contains(err.Error(), "frame range") {
			t.Errorf("frames %v: got %v, want a frame range error", bad, err)
		}
	}
}

// inCounter adds up the bytes a Read counts in.
type inCounter struct{ in, out atomic.Int64 }

func (c *inCounter) In(n int64)  { c.in.Add(n) }
func (c *inCounter) Out(n int64) { c.out.Add(n) }

// unindexed hides BackendInput's FrameIndex.
type unindexed struct{ BackendInput }

// What a progress total takes a partial read to fetch is what it counts:
// the planned frames' stored bytes, read from the frame indexes; an input
// that cannot read them gets the frames' share of the stream.
func TestPlannedBytesIsWhatAPartialReadCounts(t *testing.T) {
	fx := writeBackup(t, "zstd", 2)
	in := BackendInput{Backend: fx.backend, Dir: "backups/x"}
	var whole int64
	for _, s := range fx.m.Streams {
		whole += s.Size
	}
	for _, want := range append(fx.files, testFile{path: ""}) {
		only := func(p string) bool { return p == want.path }
		if want.path == "" {
			only = nil
		}
		var c inCounter
		if err := Read(context.Background(), ReadOptions{Input: in, Manifest: fx.m, Sink: &memSink{}, Only: only, Counter: &c}); err != nil {
			t.Fatalf("%q: %v", want.path, err)
		}
		if got := PlannedBytes(context.Background(), fx.m, in, Plan(fx.m, in, only)); got != c.in.Load() {
			t.Errorf("%q: planned %d bytes, the read counted %d", want.path, got, c.in.Load())
		}
		guess := PlannedBytes(context.Background(), fx.m, unindexed{in}, Plan(fx.m, in, only))
		if guess <= 0 || guess > whole {
			t.Errorf("%q: without indexes, planned %d bytes of %d", want.path, guess, whole)
		}
	}
}
