package archive

import (
	"encoding/binary"
	"fmt"
)

// The frame index of a stream object lists its frames in order. Offsets are
// the running sum of stored sizes, so a reader can fetch and decode any frame
// on its own. Layout (all integers little endian):
//
//	magic "BSIDX001"
//	per frame: stored size u32, raw size u32, CRC-32C of the stored bytes u32
const indexMagic = "BSIDX001"

const indexRecordSize = 12

// maxFrameBytes bounds the sizes an index may claim, so that a forged index
// cannot make a reader allocate without limit. Frames are a few MiB plus at
// most one whole xbstream chunk.
const maxFrameBytes = 256 << 20

// maxStored bounds how much larger than its content a stored frame can
// be: no codec grows incompressible data by more than raw/128 + 64 KiB (zstd's
// bound, the largest, is raw/256 + 64 KiB at most), and none not at all.
func maxStored(raw uint32) uint32 { return raw + raw/128 + 64<<10 }

// checkFrameSizes checks a frame's record against what the format allows,
// before anything is allocated for it: both sizes at most maxFrameBytes,
// and the stored size no larger than a codec makes of the raw size.
func checkFrameSizes(f Frame) error {
	if f.Stored == 0 || f.Stored > maxFrameBytes || f.Raw == 0 || f.Raw > maxFrameBytes || f.Stored > maxStored(f.Raw) {
		return fmt.Errorf("implausible sizes (stored %d, raw %d; a frame holds at most %d bytes, stored at most raw + raw/128 + 64 KiB)", f.Stored, f.Raw, maxFrameBytes)
	}
	return nil
}

// Frame is one entry of a frame index.
type Frame struct {
	Offset int64  // where the frame starts in the stream object
	Stored uint32 // bytes in the object (compressed, maybe encrypted)
	Raw    uint32 // bytes after decoding: whole xbstream chunks
	CRC    uint32 // CRC-32C of the stored bytes
}

// appendIndexRecord appends one frame's record to an index being built.
func appendIndexRecord(dst []byte, f Frame) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, f.Stored)
	dst = binary.LittleEndian.AppendUint32(dst, f.Raw)
	return binary.LittleEndian.AppendUint32(dst, f.CRC)
}

// ParseIndex decodes a frame index and checks it against the object size it
// describes.
func ParseIndex(b []byte, objectSize int64) ([]Frame, error) {
	if len(b) < len(indexMagic) || string(b[:len(indexMagic)]) != indexMagic {
		return nil, fmt.Errorf("frame index: bad magic")
	}
	b = b[len(indexMagic):]
	if len(b)%indexRecordSize != 0 {
		return nil, fmt.Errorf("frame index: %d bytes of records is not a whole number of %d-byte records", len(b), indexRecordSize)
	}
	frames := make([]Frame, 0, len(b)/indexRecordSize)
	var off int64
	for i := 0; len(b) > 0; i++ {
		f := Frame{
			Offset: off,
			Stored: binary.LittleEndian.Uint32(b),
			Raw:    binary.LittleEndian.Uint32(b[4:]),
			CRC:    binary.LittleEndian.Uint32(b[8:]),
		}
		if err := checkFrameSizes(f); err != nil {
			return nil, fmt.Errorf("frame index: frame %d: %v", i, err)
		}
		off += int64(f.Stored)
		frames = append(frames, f)
		b = b[indexRecordSize:]
	}
	if off != objectSize {
		return nil, fmt.Errorf("frame index: frames cover %d bytes but the object has %d", off, objectSize)
	}
	return frames, nil
}
