package codec

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

func TestParse(t *testing.T) {
	tests := []struct {
		spec              string
		name, str, suffix string
		level             int
	}{
		{"", "zstd", spec("zstd", zstdDefaultLevel), ".zst", zstdDefaultLevel},
		{"zstd", "zstd", spec("zstd", zstdDefaultLevel), ".zst", zstdDefaultLevel},
		{"zstd:1", "zstd", "zstd:1", ".zst", 1},
		{"zstd:4", "zstd", "zstd:4", ".zst", 4},
		{" ZSTD:3 ", "zstd", "zstd:3", ".zst", 3},
		{"lz4", "lz4", "lz4:1", ".lz4", 1},
		{"lz4:9", "lz4", "lz4:9", ".lz4", 9},
		{"gzip", "gzip", spec("gzip", gzipDefaultLevel), ".gz", gzipDefaultLevel},
		{"gzip:1", "gzip", "gzip:1", ".gz", 1},
		{"none", "none", "none", "", 0},
	}
	for _, tt := range tests {
		c, err := Parse(tt.spec)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.spec, err)
			continue
		}
		if c.Name() != tt.name || c.String() != tt.str || c.Suffix() != tt.suffix || c.Level() != tt.level {
			t.Errorf("Parse(%q) = %s/%s/%q/%d, want %s/%s/%q/%d", tt.spec, c.Name(), c, c.Suffix(), c.Level(), tt.name, tt.str, tt.suffix, tt.level)
		}
		again, err := Parse(c.String())
		if err != nil || again != c {
			t.Errorf("Parse(%q.String()=%q) = %v, %v; want the same codec", tt.spec, c.String(), again, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ spec, want string }{
		{"brotli", "unknown codec"},
		{"zstd:0", "1 to 19"},
		{"zstd:20", "1 to 19"},
		{"zstd:x", "out of range"},
		{"zstd:", "out of range"},
		{"lz4:10", "1 to 9"},
		{"gzip:0", "1 to 9"},
		{"none:1", "takes no level"},
		{"zstd:1:2", "out of range"},
	}
	for _, tt := range tests {
		c, err := Parse(tt.spec)
		if err == nil {
			t.Errorf("Parse(%q) = %v, want an error", tt.spec, c)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.spec) {
			t.Errorf("Parse(%q) error %q should name the spec and say %q", tt.spec, err, tt.want)
		}
	}
	_, err := Parse("brotli")
	for _, name := range []string{"zstd[:1-19]", "lz4[:1-9]", "gzip[:1-9]", "none"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("unknown codec error %q does not list %q", err, name)
		}
	}
}

func TestForSuffix(t *testing.T) {
	for _, c := range defaultCodecs() {
		got, err := ForSuffix(c.Suffix())
		if err != nil || got.Name() != c.Name() {
			t.Errorf("ForSuffix(%q) = %v, %v; want %s", c.Suffix(), got, err, c.Name())
		}
	}
	if _, err := ForSuffix(".bz2"); err == nil {
		t.Error("ForSuffix(.bz2) succeeded")
	}
}

// roundTrip compresses src with c after a prefix and decompresses it after
// another prefix, checking that both prefixes survive (append semantics).
func roundTrip(t testing.TB, c Codec, src []byte) []byte {
	t.Helper()
	frame, err := c.Compress([]byte("head"), src)
	if err != nil {
		t.Fatalf("%s: Compress(%d bytes): %v", c, len(src), err)
	}
	if !bytes.HasPrefix(frame, []byte("head")) {
		t.Fatalf("%s: Compress lost the prefix of dst", c)
	}
	frame = frame[4:]
	out, err := c.Decompress([]byte("xy"), frame, len(src))
	if err != nil {
		t.Fatalf("%s: Decompress(%d-byte frame, %d): %v", c, len(frame), len(src), err)
	}
	if string(out[:2]) != "xy" || !bytes.Equal(out[2:], src) {
		t.Fatalf("%s: round trip of %d bytes gave %d different bytes", c, len(src), len(out)-2)
	}
	return frame
}

func TestRoundTrip(t *testing.T) {
	inputs := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"one", []byte{'x'}},
		{"random100k", randomBytes(100<<10, 1)},
		{"text512K", textLines(512<<10, 2)},
		{"innodb8M", innodbLike(8<<20, 3)},
		{"zeros8M", make([]byte, 8<<20)},
	}
	for _, c := range allCodecs() {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			for _, in := range inputs {
				data := in.data
				if len(data) > 1<<20 && !cheapLevel(c) {
					// The slow levels see the same kind of data, less of it,
					// to keep the package's tests quick under -race.
					data = data[:256<<10]
				}
				frame := roundTrip(t, c, data)
				if c.Name() != "none" && len(data) >= 256<<10 && len(frame) >= len(data)*9/10 {
					t.Errorf("%s: %s compressed to %d of %d bytes: not compressing", c, in.name, len(frame), len(in.data))
				}
			}
		})
	}
}

// TestDecompressForeign decodes frames written by the libraries' other
// writers, with the choices the stock tools make (no content size, linked
// blocks, several blocks), not only what Compress writes.
func TestDecompressForeign(t *testing.T) {
	data := innodbLike(1<<20, 4)
	var zbuf, lbuf, gbuf bytes.Buffer
	zw, err := zstd.NewWriter(&zbuf, zstd.WithEncoderCRC(false), zstd.WithWindowSize(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	lw := lz4.NewWriter(&lbuf)
	if err := lw.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.BlockChecksumOption(true), lz4.ChecksumOption(false)); err != nil {
		t.Fatal(err)
	}
	gw := gzip.NewWriter(&gbuf)
	gw.Name = "file.xbs"
	gw.Comment = "a comment"
	for _, w := range []interface {
		Write([]byte) (int, error)
		Close() error
	}{zw, lw, gw} {
		for i := 0; i < len(data); i += 100 << 10 {
			if _, err := w.Write(data[i:min(len(data), i+100<<10)]); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		c     Codec
		frame []byte
	}{{Zstd{1}, zbuf.Bytes()}, {LZ4{1}, lbuf.Bytes()}, {Gzip{6}, gbuf.Bytes()}} {
		out, err := tt.c.Decompress(nil, tt.frame, len(data))
		if err != nil || !bytes.Equal(out, data) {
			t.Errorf("%s: foreign frame: %v (equal %v)", tt.c, err, bytes.Equal(out, data))
		}
		if _, err := tt.c.Decompress(nil, tt.frame, len(data)-1); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: foreign frame with size-1: %v, want ErrCorrupt", tt.c, err)
		}
		if _, err := tt.c.Decompress(nil, tt.frame, len(data)+1); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: foreign frame with size+1: %v, want ErrCorrupt", tt.c, err)
		}
	}
}

// expectCorrupt checks that Decompress refuses frame with ErrCorrupt and
// leaves dst's length alone.
func expectCorrupt(t *testing.T, c Codec, frame []byte, size int, what string) {
	t.Helper()
	dst := []byte("keep")
	out, err := c.Decompress(dst, frame, size)
	if err == nil {
		t.Errorf("%s: %s: Decompress succeeded", c, what)
		return
	}
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("%s: %s: error %v does not wrap ErrCorrupt", c, what, err)
	}
	if !strings.HasPrefix(err.Error(), c.Name()+":") {
		t.Errorf("%s: %s: error %q does not name the codec", c, what, err)
	}
	if string(out) != "keep" {
		t.Errorf("%s: %s: dst changed to %d bytes on error", c, what, len(out))
	}
}

func TestDecompressRejects(t *testing.T) {
	src := textLines(64<<10, 5)
	for _, c := range defaultCodecs() {
		t.Run(c.Name(), func(t *testing.T) {
			frame, err := c.Compress(nil, src)
			if err != nil {
				t.Fatal(err)
			}
			expectCorrupt(t, c, frame, len(src)-1, "size-1")
			expectCorrupt(t, c, frame, len(src)+1, "size+1")
			expectCorrupt(t, c, frame, 0, "size 0")
			expectCorrupt(t, c, frame, -1, "negative size")
			expectCorrupt(t, c, frame, MaxFrameSize+1, "size over the limit")
			expectCorrupt(t, c, append(bytes.Clone(frame), 'x'), len(src), "a trailing byte")
			expectCorrupt(t, c, append(bytes.Clone(frame), 0, 0, 0, 0), len(src), "trailing zeros")
			if c.Name() == "none" {
				return
			}
			twice := append(bytes.Clone(frame), frame...)
			expectCorrupt(t, c, twice, 2*len(src), "two frames")
			expectCorrupt(t, c, nil, 0, "no bytes")
			for _, cut := range []int{1, 4, 7, 10, 20, len(frame) / 2, len(frame) - 5, len(frame) - 1} {
				expectCorrupt(t, c, frame[:cut], len(src), fmt.Sprintf("truncated to %d bytes", cut))
			}
			// A flipped bit must never give silently different data: it is
			// either refused or (in a field the format ignores, such as the
			// gzip header's time) harmless. libzstd's one-shot frames carry
			// no content checksum; for them the archive's CRC-32C of every
			// stored frame and the xbstream chunks' CRC-32 catch a flip.
			if c.Name() == "zstd" {
				return
			}
			for pos := 0; pos < len(frame); pos += max(1, len(frame)/100) {
				for _, bit := range []byte{0x01, 0x80} {
					bad := bytes.Clone(frame)
					bad[pos] ^= bit
					out, err := c.Decompress(nil, bad, len(src))
					if err == nil && !bytes.Equal(out, src) {
						t.Fatalf("%s: bit %#x flipped at offset %d of %d decodes to different data without error", c, bit, pos, len(frame))
					}
					if err != nil && !errors.Is(err, ErrCorrupt) {
						t.Fatalf("%s: flipped bit: error %v does not wrap ErrCorrupt", c, err)
					}
				}
			}
		})
	}
}

func TestEmptyFrameIsAFrame(t *testing.T) {
	for _, c := range defaultCodecs() {
		frame, err := c.Compress(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.Name() != "none" && len(frame) == 0 {
			t.Errorf("%s: empty input gave no frame", c)
		}
		if c.Name() != "none" {
			expectCorrupt(t, c, frame, 1, "empty frame, size 1")
		}
	}
}

func TestCompressRefusesOversize(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates MaxFrameSize")
	}
	big := make([]byte, MaxFrameSize+1)
	for _, c := range defaultCodecs() {
		if _, err := c.Compress(nil, big); err == nil {
			t.Errorf("%s: compressed %d bytes, over MaxFrameSize", c, len(big))
		}
	}
}

// TestDecompressBoundedAllocation feeds each codec a frame that expands to
// 64 MiB while the caller expects 4 KiB: Decompress must fail without
// allocating anything like the claimed content.
func TestDecompressBoundedAllocation(t *testing.T) {
	zeros := make([]byte, 64<<20)
	// Frames without a declared content size, so that only decoding finds
	// out how much is in them.
	var zbuf, lbuf bytes.Buffer
	zw, _ := zstd.NewWriter(&zbuf)
	lw := lz4.NewWriter(&lbuf)
	for _, w := range []interface {
		Write([]byte) (int, error)
		Close() error
	}{zw, lw} {
		if _, err := w.Write(zeros); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	gframe, err := Gzip{1}.Compress(nil, zeros)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		c     Codec
		frame []byte
	}{{Zstd{1}, zbuf.Bytes()}, {LZ4{1}, lbuf.Bytes()}, {Gzip{1}, gframe}} {
		const size = 4 << 10
		for range 2 { // warm the pools
			_, _ = tt.c.Decompress(nil, tt.frame, size)
		}
		// The least of a few tries: a collection in between may empty the
		// pools and cost one fresh 4 MiB lz4 block buffer, the "small
		// constant"; what must never happen is an allocation near 64 MiB.
		least := uint64(1 << 62)
		for range 3 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := tt.c.Decompress(nil, tt.frame, size)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: 64 MiB frame with size 4 KiB: %v, want ErrCorrupt", tt.c, err)
			}
			least = min(least, after.TotalAlloc-before.TotalAlloc)
		}
		if least > 8<<20 {
			t.Errorf("%s: decoding a frame that claims 64 MiB with size 4 KiB allocated %d bytes", tt.c, least)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	codecs := defaultCodecs()
	codecs = append(codecs, Zstd{3}, Gzip{1})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 4 {
				c := codecs[(g+i)%len(codecs)]
				src := innodbLike(128<<10+g*1000+i, uint64(g*100+i))
				frame, err := c.Compress(nil, src)
				if err != nil {
					errs <- fmt.Errorf("%s: compress: %w", c, err)
					return
				}
				out, err := c.Decompress(make([]byte, 0, 10), frame, len(src))
				if err != nil {
					errs <- fmt.Errorf("%s: decompress: %w", c, err)
					return
				}
				if !bytes.Equal(out, src) {
					errs <- fmt.Errorf("%s: goroutine %d iteration %d: round trip differs", c, g, i)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// cheapLevel reports whether c is fast enough to round-trip 8 MiB inputs in
// every test run: the default and fastest level of each algorithm.
func cheapLevel(c Codec) bool {
	for _, a := range algorithms {
		if a.name == c.Name() {
			return c.Level() == a.defaultLevel || c.Level() == a.minLevel || a.maxLevel == 0
		}
	}
	return false
}
