package archive

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/storage/local"
	"github.com/backstream/backstream/internal/xbstream"
)

// testFile is one file of a synthetic backup stream.
type testFile struct {
	path string
	data []byte
}

func testFiles(seed uint64) []testFile {
	rng := rand.New(rand.NewPCG(seed, 1))
	files := []testFile{{path: "empty", data: nil}}
	for i := range 12 {
		n := rng.IntN(400 << 10)
		if i == 0 {
			n = 3 << 20 // larger than a frame
		}
		b := make([]byte, n)
		for j := range b {
			// compressible but not trivial, with every byte value present
			if j%7 == 0 {
				b[j] = byte(rng.Uint32())
			} else {
				b[j] = byte(j / 1024)
			}
		}
		files = append(files, testFile{path: fmt.Sprintf("db%d/t%02d.ibd", i%3, i), data: b})
	}
	return files
}

// streamChunks encodes files as an xbstream the way mariabackup does: the
// files' chunks interleaved, each file in order, chunks of up to chunkSize.
func streamChunks(t *testing.T, files []testFile, chunkSize int) [][]byte {
	t.Helper()
	var out [][]byte
	offsets := make([]int, len(files))
	ended := make([]bool, len(files))
	for left := len(files); left > 0; {
		for i, f := range files {
			if ended[i] {
				continue
			}
			c := xbstream.Chunk{Type: xbstream.TypeEOF, Path: f.path}
			if offsets[i] < len(f.data) {
				end := min(len(f.data), offsets[i]+chunkSize)
				c = xbstream.Chunk{Type: xbstream.TypePayload, Path: f.path, Offset: uint64(offsets[i]), Payload: f.data[offsets[i]:end]}
				offsets[i] = end
			} else {
				ended[i] = true
				left--
			}
			raw, err := xbstream.AppendChunk(nil, &c)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, raw)
		}
	}
	return out
}

// memSink reassembles the files it is fed.
type memSink struct {
	mu    sync.Mutex
	files map[string][]byte
}

func (s *memSink) Chunk(c *xbstream.Chunk) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files == nil {
		s.files = map[string][]byte{}
	}
	b := s.files[c.Path]
	if c.Type == xbstream.TypePayload {
		if end := int(c.Offset) + len(c.Payload); len(b) < end {
			b = append(b, make([]byte, end-len(b))...)
		}
		copy(b[c.Offset:], c.Payload)
	}
	s.files[c.Path] = b
	return nil
}

type fixture struct {
	backend *local.Backend
	root    string
	m       *Manifest
	files   []testFile
}

func writeBackup(t *testing.T, spec string, streams int) *fixture {
	t.Helper()
	return writeBackupOf(t, spec, streams, 256<<10, 100<<10, testFiles(7))
}

// writeBackupOf writes files (one chunk of chunkSize at a time) into a
// backup of streams streams cut into frames of frameSize, with a manifest
// that went through Marshal and ParseManifest.
func writeBackupOf(t *testing.T, spec string, streams, frameSize, chunkSize int, files []testFile) *fixture {
	t.Helper()
	root := t.TempDir()
	b, err := local.New(root)
	if err != nil {
		t.Fatal(err)
	}
	c, err := codec.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(context.Background(), WriterOptions{Output: BackendOutput{Backend: b, Dir: "backups/x", Hash: DefaultHash},
		Streams: streams, Codec: c, FrameSize: frameSize})
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range streamChunks(t, files, chunkSize) {
		ch, _, err := xbstream.DecodeChunk(raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Add(&ch, raw); err != nil {
			t.Fatal(err)
		}
	}
	res, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	m := &Manifest{Format: FormatVersion, ID: "x", Kind: KindPhysical, Codec: c.String(), Hash: DefaultHash, Streams: res.Streams, Files: res.Files, Barriers: res.Barriers}
	data, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if m, err = ParseManifest(data); err != nil {
		t.Fatal(err)
	}
	return &fixture{backend: b, root: root, m: m, files: files}
}

func (f *fixture) read(t *testing.T, sink Sink) error {
	t.Helper()
	return Read(context.Background(), ReadOptions{Input: BackendInput{Backend: f.backend, Dir: "backups/x"}, Manifest: f.m, Sink: sink})
}

func TestRoundTrip(t *testing.T) {
	for _, spec := range []string{"zstd", "lz4", "gzip:1", "none"} {
		t.Run(spec, func(t *testing.T) {
			f := writeBackup(t, spec, 3)
			if len(f.m.Streams) != 3 {
				t.Fatalf("%d streams", len(f.m.Streams))
			}
			used := map[int]bool{}
			for _, file := range f.m.Files {
				used[file.Stream] = true
				if file.Digest == "" {
					t.Errorf("file %s has no digest though it was written front to back", file.Path)
				}
			}
			if len(used) != 3 {
				t.Errorf("files spread over %d streams, want 3", len(used))
			}
			var sink memSink
			if err := f.read(t, &sink); err != nil {
				t.Fatal(err)
			}
			if len(sink.files) != len(f.files) {
				t.Fatalf("restored %d files, want %d", len(sink.files), len(f.files))
			}
			for _, file := range f.files {
				if !bytes.Equal(sink.files[file.path], file.data) {
					t.Errorf("file %s differs after the round trip", file.path)
				}
			}
		})
	}
}

// Each stream object, decoded front to back, must be a complete xbstream on
// its own: that is what makes `zstd -dc OBJECT | mbstream -x` work.
func TestStreamObjectIsXbstream(t *testing.T) {
	f := writeBackup(t, "none", 2)
	for _, s := range f.m.Streams {
		data, err := os.ReadFile(filepath.Join(f.root, "backups/x", s.Name))
		if err != nil {
			t.Fatal(err)
		}
		r := xbstream.NewReader(bytes.NewReader(data))
		for {
			_, _, err := r.Next()
			if err != nil {
				if err.Error() != "EOF" {
					t.Fatalf("%s: %v", s.Name, err)
				}
				break
			}
		}
	}
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[off] ^= 0x40
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestCorruptionIsCaught(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, f *fixture)
		want   string
	}{
		{"flipped byte in a frame", func(t *testing.T, f *fixture) {
			s := f.m.Streams[1]
			flipByte(t, filepath.Join(f.root, "backups/x", s.Name), s.Size/2)
		}, "checksum mismatch"},
		{"truncated object", func(t *testing.T, f *fixture) {
			s := f.m.Streams[0]
			if err := os.Truncate(filepath.Join(f.root, "backups/x", s.Name), s.Size-10); err != nil {
				t.Fatal(err)
			}
		}, "truncated"},
		{"appended bytes", func(t *testing.T, f *fixture) {
			p := filepath.Join(f.root, "backups/x", f.m.Streams[0].Name)
			fh, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			fh.Write([]byte("junk"))
			fh.Close()
		}, "longer than its index"},
		{"damaged index", func(t *testing.T, f *fixture) {
			flipByte(t, filepath.Join(f.root, "backups/x", f.m.Streams[0].Index.Name), 9)
		}, "digest"},
		{"missing object", func(t *testing.T, f *fixture) {
			os.Remove(filepath.Join(f.root, "backups/x", f.m.Streams[2].Name))
		}, "00002"},
		{"file digest in the manifest differs", func(t *testing.T, f *fixture) {
			f.m.Files[3].Digest = DefaultHash + ":" + strings.Repeat("00", 32)
		}, "content digest"},
		{"file missing from the manifest", func(t *testing.T, f *fixture) {
			f.m.Files = f.m.Files[1:]
		}, "not in the manifest"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := writeBackup(t, "zstd", 3)
			tc.damage(t, f)
			err := f.read(t, nil)
			if err == nil {
				t.Fatal("read succeeded on a damaged backup")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
			if tc.name != "missing object" && !IsCorrupt(err) {
				t.Errorf("error %q is not a CorruptError", err)
			}
		})
	}
}

func TestFlippedByteNamesObjectAndFrame(t *testing.T) {
	f := writeBackup(t, "zstd", 2)
	s := f.m.Streams[0]
	frames, err := ParseIndex(mustRead(t, filepath.Join(f.root, "backups/x", s.Index.Name)), s.Size)
	if err != nil {
		t.Fatal(err)
	}
	target := frames[len(frames)/2]
	flipByte(t, filepath.Join(f.root, "backups/x", s.Name), target.Offset+int64(target.Stored)/2)
	err = f.read(t, nil)
	want := fmt.Sprintf("%s): frame %d at offset %d", s.Name, len(frames)/2, target.Offset)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want it to contain %q", err, want)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A failing backend makes Close fail and leaves no stream objects behind.
func TestWriterAbortRemovesObjects(t *testing.T) {
	root := t.TempDir()
	b, err := local.New(root)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := codec.Parse("zstd")
	w, err := NewWriter(context.Background(), WriterOptions{Output: BackendOutput{Backend: b, Dir: "backups/x", Hash: DefaultHash}, Streams: 2, Codec: c, FrameSize: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range streamChunks(t, testFiles(3), 100<<10)[:20] {
		ch, _, _ := xbstream.DecodeChunk(raw)
		if err := w.Add(&ch, raw); err != nil {
			t.Fatal(err)
		}
	}
	w.Abort(errors.New("test abort"))
	objs, err := b.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 0 {
		t.Fatalf("objects left after abort: %v", objs)
	}
}

func TestParseManifestRejects(t *testing.T) {
	good := writeBackup(t, "zstd", 1).m
	cases := map[string]func(m *Manifest){
		"future format":          func(m *Manifest) { m.Format = 2 },
		"unknown kind":           func(m *Manifest) { m.Kind = "weird" },
		"unknown hash":           func(m *Manifest) { m.Hash = "md5" },
		"escaping name":          func(m *Manifest) { m.Streams[0].Name = "../../etc/passwd" },
		"absolute name":          func(m *Manifest) { m.Streams[0].Name = "/etc/passwd" },
		"bad digest":             func(m *Manifest) { m.Streams[0].Digest = "blake3:zz" },
		"a checksum as hash":     func(m *Manifest) { m.Hash = HashXXH3 },
		"a checksum of a stream": func(m *Manifest) { m.Streams[0].Digest = HashXXH3 + ":00" },
		"unknown file hash":      func(m *Manifest) { m.FileHash = "crc32" },
		"a file digest of another algorithm": func(m *Manifest) {
			m.Files[0].Digest = HashXXH3 + ":" + strings.Repeat("00", 16)
		},
		"stream out of range": func(m *Manifest) { m.Files[0].Stream = 5 },
		"no streams":          func(m *Manifest) { m.Streams = nil },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			m := *good
			m.Streams = append([]Stream(nil), good.Streams...)
			m.Files = append([]File(nil), good.Files...)
			mutate(&m)
			data, _ := m.Marshal()
			if _, err := ParseManifest(data); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(`{"format":1,"id":"x","kind":"physical","codec":"zstd:1","hash":"blake3","streams":[{"name":"streams/00000.xbs.zst","size":1,"digest":"blake3:00","frames":1,"raw_size":1,"index":{"name":"streams/00000.idx","size":20,"digest":"blake3:00"}}],"files":[{"path":"a","size":1,"stream":0}]}`))
	f.Add([]byte(`{}`))
	if sealed, err := positionedManifest().Marshal(); err == nil {
		f.Add(sealed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest(b)
		if err != nil {
			return
		}
		if _, err := m.Marshal(); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzParseIndex(f *testing.F) {
	rec := appendIndexRecord([]byte(indexMagic), Frame{Stored: 10, Raw: 20, CRC: 1})
	f.Add(rec, int64(10))
	f.Add([]byte(indexMagic), int64(0))
	f.Fuzz(func(t *testing.T, b []byte, size int64) {
		frames, err := ParseIndex(b, size)
		if err != nil {
			return
		}
		var sum int64
		for _, fr := range frames {
			if fr.Offset != sum {
				t.Fatalf("offset %d, want %d", fr.Offset, sum)
			}
			sum += int64(fr.Stored)
		}
		if sum != size {
			t.Fatalf("frames cover %d, size %d", sum, size)
		}
	})
}

// A stream object crafted by hand (not by our writer) whose chunks name
// "../x" or "/etc/x" must be refused on read, before any sink sees them.
func TestCraftedEscapingPathsAreRefused(t *testing.T) {
	for _, bad := range []string{"../x", "/etc/x", "a/../../x"} {
		t.Run(bad, func(t *testing.T) {
			f := writeBackup(t, "none", 1)
			// Hand-encode one payload chunk for the bad path.
			payload := []byte("pwned")
			var chunk []byte
			chunk = append(chunk, "XBSTCK01"...)
			chunk = append(chunk, 0, 'P')
			chunk = binaryLE32(chunk, uint32(len(bad)))
			chunk = append(chunk, bad...)
			chunk = binaryLE64(chunk, uint64(len(payload)))
			chunk = binaryLE64(chunk, 0)
			chunk = binaryLE32(chunk, crc32IEEE(payload))
			chunk = append(chunk, payload...)
			// Make it the object's only frame, with a matching index and
			// manifest, as an attacker with write access could.
			dir := filepath.Join(f.root, "backups/x")
			s := &f.m.Streams[0]
			if err := os.WriteFile(filepath.Join(dir, s.Name), chunk, 0o600); err != nil {
				t.Fatal(err)
			}
			idx := appendIndexRecord([]byte(indexMagic), Frame{Stored: uint32(len(chunk)), Raw: uint32(len(chunk)), CRC: crc32c(chunk)})
			os.WriteFile(filepath.Join(dir, s.Index.Name), idx, 0o600)
			s.Size, s.Frames, s.RawSize = int64(len(chunk)), 1, int64(len(chunk))
			s.Digest, s.Index.Digest, s.Index.Size = digestOf(chunk), digestOf(idx), int64(len(idx))
			f.m.Files = []File{{Path: bad, Size: int64(len(payload)), Stream: 0}}
			var sink memSink
			err := f.read(t, &sink)
			if err == nil || !IsCorrupt(err) {
				t.Fatalf("read of a crafted %q: %v, want a corruption error", bad, err)
			}
			if len(sink.files) != 0 {
				t.Errorf("the sink saw %v", sink.files)
			}
		})
	}
}

func binaryLE32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }
func binaryLE64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }
func crc32IEEE(b []byte) uint32            { return crc32.ChecksumIEEE(b) }
func crc32c(b []byte) uint32               { return crc32.Checksum(b, castagnoli) }
func digestOf(b []byte) string {
	h, _ := NewHash(DefaultHash)
	h.Write(b)
	return formatDigest(DefaultHash, h)
}

// A removal travels in the stream that holds everything below it; one whose
// paths are spread over streams becomes a barrier: on restore every stream
// applies what came before it, then the removal, then the rest.
// chunkWriter starts a zstd Writer of streams streams (frames of
// frameSize; 0 for the default) into a new local backend, and returns
// them with a function that adds one chunk.
func chunkWriter(t *testing.T, streams, frameSize int) (*local.Backend, codec.Codec, *Writer, func(xbstream.Chunk)) {
	t.Helper()
	b, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, _ := codec.Parse("zstd")
	w, err := NewWriter(context.Background(), WriterOptions{Output: BackendOutput{Backend: b, Dir: "backups/x", Hash: DefaultHash}, Streams: streams, Codec: c, FrameSize: frameSize})
	if err != nil {
		t.Fatal(err)
	}
	add := func(ch xbstream.Chunk) {
		t.Helper()
		raw, err := xbstream.AppendChunk(nil, &ch)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Add(&ch, raw); err != nil {
			t.Fatal(err)
		}
	}
	return b, c, w, add
}

func TestRemoveAcrossStreams(t *testing.T) {
	b, c, w, add := chunkWriter(t, 2, 0)
	file := func(p string, n int) {
		add(xbstream.Chunk{Type: xbstream.TypePayload, Path: p, Payload: bytes.Repeat([]byte{byte(n)}, n)})
		add(xbstream.Chunk{Type: xbstream.TypeEOF, Path: p})
	}
	file("a/x", 1000)                                               // stream 0
	file("a/y", 10)                                                 // stream 1, the less loaded
	file("b/z", 10)                                                 // stream 1
	file("c/p#P#p0", 10)                                            // stream 1
	add(xbstream.Chunk{Type: xbstream.TypeRemove, Path: "b"})       // one holder: no barrier
	add(xbstream.Chunk{Type: xbstream.TypeRemove, Path: "c/p#P#*"}) // a pattern, one holder
	add(xbstream.Chunk{Type: xbstream.TypeRemove, Path: "a"})       // spread: a barrier
	file("a/new", 2000)
	res, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Barriers) != 1 || res.Barriers[0].Path != "a" {
		t.Fatalf("barriers %+v, want one for a", res.Barriers)
	}
	var paths []string
	for _, f := range res.Files {
		paths = append(paths, f.Path)
	}
	if fmt.Sprint(paths) != "[a/new c/p#P#p0]" {
		// mbstream removes only a file named exactly like the pattern's prefix.
		t.Errorf("manifest files %v, want [a/new c/p#P#p0]", paths)
	}
	m := &Manifest{Format: FormatVersion, ID: "x", Kind: KindPhysical, Codec: c.String(), Hash: DefaultHash,
		Streams: res.Streams, Files: res.Files, Barriers: res.Barriers}
	data, _ := m.Marshal()
	if m, err = ParseManifest(data); err != nil {
		t.Fatal(err)
	}
	for range 20 { // the order must hold however the goroutines interleave
		var sink eventSink
		if err := Read(context.Background(), ReadOptions{Input: BackendInput{Backend: b, Dir: "backups/x"}, Manifest: m, Sink: &sink}); err != nil {
			t.Fatal(err)
		}
		pos := map[string]int{}
		for i, e := range sink.events {
			if _, seen := pos[e]; !seen {
				pos[e] = i
			}
		}
		if !(pos["E a/x"] < pos["D a"] && pos["E a/y"] < pos["D a"] && pos["D a"] < pos["P a/new"]) {
			t.Fatalf("events out of order: %v", sink.events)
		}
	}
}

// eventSink records the order in which chunks arrive.
type eventSink struct {
	mu     sync.Mutex
	events []string
}

func (s *eventSink) Chunk(c *xbstream.Chunk) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, string(rune(c.Type))+" "+c.Path)
	return nil
}

// stuckOutput's streams accept no frame until their context ends: a
// destination that stalls.
type stuckOutput struct{}

func (stuckOutput) OpenStream(ctx context.Context, _ int, _ string) (StreamOutput, error) {
	return stuckStream{ctx}, nil
}

type stuckStream struct{ ctx context.Context }

func (s stuckStream) WriteFrame(Frame, []byte) error  { <-s.ctx.Done(); return s.ctx.Err() }
func (s stuckStream) Close(st Stream) (Stream, error) { return st, s.ctx.Err() }
func (stuckStream) Abort(error)                       {}

// A backup cancelled from outside (Ctrl-C) while every queue of the writer
// is full returns at once from Add, with the cancellation as its error,
// instead of waiting for goroutines that wait for more input.
func TestWriterCancelledWhileFull(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c, _ := codec.Parse("zstd")
	w, err := NewWriter(ctx, WriterOptions{Output: stuckOutput{}, Streams: 2, Workers: 1, Codec: c, FrameSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	var added atomic.Int64
	done := make(chan error, 1)
	go func() {
		for {
			for _, raw := range streamChunks(t, testFiles(4), 64<<10) {
				ch, _, _ := xbstream.DecodeChunk(raw)
				if err := w.Add(&ch, raw); err != nil {
					done <- err
					return
				}
				added.Add(1)
			}
		}
	}()
	// Wait until Add blocks: every queue is full.
	for last := int64(-1); added.Load() != last; time.Sleep(300 * time.Millisecond) {
		last = added.Load()
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Add after the cancel: %v, want context.Canceled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Add still blocked 20 s after the backup was cancelled")
	}
	w.Abort(context.Canceled)
}
