package codec

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// zstd levels map onto klauspost/compress's four encoders:
//
//	zstd:1  SpeedFastest            (about zstd -1)
//	zstd:2  SpeedDefault            (about zstd -3)
//	zstd:3  SpeedBetterCompression  (about zstd -7)
//	zstd:4  SpeedBestCompression    (about zstd -11)
const (
	zstdMinLevel     = 1
	zstdMaxLevel     = 4
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

// Level returns the level, 1 to 4.
func (z Zstd) Level() int { return z.level }

// String returns the spec, e.g. "zstd:1".
func (z Zstd) String() string { return spec("zstd", z.level) }

// Suffix returns ".zst".
func (Zstd) Suffix() string { return ".zst" }

// zstdEncoders holds one shared encoder per level, created on first use.
// EncodeAll is safe for concurrent use and runs each call on its caller's
// goroutine, borrowing one of the encoder's internal states; the encoder
// concurrency is the number of states, so it must be GOMAXPROCS rather than
// 1, or concurrent callers would queue behind a single state.
var zstdEncoders [zstdMaxLevel + 1]func() (*zstd.Encoder, error)

// zstdDecoder is shared by all levels: DecodeAll is safe for concurrent use.
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

func init() {
	levels := [...]zstd.EncoderLevel{1: zstd.SpeedFastest, 2: zstd.SpeedDefault, 3: zstd.SpeedBetterCompression, 4: zstd.SpeedBestCompression}
	for l := zstdMinLevel; l <= zstdMaxLevel; l++ {
		level := levels[l]
		zstdEncoders[l] = sync.OnceValues(func() (*zstd.Encoder, error) {
			return zstd.NewWriter(nil,
				zstd.WithEncoderLevel(level),
				zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
				// An empty frame must still be a frame: the index counts it.
				zstd.WithZeroFrames(true),
				zstd.WithEncoderCRC(true),
			)
		})
	}
}

// Compress appends one zstd frame (with content size and checksum) to dst.
func (z Zstd) Compress(dst, src []byte) ([]byte, error) {
	if err := checkSource("zstd", src); err != nil {
		return dst, err
	}
	if z.level < zstdMinLevel || z.level > zstdMaxLevel {
		return dst, fmt.Errorf("zstd: level %d out of range %d-%d", z.level, zstdMinLevel, zstdMaxLevel)
	}
	enc, err := zstdEncoders[z.level]()
	if err != nil {
		return dst, fmt.Errorf("zstd: level %d encoder: %w", z.level, err)
	}
	return enc.EncodeAll(src, dst), nil
}

// Decompress appends the content of the single zstd frame src to dst.
func (Zstd) Decompress(dst, src []byte, size int) ([]byte, error) {
	if err := checkSizes("zstd", size); err != nil {
		return dst, err
	}
	end, err := zstdFrameEnd(src, size)
	if err != nil {
		return dst, err
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
// and returns where it ends, so that trailing bytes (including further
// frames, which DecodeAll would silently accept) are refused. It also checks
// a declared content size against size before any decoding.
func zstdFrameEnd(src []byte, size int) (int, error) {
	var h zstd.Header
	if err := h.Decode(src); err != nil {
		if errors.Is(err, zstd.ErrMagicMismatch) {
			return 0, corruptf("zstd", "not a zstd frame (magic % x)", src[:min(len(src), 4)])
		}
		return 0, corruptf("zstd", "frame header: %v", err)
	}
	if h.Skippable {
		return 0, corruptf("zstd", "skippable frame where a data frame was expected")
	}
	if h.HasFCS && h.FrameContentSize != uint64(size) {
		return 0, corruptf("zstd", "frame declares %d bytes of content, expected %d", h.FrameContentSize, size)
	}
	pos := h.HeaderSize
	for {
		if len(src)-pos < 3 {
			return 0, corruptf("zstd", "truncated: block header at offset %d of %d bytes", pos, len(src))
		}
		bh := uint32(src[pos]) | uint32(src[pos+1])<<8 | uint32(src[pos+2])<<16
		last, kind, n := bh&1 == 1, (bh>>1)&3, int(bh>>3)
		if n > zstdMaxBlock {
			return 0, corruptf("zstd", "block at offset %d claims %d bytes, over the %d limit", pos, n, zstdMaxBlock)
		}
		pos += 3
		switch kind {
		case 0, 2: // raw, compressed: n bytes follow
			pos += n
		case 1: // RLE: one byte repeated n times
			pos++
		default:
			return 0, corruptf("zstd", "reserved block type at offset %d", pos-3)
		}
		if pos > len(src) {
			return 0, corruptf("zstd", "truncated: block ends at offset %d past the frame's %d bytes", pos, len(src))
		}
		if last {
			break
		}
	}
	if h.HasCheckSum {
		pos += 4
		if pos > len(src) {
			return 0, corruptf("zstd", "truncated: checksum missing at end of %d bytes", len(src))
		}
	}
	if pos != len(src) {
		return 0, corruptf("zstd", "%d trailing bytes after the frame end at offset %d", len(src)-pos, pos)
	}
	return pos, nil
}
