package dedup

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/backstream/backstream/internal/archive"
)

// recipeMagic starts a stream's recipe: its frames, each as the items
// whose bytes, one after another, are the frame.
//
//	"BSDDR002"
//	frames u32, each: raw u32, items u32, each item:
//	  0, length u32, the bytes (a chunk's header, or a chunk without payload)
//	  1, name [32], from u32, length u32 (bytes of a block)
//	crc32c u32 of everything before it
//
// Recipes of "BSDDR001", the first ones, also hold each frame's CRC-32C
// after its raw size, which a reader checks the frame it makes against. A
// backup no longer computes it: every byte of a frame is proven otherwise
// (the recipe's digest, each block's keyed name, and mariabackup's CRC-32
// of each chunk's payload), and the CRC of 9.4 GiB of raw bytes cost a
// 10 GB backup a CPU-second.
const (
	recipeMagic   = "BSDDR002"
	recipeMagicV1 = "BSDDR001"
)

type recipeFrame struct {
	Raw   uint32
	CRC   uint32 // the frame's CRC-32C, in a recipe of recipeMagicV1
	Items []item
}

// item is bytes of a frame: literal, or a slice of a block.
type item struct {
	Lit     []byte
	Block   Name
	handle  int // the block's, while it is not named yet (Output)
	From, N uint32
	isLit   bool
}

type recipe struct {
	Frames []recipeFrame
	v1     bool // read from a recipe of recipeMagicV1: the frames have a CRC
}

// recipeZMagic starts a recipe object as backups store it: the encoding
// of a recipe (recipeMagic) compressed, since its chunk headers repeat
// their files' paths (at 10,000 tables, 3.1 MB a backup raw):
//
//	"BSDDZ001", raw size u32, one zstd frame of the raw bytes
//
// A reader also takes a recipe object that is a recipe's encoding as it
// is (recipeMagic or recipeMagicV1: the recipes stored before).
const recipeZMagic = "BSDDZ001"

// seal is the object a backup stores for r (recipeZMagic).
func (r *recipe) seal() ([]byte, error) {
	raw := r.encode()
	return frameCodec.Compress(binary.LittleEndian.AppendUint32([]byte(recipeZMagic), uint32(len(raw))), raw)
}

// openRecipe decodes a recipe object: sealed, or a recipe's encoding as
// it is. A sealed one holds at most maxRecipe bytes once decompressed.
func openRecipe(data []byte) (*recipe, error) {
	body, sealed := bytes.CutPrefix(data, []byte(recipeZMagic))
	if !sealed {
		return decodeRecipe(data)
	}
	if len(body) < 4 {
		return nil, fmt.Errorf("a compressed recipe of %d bytes, without its size", len(data))
	}
	n := int64(binary.LittleEndian.Uint32(body))
	if n > int64(maxRecipe) {
		return nil, fmt.Errorf("a compressed recipe of %d bytes, more than the %d a reader takes", n, maxRecipe)
	}
	raw, err := frameCodec.Decompress(nil, body[4:], int(n))
	if err != nil {
		return nil, fmt.Errorf("a compressed recipe: %w", err)
	}
	return decodeRecipe(raw)
}

// encode encodes r as it was read: a recipe of today, or (for the tests)
// of recipeMagicV1.
func (r *recipe) encode() []byte {
	b := []byte(recipeMagic)
	if r.v1 {
		b = []byte(recipeMagicV1)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(r.Frames)))
	for _, f := range r.Frames {
		b = binary.LittleEndian.AppendUint32(b, f.Raw)
		if r.v1 {
			b = binary.LittleEndian.AppendUint32(b, f.CRC)
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(len(f.Items)))
		for _, it := range f.Items {
			if it.isLit {
				b = append(b, 0)
				b = binary.LittleEndian.AppendUint32(b, uint32(len(it.Lit)))
				b = append(b, it.Lit...)
				continue
			}
			b = append(b, 1)
			b = append(b, it.Block[:]...)
			b = binary.LittleEndian.AppendUint32(b, it.From)
			b = binary.LittleEndian.AppendUint32(b, it.N)
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32c(b))
}

func decodeRecipe(data []byte) (*recipe, error) {
	v1 := bytes.HasPrefix(data, []byte(recipeMagicV1))
	magic, frameBytes := recipeMagic, 8
	if v1 {
		magic, frameBytes = recipeMagicV1, 12
	}
	body, err := checked(data, magic)
	if err != nil {
		return nil, err
	}
	d := &decoder{b: body}
	r := &recipe{v1: v1}
	for range d.count(frameBytes) {
		f := recipeFrame{Raw: d.u32()}
		if v1 {
			f.CRC = d.u32()
		}
		var sum uint64
		for range d.count(5) {
			var it item
			switch kind := d.take(1)[0]; kind {
			case 0:
				it.isLit, it.Lit = true, d.take(int(d.u32()))
				sum += uint64(len(it.Lit))
			case 1:
				copy(it.Block[:], d.take(32))
				it.From, it.N = d.u32(), d.u32()
				if d.err == nil && uint64(it.From)+uint64(it.N) > BlockSize {
					return nil, fmt.Errorf("a slice of block %s past its end", it.Block)
				}
				sum += uint64(it.N)
			default:
				if d.err == nil {
					return nil, fmt.Errorf("item kind %d", kind)
				}
			}
			f.Items = append(f.Items, it)
		}
		if d.err == nil && sum != uint64(f.Raw) {
			return nil, fmt.Errorf("frame %d: items of %d bytes, the frame has %d", len(r.Frames), sum, f.Raw)
		}
		r.Frames = append(r.Frames, f)
	}
	switch {
	case d.err != nil:
		return nil, d.err
	case len(d.b) != 0:
		return nil, fmt.Errorf("%d bytes after the last frame", len(d.b))
	}
	return r, nil
}

// headMagic starts the recipe object of a stream whose recipe was
// stored in parts: a stream of more than partTarget bytes of recipe (some
// 25 GiB of data) is not held whole by the backup that writes it nor by
// a restore that reads it. Each part is a recipe object of its own (of
// consecutive frames, sealed as recipeZMagic says), which the head names
// with its size and digest:
//
//	"BSDDH001"
//	parts u32, each: name length u16, name, size u64, digest length u16,
//	  digest, frames u32, each frame's raw size u32
//	crc32c u32 of everything before it
//
// A stream whose recipe fits in one part keeps the one recipe object.
const headMagic = "BSDDH001"

// head is the list of a stream's recipe parts.
type head struct {
	Parts []recipePart
}

// recipePart is one part of a stream's recipe: its object, in the
// backup's directory, and the raw size of each of its frames.
type recipePart struct {
	Object archive.Object
	Raw    []uint32
}

func (h *head) encode() []byte {
	b := binary.LittleEndian.AppendUint32([]byte(headMagic), uint32(len(h.Parts)))
	for _, p := range h.Parts {
		b = appendString(b, p.Object.Name)
		b = binary.LittleEndian.AppendUint64(b, uint64(p.Object.Size))
		b = appendString(b, p.Object.Digest)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(p.Raw)))
		for _, r := range p.Raw {
			b = binary.LittleEndian.AppendUint32(b, r)
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32c(b))
}

func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func decodeHead(data []byte) (*head, error) {
	body, err := checked(data, headMagic)
	if err != nil {
		return nil, err
	}
	d := &decoder{b: body}
	h := &head{}
	for range d.count(2 + 8 + 2 + 4) {
		var p recipePart
		p.Object.Name = string(d.take(int(d.u16())))
		p.Object.Size = int64(d.u64())
		p.Object.Digest = string(d.take(int(d.u16())))
		for range d.count(4) {
			p.Raw = append(p.Raw, d.u32())
		}
		// A part is an object of the backup's recipe/ directory.
		badName := !strings.HasPrefix(p.Object.Name, recipeDir) || strings.Contains(p.Object.Name, "..")
		if d.err == nil && (badName || p.Object.Size < 0 || p.Object.Size > archive.MaxSmallObject || len(p.Raw) == 0) {
			return nil, fmt.Errorf("part %d: object %q of %d bytes, %d frames", len(h.Parts), p.Object.Name, p.Object.Size, len(p.Raw))
		}
		h.Parts = append(h.Parts, p)
	}
	switch {
	case d.err != nil:
		return nil, d.err
	case len(d.b) != 0:
		return nil, fmt.Errorf("%d bytes after the last part", len(d.b))
	case len(h.Parts) == 0:
		return nil, fmt.Errorf("no part")
	}
	return h, nil
}
