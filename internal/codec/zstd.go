package codec

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	cgozstd "github.com/DataDog/zstd"
	"github.com/klauspost/compress/zstd"
)

// zstd levels are the reference library's: 1 (fastest) to 19, as with the
// zstd command. Compression runs the C library (libzstd, built in through
// cgo): on InnoDB pages it is 1.6x faster than the pure Go encoder at level 1
// and its frames are 3.6% smaller, and decoding is 1.26x faster (measured on
// the reference machine, see docs/benchmarks.md). Frames without a declared
// content size (those written by the zstd command from a pipe) are decoded by
// klauspost/compress instead, whose decoder can be bounded.
const (
	zstdMinLevel     = 1
	zstdMaxLevel     = 19
	zstdDefaultLevel = 1
)

// zstdMaxBlock is the largest block a zstd frame may hold (the format's
// Block_Maximum_Size).
const zstdMaxBlock = 128 << 10

// zstdSlack is the headroom the klauspost decoder wants past the output for
// its fast paths (compressedBlockOverAlloc there); without it each block
// takes a slower, bounds-checked path.
const zstdSlack = 16

// Zstd is the zstd codec, the default: far better ratio than lz4 at a
// speed that keeps up with disks and networks.
// Get one from Parse: the zero value decompresses but has no level to
// compress with.
type Zstd struct{ level int }

func newZstd(level int) Codec { return Zstd{level: level} }

// Name returns "zstd".
func (Zstd) Name() string { return "zstd" }

// Level returns the level, 1 to 19.
func (z Zstd) Level() int { return z.level }

// String returns the spec, e.g. "zstd:1".
func (z Zstd) String() string { return spec("zstd", z.level) }

// Suffix returns ".zst".
func (Zstd) Suffix() string { return ".zst" }

// zstdDecoder decodes the frames libzstd cannot be bounded on (no content
// size in the header). It is shared: DecodeAll is safe for concurrent use.
var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(runtime.GOMAXPROCS(0)),
		// The cap limit makes DecodeAll stop at the room Decompress gives it,
		// so a frame lying about its length cannot make it allocate.
		zstd.WithDecodeAllCapLimit(true),
		zstd.WithDecoderMaxMemory(MaxFrameSize+zstdMaxBlock+zstdSlack),
		zstd.WithDecoderMaxWindow(MaxFrameSize),
	)
})

// zstdContexts recycles libzstd contexts: a context per call would allocate
// and clear its tables for every frame.
var zstdContexts = sync.Pool{New: func() any { return cgozstd.NewCtx() }}

// Compress appends one zstd frame (with its content size) to dst.
func (z Zstd) Compress(dst, src []byte) ([]byte, error) {
	if err := checkSource("zstd", src); err != nil {
		return dst, err
	}
	if z.level < zstdMinLevel || z.level > zstdMaxLevel {
		return dst, fmt.Errorf("zstd: level %d out of range %d-%d", z.level, zstdMinLevel, zstdMaxLevel)
	}
	n := len(dst)
	bound := cgozstd.CompressBound(len(src))
	grown, _ := grow(dst, bound)
	zc := zstdContexts.Get().(cgozstd.Ctx)
	out, err := zc.CompressLevel(grown[n:n+bound], src, z.level)
	zstdContexts.Put(zc)
	if err != nil {
		return dst, fmt.Errorf("zstd: compress: %w", err)
	}
	return grown[:n+len(out)], nil
}

// Decompress appends the content of the single zstd frame src to dst.
func (Zstd) Decompress(dst, src []byte, size int) ([]byte, error) {
	if err := checkSizes("zstd", size); err != nil {
		return dst, err
	}
	end, declared, err := zstdFrameEnd(src, size)
	if err != nil {
		return dst, err
	}
	if declared && size > 0 {
		n := len(dst)
		grown, _ := grow(dst, size)
		zc := zstdContexts.Get().(cgozstd.Ctx)
		written, err := zc.DecompressInto(grown[n:n+size], src[:end])
		zstdContexts.Put(zc)
		if err != nil {
			return dst, corruptf("zstd", "%v", err)
		}
		if written != size {
			return dst, corruptf("zstd", "frame decodes to %d bytes, expected %d", written, size)
		}
		return grown[:n+size], nil
	}
	dec, err := zstdDecoder()
	if err != nil {
		return dst, fmt.Errorf("zstd: decoder: %w", err)
	}
	n := len(dst)
	grown, _ := grow(dst, size+zstdSlack)
	// Decoding past the room given fails rather than reallocating; a
	// frame that decodes to less is caught by the length check below.
	out, err := dec.DecodeAll(src[:end], grown[:n:n+size+zstdSlack])
	if err != nil {
		return dst, corruptf("zstd", "%v", err)
	}
	if got := len(out) - n; got != size {
		return dst, corruptf("zstd", "frame decodes to %d bytes, expected %d", got, size)
	}
	return out, nil
}

// zstdFrameEnd walks the block headers of the zstd frame at the start of src
// and returns where it ends and whether it declares its content size, so that trailing bytes (including further
// frames, which DecodeAll would silently accept) are refused. It also checks
// a declared content size against size before any decoding.
func zstdFrameEnd(src []byte, size int) (end int, declared bool, err error) {
	var h zstd.Header
	if err := h.Decode(src); err != nil {
		if errors.Is(err, zstd.ErrMagicMismatch) {
			return 0, false, corruptf("zstd", "not a zstd frame (magic % x)", src[:min(len(src), 4)])
		}
		return 0, false, corruptf("zstd", "frame header: %v", err)
	}
	if h.Skippable {
		return 0, false, corruptf("zstd", "skippable frame where a data frame was expected")
	}
	if h.HasFCS && h.FrameContentSize != uint64(size) {
		return 0, false, corruptf("zstd", "frame declares %d bytes of content, expected %d", h.FrameContentSize, size)
	}
	pos := h.HeaderSize
	for {
		if len(src)-pos < 3 {
			return 0, false, corruptf("zstd", "truncated: block header at offset %d of %d bytes", pos, len(src))
		}
		bh := uint32(src[pos]) | uint32(src[pos+1])<<8 | uint32(src[pos+2])<<16
		last, kind, n := bh&1 == 1, (bh>>1)&3, int(bh>>3)
		if n > zstdMaxBlock {
			return 0, false, corruptf("zstd", "block at offset %d claims %d bytes, over the %d limit", pos, n, zstdMaxBlock)
		}
		pos += 3
		switch kind {
		case 0, 2: // raw, compressed: n bytes follow
			pos += n
		case 1: // RLE: one byte repeated n times
			pos++
		default:
			return 0, false, corruptf("zstd", "reserved block type at offset %d", pos-3)
		}
		if pos > len(src) {
			return 0, false, corruptf("zstd", "truncated: block ends at offset %d past the frame's %d bytes", pos, len(src))
		}
		if last {
			break
		}
	}
	if h.HasCheckSum {
		pos += 4
		if pos > len(src) {
			return 0, false, corruptf("zstd", "truncated: checksum missing at end of %d bytes", len(src))
		}
	}
	if pos != len(src) {
		return 0, false, corruptf("zstd", "%d trailing bytes after the frame end at offset %d", len(src)-pos, pos)
	}
	return pos, h.HasFCS, nil
}
