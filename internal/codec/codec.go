// Package codec compresses and decompresses the frames of stream objects.
//
// A frame is one independently decodable unit of a few MiB: a zstd frame, an
// lz4 frame, a gzip member, or the raw bytes. Because every frame is complete
// on its own, the frames of an object can be decoded in parallel through the
// frame index, and the whole object can still be decoded front to back by the
// stock zstd, lz4 and gzip tools (they all accept concatenated frames).
//
// Codecs are stateless values safe for concurrent use by many goroutines;
// the encoders and decoders behind them are shared or pooled so that
// compressing a frame does not allocate a fresh compressor.
//
// It knows bytes and compression formats only: nothing of xbstream,
// frames' indexes or where the bytes go.
package codec

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Codec compresses whole frames in memory.
type Codec interface {
	// Name is the algorithm: "zstd", "lz4", "gzip" or "none".
	Name() string
	// Level is the compression level within the algorithm's range (0 for none).
	Level() int
	// String is the spec, "zstd:1", which Parse turns back into this codec.
	String() string
	// Suffix is the object name's ending after ".xbs": ".zst", ".lz4", ".gz" or "".
	Suffix() string
	// Compress appends to dst one complete, independent frame holding src.
	// src may be empty (the frame then decodes to nothing) and at most
	// MaxFrameSize bytes.
	Compress(dst, src []byte) ([]byte, error)
	// Decompress appends the content of the single frame src to dst. size is
	// the expected decompressed length. A frame that decodes to a different
	// length, is followed by trailing bytes, or is corrupt in any way gives an
	// error wrapping ErrCorrupt; dst is then returned unchanged in length.
	// Decompress never allocates much more than size bytes, whatever src claims.
	Decompress(dst, src []byte, size int) ([]byte, error)
}

// MaxFrameSize bounds the decompressed size of one frame. A frame holds whole
// xbstream chunks (at most a few tens of MiB each), so anything larger is a
// corrupt index rather than data; Compress refuses it too, so that nothing is
// ever written that Decompress would refuse to read back.
const MaxFrameSize = 256 << 20

// ErrCorrupt is wrapped by every error Decompress returns for bad input:
// undecodable data, a checksum mismatch, a length other than the expected
// one, or trailing bytes.
var ErrCorrupt = errors.New("corrupt frame")

// Default is the codec used when none is asked for.
const Default = "zstd"

// algorithm describes one family of codecs for Parse and ForSuffix.
type algorithm struct {
	name         string
	suffix       string
	minLevel     int
	maxLevel     int
	defaultLevel int
	make         func(level int) Codec
}

var algorithms = []algorithm{
	{name: "zstd", suffix: ".zst", minLevel: zstdMinLevel, maxLevel: zstdMaxLevel, defaultLevel: zstdDefaultLevel, make: newZstd},
	{name: "lz4", suffix: ".lz4", minLevel: lz4MinLevel, maxLevel: lz4MaxLevel, defaultLevel: lz4DefaultLevel, make: newLZ4},
	{name: "gzip", suffix: ".gz", minLevel: gzipMinLevel, maxLevel: gzipMaxLevel, defaultLevel: gzipDefaultLevel, make: newGzip},
	{name: "none", suffix: "", make: func(int) Codec { return None{} }},
}

// validSpecs lists what Parse accepts, for error messages.
func validSpecs() string {
	var parts []string
	for _, a := range algorithms {
		if a.maxLevel == 0 {
			parts = append(parts, a.name)
			continue
		}
		parts = append(parts, fmt.Sprintf("%s[:%d-%d] (default level %d)", a.name, a.minLevel, a.maxLevel, a.defaultLevel))
	}
	return strings.Join(parts, ", ")
}

// Parse reads a codec spec: a name, optionally followed by ":" and a level,
// such as "zstd", "zstd:3", "lz4", "gzip:6" or "none". The empty spec means
// Default at its default level.
func Parse(spec string) (Codec, error) {
	s := strings.ToLower(strings.TrimSpace(spec))
	if s == "" {
		s = Default
	}
	name, levelText, hasLevel := strings.Cut(s, ":")
	i := slices.IndexFunc(algorithms, func(a algorithm) bool { return a.name == name })
	if i < 0 {
		return nil, fmt.Errorf("compression %q: unknown codec %q; valid: %s", spec, name, validSpecs())
	}
	a := algorithms[i]
	if !hasLevel {
		return a.make(a.defaultLevel), nil
	}
	if a.maxLevel == 0 {
		return nil, fmt.Errorf("compression %q: %s takes no level; valid: %s", spec, a.name, validSpecs())
	}
	level, err := strconv.Atoi(levelText)
	if err != nil || level < a.minLevel || level > a.maxLevel {
		return nil, fmt.Errorf("compression %q: level %q out of range: %s takes %d to %d", spec, levelText, a.name, a.minLevel, a.maxLevel)
	}
	return a.make(level), nil
}

// ForSuffix returns a codec able to decode objects whose name ends in suffix
// after ".xbs" (".zst", ".lz4", ".gz", or "" for raw), at its default level:
// the level does not matter for decoding, so this serves readers that have an
// object but not the manifest that produced it.
func ForSuffix(suffix string) (Codec, error) {
	for _, a := range algorithms {
		if a.suffix == suffix {
			return a.make(a.defaultLevel), nil
		}
	}
	var known []string
	for _, a := range algorithms {
		known = append(known, strconv.Quote(a.suffix))
	}
	return nil, fmt.Errorf("object suffix %q: no codec; known suffixes: %s", suffix, strings.Join(known, ", "))
}

// spec formats name:level the way Parse reads it.
func spec(name string, level int) string {
	return name + ":" + strconv.Itoa(level)
}

// corruptf builds a Decompress error naming the codec and wrapping ErrCorrupt.
func corruptf(name, format string, args ...any) error {
	return fmt.Errorf("%s: %w: %s", name, ErrCorrupt, fmt.Sprintf(format, args...))
}

// checkSizes validates the arguments every Decompress shares.
func checkSizes(name string, size int) error {
	if size < 0 || size > MaxFrameSize {
		return corruptf(name, "expected size %d outside 0..%d", size, MaxFrameSize)
	}
	return nil
}

// checkSource refuses frames Decompress could not read back.
func checkSource(name string, src []byte) error {
	if len(src) > MaxFrameSize {
		return fmt.Errorf("%s: frame of %d bytes exceeds the %d byte limit", name, len(src), MaxFrameSize)
	}
	return nil
}

// grow returns dst with room for n more bytes past its length, and that room
// as a slice of length n, so decoders can fill it without reallocating.
func grow(dst []byte, n int) ([]byte, []byte) {
	dst = slices.Grow(dst, n)
	return dst, dst[len(dst) : len(dst)+n]
}

// appendWriter is an io.Writer that appends to a slice, letting the streaming
// lz4 and gzip writers produce straight into the caller's dst.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// readExactly fills room from a streaming decoder and then reads on to its
// end: only there do the lz4 and gzip readers verify their checksums, and
// only there does it show that the frame holds no more than expected.
func readExactly(name string, r io.Reader, room []byte) error {
	got, err := io.ReadFull(r, room)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return corruptf(name, "frame is truncated or decodes to %d bytes, expected %d", got, len(room))
		}
		return corruptf(name, "after %d of %d bytes: %v", got, len(room), err)
	}
	var one [1]byte
	switch _, err := io.ReadFull(r, one[:]); {
	case err == nil:
		return corruptf(name, "frame decodes to more than the expected %d bytes", len(room))
	case errors.Is(err, io.EOF):
		return nil
	default:
		return corruptf(name, "at the end of %d bytes: %v", len(room), err)
	}
}
