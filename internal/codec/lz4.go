package codec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/pierrec/lz4/v4"
)

// lz4 levels: lz4:1 is the fast compressor (what `lz4 -1`, the CLI's default,
// is for); lz4:2 to lz4:9 are pierrec/lz4's high-compression modes Level2 to
// Level9, much slower and rarely worth it for backups.
const (
	lz4MinLevel     = 1
	lz4MaxLevel     = 9
	lz4DefaultLevel = 1
)

// Frame format constants (lz4_Frame_format.md).
const (
	lz4FrameMagic   = 0x184D2204
	lz4LegacyMagic  = 0x184C2102
	lz4SkipMagicLow = 0x184D2A50
)

// LZ4 is the lz4 frame codec: the fastest to compress and decompress, for
// links or disks faster than zstd:1 can feed.
// Get one from Parse: the zero value decompresses but has no level to
// compress with.
type LZ4 struct{ level int }

func newLZ4(level int) Codec { return LZ4{level: level} }

// Name returns "lz4".
func (LZ4) Name() string { return "lz4" }

// Level returns the level, 1 to 9.
func (l LZ4) Level() int { return l.level }

// String returns the spec, e.g. "lz4:1".
func (l LZ4) String() string { return spec("lz4", l.level) }

// Suffix returns ".lz4".
func (LZ4) Suffix() string { return ".lz4" }

// lz4Levels maps our levels onto pierrec/lz4's.
var lz4Levels = [...]lz4.CompressionLevel{
	1: lz4.Fast, 2: lz4.Level2, 3: lz4.Level3, 4: lz4.Level4, 5: lz4.Level5,
	6: lz4.Level6, 7: lz4.Level7, 8: lz4.Level8, 9: lz4.Level9,
}

// lz4Encoder is a pooled writer with the buffer it appends to.
type lz4Encoder struct {
	out appendWriter
	w   *lz4.Writer
}

// lz4Writers pools writers per level; a writer keeps its options across
// Reset, so pooling per level avoids reapplying them.
var lz4Writers [lz4MaxLevel + 1]sync.Pool

// lz4Readers pools readers; their block buffers come from pierrec's own pool.
var lz4Readers = sync.Pool{New: func() any {
	r := lz4.NewReader(nil)
	return r
}}

// Compress appends one lz4 frame (with content size and content checksum,
// 4 MiB independent blocks, as the lz4 CLI writes) to dst.
func (l LZ4) Compress(dst, src []byte) ([]byte, error) {
	if err := checkSource("lz4", src); err != nil {
		return dst, err
	}
	if l.level < lz4MinLevel || l.level > lz4MaxLevel {
		return dst, fmt.Errorf("lz4: level %d out of range %d-%d", l.level, lz4MinLevel, lz4MaxLevel)
	}
	e, _ := lz4Writers[l.level].Get().(*lz4Encoder)
	if e == nil {
		e = &lz4Encoder{w: lz4.NewWriter(nil)}
		if err := e.w.Apply(
			lz4.CompressionLevelOption(lz4Levels[l.level]),
			lz4.BlockSizeOption(lz4.Block4Mb),
			lz4.ChecksumOption(true),
			lz4.ConcurrencyOption(1),
		); err != nil {
			return dst, fmt.Errorf("lz4: level %d writer: %w", l.level, err)
		}
	}
	n := len(dst)
	e.out.b = dst
	e.w.Reset(&e.out)
	// The content size lets readers (and `lz4 -dc`) check the length.
	err := e.w.Apply(lz4.SizeOption(uint64(len(src))))
	if err == nil {
		_, err = e.w.Write(src)
	}
	if err == nil {
		err = e.w.Close()
	}
	out := e.out.b
	e.out.b = nil
	if err != nil {
		// A writer that failed is in an unknown state: let it go.
		return out[:n], fmt.Errorf("lz4: compress %d bytes: %w", len(src), err)
	}
	e.w.Reset(nil)
	lz4Writers[l.level].Put(e)
	return out, nil
}

// Decompress appends the content of the single lz4 frame src to dst,
// checking block and content checksums when the frame has them.
func (LZ4) Decompress(dst, src []byte, size int) ([]byte, error) {
	if err := checkSizes("lz4", size); err != nil {
		return dst, err
	}
	end, err := lz4FrameEnd(src)
	if err != nil {
		return dst, err
	}
	n := len(dst)
	grown, room := grow(dst, size)
	br := bytes.NewReader(src[:end])
	r := lz4Readers.Get().(*lz4.Reader)
	r.Reset(br)
	err = readExactly("lz4", r, room)
	r.Reset(nil)
	if err != nil {
		// Leave the failed reader to the garbage collector; its state after
		// an error is not worth trusting.
		return dst, err
	}
	lz4Readers.Put(r)
	return grown[:n+size], nil
}

// lz4FrameEnd walks the block headers of the lz4 frame at the start of src
// and returns where it ends. pierrec's reader would go on to decode any
// frame that follows, so the walk is what makes trailing bytes an error; it
// also rejects legacy and skippable frames, which we never write.
func lz4FrameEnd(src []byte) (int, error) {
	if len(src) < 7 {
		return 0, corruptf("lz4", "truncated: %d bytes is shorter than a frame header", len(src))
	}
	switch magic := binary.LittleEndian.Uint32(src); {
	case magic == lz4FrameMagic:
	case magic == lz4LegacyMagic:
		return 0, corruptf("lz4", "legacy lz4 frame, expected the lz4 frame format")
	case magic&0xFFFFFFF0 == lz4SkipMagicLow:
		return 0, corruptf("lz4", "skippable frame where a data frame was expected")
	default:
		return 0, corruptf("lz4", "not an lz4 frame (magic % x)", src[:4])
	}
	flg, bd := src[4], src[5]
	if flg>>6 != 1 {
		return 0, corruptf("lz4", "frame version %d, expected 1", flg>>6)
	}
	if flg&0x02 != 0 || bd&0x8F != 0 {
		return 0, corruptf("lz4", "reserved bits set in frame descriptor (FLG %#x, BD %#x)", flg, bd)
	}
	blockIndex := bd >> 4 & 7
	if blockIndex < 4 {
		return 0, corruptf("lz4", "invalid block size index %d", blockIndex)
	}
	maxBlock := 1 << (2*int(blockIndex) + 8)
	blockChecksum, contentSize, contentChecksum, dictID := flg&0x10 != 0, flg&0x08 != 0, flg&0x04 != 0, flg&0x01 != 0
	pos := 6
	if contentSize {
		pos += 8
	}
	if dictID {
		pos += 4
	}
	pos++ // header checksum
	for {
		if len(src)-pos < 4 {
			return 0, corruptf("lz4", "truncated: block header at offset %d of %d bytes", pos, len(src))
		}
		v := binary.LittleEndian.Uint32(src[pos:])
		pos += 4
		if v == 0 { // end mark
			break
		}
		n := int(v & 0x7FFFFFFF)
		if n > maxBlock {
			return 0, corruptf("lz4", "block at offset %d claims %d bytes, over the frame's %d byte blocks", pos-4, n, maxBlock)
		}
		pos += n
		if blockChecksum {
			pos += 4
		}
		if pos > len(src) {
			return 0, corruptf("lz4", "truncated: block ends at offset %d past the frame's %d bytes", pos, len(src))
		}
	}
	if contentChecksum {
		pos += 4
		if pos > len(src) {
			return 0, corruptf("lz4", "truncated: content checksum missing at end of %d bytes", len(src))
		}
	}
	if pos != len(src) {
		return 0, corruptf("lz4", "%d trailing bytes after the frame end at offset %d", len(src)-pos, pos)
	}
	return pos, nil
}
