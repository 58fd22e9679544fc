package xbstream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
)

// allTypes is a valid stream using every chunk type and flag.
func allTypes() []Chunk {
	return []Chunk{
		p("ibdata1", 0, "0123456789"),
		e("ibdata1"),
		p("aria_log.00000001", 0, "AAAAAAAAAA"),
		s("aria_log.00000001", 2),
		p("aria_log.00000001", 2, "LSN"),
		e("aria_log.00000001"),
		e("db/empty.MYD"),
		pw("db/t.frm", 0, "frm v1"),
		e("db/t.frm"),
		d("db/old.MAD"),
		r("db/a.MAI", "db/b.MAI"),
		pw("db/t.frm", 0, "frm v2"),
		e("db/t.frm"),
		{Type: TypeEOF, Flags: FlagIgnorable, Path: "x"},
	}
}

func writeAll(t testing.TB, chunks []Chunk) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for i := range chunks {
		if err := w.WriteChunk(&chunks[i]); err != nil {
			t.Fatalf("WriteChunk %d: %v", i, err)
		}
	}
	return buf.Bytes()
}

func TestRoundTripAllTypes(t *testing.T) {
	chunks := allTypes()
	stream := writeAll(t, chunks)
	// One byte at a time exercises every short read of the header logic.
	for name, src := range map[string]io.Reader{
		"whole":    bytes.NewReader(stream),
		"one byte": iotest.OneByteReader(bytes.NewReader(stream)),
	} {
		t.Run(name, func(t *testing.T) {
			rd := NewReader(src)
			var prevRaw []byte
			var off int64
			for i, want := range chunks {
				c, raw, err := rd.Next()
				if err != nil {
					t.Fatalf("Next %d: %v", i, err)
				}
				if c.Type != want.Type || c.Flags != want.Flags || c.Path != want.Path || c.NewPath != want.NewPath ||
					c.Offset != want.Offset || !bytes.Equal(c.Payload, want.Payload) {
					t.Fatalf("chunk %d = %+v, want %+v", i, c, want)
				}
				enc := mustAppend(t, nil, want)
				if !bytes.Equal(raw, enc) || !bytes.Equal(raw, stream[off:off+int64(len(raw))]) {
					t.Fatalf("chunk %d raw bytes differ from the encoding", i)
				}
				if len(c.Payload) > 0 && &c.Payload[0] != &raw[len(raw)-len(c.Payload)] {
					t.Fatalf("chunk %d payload does not alias raw", i)
				}
				if prevRaw != nil && &prevRaw[0] == &raw[0] {
					t.Fatalf("chunk %d reuses the previous raw buffer", i)
				}
				prevRaw = raw
				off += int64(len(raw))
				if rd.Offset() != off {
					t.Fatalf("Offset() = %d after chunk %d, want %d", rd.Offset(), i, off)
				}
			}
			if _, _, err := rd.Next(); err != io.EOF {
				t.Fatalf("Next at end = %v, want io.EOF", err)
			}
			if _, _, err := rd.Next(); err != io.EOF {
				t.Fatalf("second Next at end = %v, want io.EOF", err)
			}
		})
	}
}

func TestWriteFile(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 10000)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	tests := []struct {
		size, chunk int
		wantP       int
	}{{0, 100, 0}, {1, 100, 1}, {100, 100, 1}, {101, 100, 2}, {10000, 999, 11}}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d_by_%d", tt.size, tt.chunk), func(t *testing.T) {
			var buf bytes.Buffer
			w := NewWriter(&buf)
			if err := w.WriteFile("dir/f", bytes.NewReader(data[:tt.size]), tt.chunk); err != nil {
				t.Fatal(err)
			}
			rd := NewReader(&buf)
			var got []byte
			var nP, nE int
			for {
				c, _, err := rd.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				switch c.Type {
				case TypePayload:
					nP++
					if len(c.Payload) > tt.chunk {
						t.Fatalf("payload of %d bytes exceeds chunk size %d", len(c.Payload), tt.chunk)
					}
					got = append(got, c.Payload...)
				case TypeEOF:
					nE++
				}
			}
			if !bytes.Equal(got, data[:tt.size]) || nP != tt.wantP || nE != 1 {
				t.Fatalf("got %d bytes in %d P and %d E chunks, want %d bytes in %d P and 1 E", len(got), nP, nE, tt.size, tt.wantP)
			}
		})
	}
}

func TestWriteFileErrors(t *testing.T) {
	w := NewWriter(io.Discard)
	if err := w.WriteFile("a", strings.NewReader("x"), 0); err == nil {
		t.Error("chunk size 0 accepted")
	}
	if err := w.WriteFile("/abs", strings.NewReader("x"), 10); err == nil {
		t.Error("absolute path accepted")
	}
	// A source that fails with io.ErrUnexpectedEOF is a failure, not a short file.
	err := w.WriteFile("b", io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(io.ErrUnexpectedEOF)), 10)
	if err == nil || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("WriteFile with a failing source = %v, want an error naming the file", err)
	}
	failing := NewWriter(errWriter{})
	if err := failing.WriteFile("c", strings.NewReader("abc"), 10); err == nil {
		t.Error("write error not reported")
	}
	if err := failing.WriteChunk(&Chunk{Type: TypeEOF, Path: "d"}); err == nil {
		t.Error("Writer not sticky after a write error")
	}
}

type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriterRefusesInvalidStream(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, c := range []Chunk{p("a", 0, "x"), e("a")} {
		if err := w.WriteChunk(&c); err != nil {
			t.Fatal(err)
		}
	}
	n := buf.Len()
	c := p("a", 0, "again")
	if err := w.WriteChunk(&c); err == nil || !strings.Contains(err.Error(), "rewrite") {
		t.Fatalf("reopen without rewrite: %v", err)
	}
	if buf.Len() != n {
		t.Fatal("refused chunk was written")
	}
}

func TestReaderErrors(t *testing.T) {
	good := writeAll(t, []Chunk{p("db/t.ibd", 0, "abcdef"), e("db/t.ibd")})
	firstLen := int64(len(mustAppend(t, nil, p("db/t.ibd", 0, "abcdef"))))
	badCRC := rawPayload("db/u.ibd", 0, []byte("data"), 7)
	tests := []struct {
		name   string
		stream []byte
		want   []string // substrings of the error
		eof    bool
	}{
		{"bad magic after a chunk", append(append([]byte{}, good[:firstLen]...), "XBSTCK99"...),
			[]string{fmt.Sprintf("stream offset %d", firstLen), "bad chunk magic"}, false},
		{"bad crc", append(append([]byte{}, good...), badCRC...),
			[]string{fmt.Sprintf("stream offset %d", len(good)), `"db/u.ibd"`, "checksum mismatch"}, false},
		{"gap", writeAllRaw(t, p("a", 0, "xx"), p("a", 5, "y")),
			[]string{"stream offset 37", "expected 2"}, false},
		{"open at end", good[:firstLen], []string{fmt.Sprintf("stream offset %d", firstLen), `"db/t.ibd"`, "open"}, true},
		{"percona sparse", append(writeAllRaw(t, p("test/t1.ibd", 0, "x")), perconaSparse("test/t1.ibd", 1, []uint32{0}, []uint32{4}, []byte("abcd"))...),
			[]string{"Percona", `"test/t1.ibd"`}, false},
		{"percona sparse at end", perconaSparse("test/t1.ibd", 0, []uint32{0}, []uint32{4}, []byte("abcd")),
			[]string{"Percona"}, false},
		{"path too long", rawHeader(0, 'P', strings.Repeat("p", MaxPathLen)), []string{"stream offset 0", "path length 512"}, false},
		{"unknown type", rawHeader(0, 'Q', "a"), []string{"unknown chunk type Q"}, false},
		{"forged huge length", func() []byte {
			b := rawHeader(0, 'P', "a")
			b = binary.LittleEndian.AppendUint64(b, maxPayloadLen)
			b = binary.LittleEndian.AppendUint64(b, 0)
			b = binary.LittleEndian.AppendUint32(b, 0)
			return append(b, "short"...)
		}(), []string{`chunk P for "a" truncated`}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rd := NewReader(bytes.NewReader(tt.stream))
			var err error
			for err == nil {
				_, _, err = rd.Next()
			}
			if err == io.EOF {
				t.Fatal("stream read to a clean end")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if errors.Is(err, io.ErrUnexpectedEOF) != tt.eof {
				t.Errorf("errors.Is(%q, io.ErrUnexpectedEOF) = %v, want %v", err, !tt.eof, tt.eof)
			}
			if _, _, again := rd.Next(); again == nil || again.Error() != err.Error() {
				t.Errorf("error not sticky: %v then %v", err, again)
			}
		})
	}
}

// writeAllRaw encodes chunks without stream validation, for forged streams.
func writeAllRaw(t testing.TB, cs ...Chunk) []byte { return mustAppend(t, nil, cs...) }

func TestReaderTruncated(t *testing.T) {
	stream := writeAll(t, allTypes())
	// Every cut point: at a chunk boundary the error is "files open" or a
	// clean end, inside a chunk it is a truncated chunk; both wrap
	// io.ErrUnexpectedEOF unless the cut leaves a complete valid stream.
	boundaries := map[int]bool{}
	off := 0
	for _, c := range allTypes() {
		off += len(mustAppend(t, nil, c))
		boundaries[off] = true
	}
	for cut := 1; cut < len(stream); cut++ {
		rd := NewReader(bytes.NewReader(stream[:cut]))
		var err error
		for err == nil {
			_, _, err = rd.Next()
		}
		if err == io.EOF {
			if !boundaries[cut] {
				t.Fatalf("cut at %d (inside a chunk) read to a clean end", cut)
			}
			continue
		}
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("cut at %d: error %v does not match io.ErrUnexpectedEOF", cut, err)
		}
		if !strings.Contains(err.Error(), "stream offset") {
			t.Fatalf("cut at %d: error %q lacks the offset", cut, err)
		}
	}
}

func TestReaderLargePayload(t *testing.T) {
	// Larger than exactAllocLen: read in growing steps.
	data := make([]byte, exactAllocLen+12345)
	for i := range data {
		data[i] = byte(i * 7)
	}
	b := rawPayload("big", 0, data, crc32.ChecksumIEEE(data))
	b = append(b, rawHeader(0, 'E', "big")...)
	rd := NewReader(bytes.NewReader(b))
	c, raw, err := rd.Next()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(c.Payload, data) || len(raw) != len(b)-fixedLen-3 {
		t.Fatal("large payload differs")
	}
	if _, _, err := rd.Next(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := rd.Next(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
}

func TestReaderReadError(t *testing.T) {
	stream := writeAll(t, []Chunk{p("a", 0, "xyz"), e("a")})
	src := io.MultiReader(bytes.NewReader(stream[:20]), iotest.ErrReader(errors.New("connection reset")))
	rd := NewReader(src)
	_, _, err := rd.Next()
	if err == nil || !strings.Contains(err.Error(), "connection reset") || errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("read error = %v, want the underlying error", err)
	}
}

func BenchmarkReader(b *testing.B) {
	data := make([]byte, 10<<20)
	var stream []byte
	for i := range 8 {
		stream = mustAppend(b, stream, p("f", uint64(i*len(data)), string(data)))
	}
	stream = mustAppend(b, stream, e("f"))
	b.SetBytes(int64(len(stream)))
	b.ResetTimer()
	for b.Loop() {
		rd := NewReader(bytes.NewReader(stream))
		for {
			_, _, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}
