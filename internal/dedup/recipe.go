package dedup

import (
	"bytes"
	"encoding/binary"
	"fmt"
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
