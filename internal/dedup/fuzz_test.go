package dedup

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
)

// sealed is body with its CRC-32C appended, so that the fuzzer's inputs
// reach the decoding behind the check; seeds are objects without theirs.
func sealed(body []byte) []byte {
	return binary.LittleEndian.AppendUint32(bytes.Clone(body), crc32c(body))
}

func unsealed(obj []byte) []byte { return obj[:len(obj)-4] }

// An index object is what whoever writes to the repository controls:
// decoding any bytes ends in an index or an error, never a panic, and an
// index that decodes encodes to the same bytes.
func FuzzDecodeIndex(f *testing.F) {
	ix := &index{
		Packs:  []packRef{{Name: "dedup/packs/ab/ab01.pack", Size: 100}},
		Frames: []frameRef{{Pack: "dedup/packs/ab/ab01.pack", Offset: 0, Stored: 100, Raw: 200, CRC: 7}},
		Blocks: []blockRef{{Name: Name{1, 2, 3}, Frame: 0, Offset: 0, Len: 200}},
	}
	f.Add(unsealed(ix.encode()))
	f.Add(unsealed((&index{}).encode()))
	f.Add([]byte(indexMagic))
	f.Fuzz(func(t *testing.T, body []byte) {
		data := sealed(body)
		if _, err := decodeIndex(body); err == nil && len(body) > 0 {
			t.Errorf("an index without its CRC-32C decoded")
		}
		got, err := decodeIndex(data)
		if err != nil {
			return
		}
		if again := got.encode(); !bytes.Equal(again, data) {
			t.Errorf("decoded and encoded again: %d bytes, from %d", len(again), len(data))
		}
	})
}

// A recipe, likewise.
func FuzzDecodeRecipe(f *testing.F) {
	r := &recipe{Frames: []recipeFrame{{Raw: 13, Items: []item{
		{isLit: true, Lit: []byte("header")},
		{Block: Name{9}, From: 10, N: 7},
	}}}}
	f.Add(unsealed(r.encode()))
	f.Add(unsealed((&recipe{}).encode()))
	r.v1, r.Frames[0].CRC = true, 9
	f.Add(unsealed(r.encode()))
	f.Fuzz(func(t *testing.T, body []byte) {
		data := sealed(body)
		got, err := decodeRecipe(data)
		if err != nil {
			return
		}
		if again := got.encode(); !bytes.Equal(again, data) {
			t.Errorf("decoded and encoded again: %d bytes, from %d", len(again), len(data))
		}
	})
}

// A recipe object as backups store it (compressed): decoding any bytes
// ends in a recipe or an error, never a panic, and never takes more than
// maxRecipe bytes decompressed.
func FuzzOpenRecipe(f *testing.F) {
	defer SetMaxRecipe(1 << 20)()
	r := &recipe{Frames: []recipeFrame{{Raw: 13, Items: []item{
		{isLit: true, Lit: []byte("header")},
		{Block: Name{9}, From: 10, N: 7},
	}}}}
	sealed, err := r.seal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sealed)
	f.Add([]byte(recipeZMagic))
	f.Add(r.encode())
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := openRecipe(data)
		if err == nil && len(got.encode()) > maxRecipe {
			t.Errorf("a recipe of %d bytes, past the %d a reader takes", len(got.encode()), maxRecipe)
		}
	})
}

// A recipe's head, likewise: what it names stays in the backup's recipe
// directory.
func FuzzDecodeHead(f *testing.F) {
	h := &head{Parts: []recipePart{
		{Object: archive.Object{Name: partName(3, 0), Size: 1000, Digest: "blake3:00ff"}, Raw: []uint32{1 << 20, 77}},
		{Object: archive.Object{Name: partName(3, 1), Size: 20, Digest: "blake3:01"}, Raw: []uint32{5}},
	}}
	f.Add(unsealed(h.encode()))
	f.Add([]byte(headMagic))
	f.Fuzz(func(t *testing.T, body []byte) {
		data := sealed(body)
		got, err := decodeHead(data)
		if err != nil {
			return
		}
		for _, p := range got.Parts {
			if !strings.HasPrefix(p.Object.Name, recipeDir) || strings.Contains(p.Object.Name, "..") {
				t.Errorf("a head naming part %q decoded", p.Object.Name)
			}
		}
		if again := got.encode(); !bytes.Equal(again, data) {
			t.Errorf("decoded and encoded again: %d bytes, from %d", len(again), len(data))
		}
	})
}
