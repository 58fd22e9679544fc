package dedup

import (
	"context"
	"slices"
	"unsafe"

	"github.com/backstream/backstream/internal/archive"
)

// locations is where the blocks a stream's reassembly needs are: the
// 16-byte prefixes of their names, sorted, each with its place (a frame
// of frames, an offset and a length in its raw bytes), and each frame
// once. About 16 + 12 bytes a block and 40 a frame, where a map of names
// to locations took some 110 a block. A collision of 128 bits among the
// blocks of a stream is not to be met (one would make a block read as
// another, which its name's check calls damage: it would not be taken).
type locations struct {
	keys   []prefix  // sorted, each once
	at     []blockAt // keys[i]'s place
	frames []frameRef
}

type blockAt struct {
	frame       uint32 // in frames; noFrame while not located
	offset, len uint32
}

const noFrame = ^uint32(0)

// need adds the block named n to those to locate; sort must follow
// before anything is located.
func (l *locations) need(n Name) { l.keys = append(l.keys, prefix(n[:16])) }

// sort makes the names needed sorted and each once, none located yet.
func (l *locations) sort() {
	slices.SortFunc(l.keys, comparePrefix)
	l.keys = slices.Clip(slices.Compact(l.keys))
	l.at = make([]blockAt, len(l.keys))
	for i := range l.at {
		l.at[i].frame = noFrame
	}
}

// keysSize and framesSize are the bytes the table holds: for its names
// and their places, and for the frames located.
func (l *locations) keysSize() int64 {
	return int64(cap(l.keys))*prefixSize + int64(cap(l.at))*int64(unsafe.Sizeof(blockAt{}))
}

func (l *locations) framesSize() int64 {
	return int64(cap(l.frames)) * int64(unsafe.Sizeof(frameRef{}))
}

// find returns where the block named n is, if it is needed and located.
func (l *locations) find(n Name) (location, bool) {
	i, ok := slices.BinarySearchFunc(l.keys, prefix(n[:16]), comparePrefix)
	if !ok || l.at[i].frame == noFrame {
		return location{}, false
	}
	a := l.at[i]
	return location{Frame: l.frames[a.frame], Offset: a.offset, Len: a.len}, true
}

// largestFrame is the most bytes a buffer of the located frames takes:
// frameBuf, or a larger frame's raw size (packs of older versions).
func (l *locations) largestFrame() int64 {
	n := int64(frameBuf)
	for _, fr := range l.frames {
		n = max(n, int64(fr.Raw))
	}
	return n
}

// locate finds each block l needs in the store's index objects (the
// first that names it), reading them one at a time; a block none names
// is damage of who ("stream <name>", or "backup <id>" for all the
// streams a Read takes).
func (s *Store) locate(ctx context.Context, who string, l *locations) error {
	names, err := s.indexNames(ctx)
	if err != nil {
		return err
	}
	for _, name := range names {
		ix, err := s.readIndex(ctx, name)
		if err != nil {
			return err
		}
		frameNum := make([]uint32, len(ix.Frames)) // the object's frames in l.frames, +1
		for _, k := range ix.Blocks {
			i, ok := slices.BinarySearchFunc(l.keys, prefix(k.Name[:16]), comparePrefix)
			if !ok || l.at[i].frame != noFrame {
				continue
			}
			if frameNum[k.Frame] == 0 {
				l.frames = append(l.frames, ix.Frames[k.Frame])
				frameNum[k.Frame] = uint32(len(l.frames))
			}
			l.at[i] = blockAt{frame: frameNum[k.Frame] - 1, offset: k.Offset, len: k.Len}
		}
	}
	for i, a := range l.at {
		if a.frame == noFrame {
			return archive.Corruptf("%s needs block %x, which no index of the block store holds", who, l.keys[i][:8])
		}
	}
	return nil
}
