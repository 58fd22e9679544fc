package dedup

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/backstream/backstream/internal/archive"
)

// indexMagic starts an index object: what one writer stored.
//
//	"BSDDI001"
//	packs  u32, each: name length u16, name, size u64
//	frames u32, each: pack u32, offset u64, stored u32, raw u32, crc32c u32
//	blocks u32, each: name [32], frame u32, offset u32, length u32
//	crc32c u32 of everything before it
const indexMagic = "BSDDI001"

// frameRef is one zstd frame of a pack.
type frameRef struct {
	Pack        string
	Offset      int64
	Stored, Raw uint32
	CRC         uint32
}

// location is where a block's bytes are: in a frame, from an offset.
type location struct {
	Frame       frameRef
	Offset, Len uint32
}

// index is what one writer stored: its packs, their frames and blocks.
type index struct {
	Packs  []packRef
	Frames []frameRef
	Blocks []blockRef
}

type packRef struct {
	Name string
	Size int64
}

type blockRef struct {
	Name        Name
	Frame       uint32
	Offset, Len uint32
}

func (ix *index) encode() []byte {
	b := []byte(indexMagic)
	packNum := map[string]uint32{}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ix.Packs)))
	for i, p := range ix.Packs {
		packNum[p.Name] = uint32(i)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(p.Name)))
		b = append(b, p.Name...)
		b = binary.LittleEndian.AppendUint64(b, uint64(p.Size))
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ix.Frames)))
	for _, f := range ix.Frames {
		b = binary.LittleEndian.AppendUint32(b, packNum[f.Pack])
		b = binary.LittleEndian.AppendUint64(b, uint64(f.Offset))
		b = binary.LittleEndian.AppendUint32(b, f.Stored)
		b = binary.LittleEndian.AppendUint32(b, f.Raw)
		b = binary.LittleEndian.AppendUint32(b, f.CRC)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ix.Blocks)))
	for _, k := range ix.Blocks {
		b = append(b, k.Name[:]...)
		b = binary.LittleEndian.AppendUint32(b, k.Frame)
		b = binary.LittleEndian.AppendUint32(b, k.Offset)
		b = binary.LittleEndian.AppendUint32(b, k.Len)
	}
	return binary.LittleEndian.AppendUint32(b, crc32c(b))
}

// decoder reads little-endian fields, remembering the first shortage.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil || n > len(d.b) {
		// The fields read after a shortage are zeros: never as many as a
		// damaged length asks for.
		d.err = io.ErrUnexpectedEOF
		return make([]byte, min(n, 32))
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}
func (d *decoder) u16() uint16 { return binary.LittleEndian.Uint16(d.take(2)) }
func (d *decoder) u32() uint32 { return binary.LittleEndian.Uint32(d.take(4)) }
func (d *decoder) u64() uint64 { return binary.LittleEndian.Uint64(d.take(8)) }

// count reads a count of records of at least size bytes each, which the
// rest must be able to hold.
func (d *decoder) count(size int) int {
	n := int(d.u32())
	if d.err == nil && n > len(d.b)/size {
		d.err = fmt.Errorf("%d records of %d bytes in %d bytes", n, size, len(d.b))
		return 0
	}
	return n
}

// checked strips and checks a trailing CRC-32C and the magic.
func checked(data []byte, magic string) ([]byte, error) {
	if len(data) < len(magic)+4 || !bytes.HasPrefix(data, []byte(magic)) {
		return nil, fmt.Errorf("not a %s object", strings.TrimRight(magic, "0123456789"))
	}
	body := data[:len(data)-4]
	if got, want := crc32c(body), binary.LittleEndian.Uint32(data[len(data)-4:]); got != want {
		return nil, fmt.Errorf("CRC-32C %08x, the object says %08x", got, want)
	}
	return body[len(magic):], nil
}

func decodeIndex(data []byte) (*index, error) {
	body, err := checked(data, indexMagic)
	if err != nil {
		return nil, err
	}
	d := &decoder{b: body}
	ix := &index{}
	for range d.count(2 + 8) {
		name := string(d.take(int(d.u16())))
		ix.Packs = append(ix.Packs, packRef{Name: name, Size: int64(d.u64())})
	}
	for range d.count(4 + 8 + 12) {
		p := d.u32()
		f := frameRef{Offset: int64(d.u64()), Stored: d.u32(), Raw: d.u32(), CRC: d.u32()}
		if d.err == nil && int(p) >= len(ix.Packs) {
			return nil, fmt.Errorf("frame of pack %d, of %d", p, len(ix.Packs))
		}
		if d.err == nil && (f.Raw > maxPackFrame || f.Stored > 2*maxPackFrame) {
			return nil, fmt.Errorf("a frame of %d bytes stored as %d: a pack's frames hold %d at most", f.Raw, f.Stored, maxPackFrame)
		}
		if d.err == nil {
			f.Pack = ix.Packs[p].Name
		}
		ix.Frames = append(ix.Frames, f)
	}
	for range d.count(32 + 12) {
		var k blockRef
		copy(k.Name[:], d.take(32))
		k.Frame, k.Offset, k.Len = d.u32(), d.u32(), d.u32()
		if d.err == nil && (int(k.Frame) >= len(ix.Frames) || uint64(k.Offset)+uint64(k.Len) > uint64(ix.Frames[k.Frame].Raw)) {
			return nil, fmt.Errorf("block %s outside its frame", k.Name)
		}
		ix.Blocks = append(ix.Blocks, k)
	}
	switch {
	case d.err != nil:
		return nil, d.err
	case len(d.b) != 0:
		return nil, fmt.Errorf("%d bytes after the last block", len(d.b))
	}
	return ix, nil
}

// indexNames lists the store's index objects, those of the newest
// backups first and expire's collected ones last.
func (s *Store) indexNames(ctx context.Context) ([]string, error) {
	infos, err := s.Backend.List(ctx, indexDir)
	if err != nil {
		return nil, fmt.Errorf("list the block store's index: %w", err)
	}
	names := make([]string, len(infos))
	for i, in := range infos {
		names[i] = in.Name
	}
	collected := func(n string) bool { return strings.HasPrefix(n, indexDir+"collected-") }
	slices.SortFunc(names, func(a, b string) int {
		if ca, cb := collected(a), collected(b); ca != cb {
			if ca {
				return 1
			}
			return -1
		}
		return strings.Compare(b, a)
	})
	return names, nil
}

// readIndex reads and decodes index object name.
func (s *Store) readIndex(ctx context.Context, name string) (*index, error) {
	data, err := s.get(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := newerFormat(data, indexMagic); err != nil {
		return nil, fmt.Errorf("block index %s: %w", name, err)
	}
	ix, err := decodeIndex(data)
	if err != nil {
		return nil, archive.Corruptf("block index %s is damaged: %v", name, err)
	}
	return ix, nil
}

// newerFormat says so when data starts with the magic of a family of
// known (the magics this backstream reads: "BSDD" and a letter, then a
// version of three digits) at a later version than any it knows: an
// object a newer backstream wrote, which is not damage.
func newerFormat(data []byte, known ...string) error {
	if len(data) < 8 {
		return nil
	}
	got := string(data[:8])
	v, err := strconv.Atoi(got[5:])
	if err != nil {
		return nil
	}
	high := -1
	for _, k := range known {
		if k[:5] == got[:5] {
			n, _ := strconv.Atoi(k[5:])
			high = max(high, n)
		}
	}
	if high < 0 || v <= high {
		return nil
	}
	return fmt.Errorf("format %s, which a newer backstream wrote (this one reads up to %s%03d): read this repository with that version or a later one", got, got[:5], high)
}

// get reads a whole object of the store.
func (s *Store) get(ctx context.Context, name string) ([]byte, error) {
	rc, err := s.Backend.Open(ctx, name, 0, -1)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return data, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }
