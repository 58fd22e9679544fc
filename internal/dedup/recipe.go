package dedup

import (
	"encoding/binary"
	"fmt"
)

// recipeMagic starts a stream's recipe: its frames, each as the items
// whose bytes, one after another, are the frame.
//
//	"BSDDR001"
//	frames u32, each: raw u32, crc32c u32, items u32, each item:
//	  0, length u32, the bytes (a chunk's header, or a chunk without payload)
//	  1, name [32], from u32, length u32 (bytes of a block)
//	crc32c u32 of everything before it
const recipeMagic = "BSDDR001"

type recipeFrame struct {
	Raw, CRC uint32
	Items    []item
}

// item is bytes of a frame: literal, or a slice of a block.
type item struct {
	Lit     []byte
	Block   Name
	handle  int // the block's, while it is not named yet (Output)
	From, N uint32
	isLit   bool
}

type recipe struct{ Frames []recipeFrame }

func (r *recipe) encode() []byte {
	b := []byte(recipeMagic)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(r.Frames)))
	for _, f := range r.Frames {
		b = binary.LittleEndian.AppendUint32(b, f.Raw)
		b = binary.LittleEndian.AppendUint32(b, f.CRC)
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
	body, err := checked(data, recipeMagic)
	if err != nil {
		return nil, err
	}
	d := &decoder{b: body}
	r := &recipe{}
	for range d.count(12) {
		f := recipeFrame{Raw: d.u32(), CRC: d.u32()}
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
