package codec

import (
	"encoding/binary"
	"math/rand/v2"
	"strconv"
)

// innodbLike returns n bytes that resemble an InnoDB tablespace holding a
// sysbench table: 16 KiB pages with a header, rows of (id, k, c, pad) where c
// and pad are groups of random digits, a partly empty page tail of zeros,
// and now and then a page never written (all zeros).
func innodbLike(n int, seed uint64) []byte {
	const page = 16 << 10
	rng := rand.New(rand.NewPCG(seed, seed^0x9E3779B97F4A7C15))
	out := make([]byte, 0, n+page)
	id := uint32(1)
	lsn := uint64(1_000_000 + rng.IntN(1000))
	digits := func(b []byte, groups int) []byte {
		for g := range groups {
			if g > 0 {
				b = append(b, '-')
			}
			for range 11 {
				b = append(b, byte('0'+rng.IntN(10)))
			}
		}
		return b
	}
	for pageNo := uint32(0); len(out) < n; pageNo++ {
		start := len(out)
		if rng.IntN(10) == 0 {
			out = append(out, make([]byte, page)...)
			continue
		}
		out = binary.BigEndian.AppendUint32(out, rng.Uint32()) // checksum
		out = binary.BigEndian.AppendUint32(out, pageNo)
		out = binary.BigEndian.AppendUint32(out, pageNo-1)
		out = binary.BigEndian.AppendUint32(out, pageNo+1)
		lsn += uint64(rng.IntN(5000))
		out = binary.BigEndian.AppendUint64(out, lsn)
		out = binary.BigEndian.AppendUint16(out, 17855) // FIL_PAGE_INDEX
		out = append(out, make([]byte, 8+4)...)
		out = append(out, make([]byte, 56)...) // index header, mostly zeros
		out = append(out, "infimum\x00supremum"...)
		fill := page - 400 - rng.IntN(page/4)
		for len(out)-start < fill {
			out = append(out, 0x00, 0x00, 0x10, 0x00, byte(rng.IntN(256))) // record header
			out = binary.BigEndian.AppendUint32(out, id|0x80000000)
			out = append(out, 0, 0, 0, 0, byte(rng.IntN(4)), byte(rng.IntN(256)))         // trx id
			out = append(out, 0x80, 0, 0, 0, 0, byte(rng.IntN(256)), byte(rng.IntN(256))) // roll ptr
			out = binary.BigEndian.AppendUint32(out, uint32(rng.IntN(1_000_000))|0x80000000)
			out = digits(out, 10)
			out = digits(out, 5)
			id++
		}
		out = append(out, make([]byte, page-8-(len(out)-start))...)
		out = binary.BigEndian.AppendUint32(out, rng.Uint32())
		out = binary.BigEndian.AppendUint32(out, uint32(lsn))
	}
	return out[:n]
}

// randomBytes returns n incompressible bytes.
func randomBytes(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], rng.Uint64())
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// textLines returns n bytes of TSV-like text, like a logical dump chunk.
func textLines(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 2))
	out := make([]byte, 0, n+128)
	for i := 1; len(out) < n; i++ {
		out = strconv.AppendInt(out, int64(i), 10)
		out = append(out, '\t')
		out = strconv.AppendInt(out, int64(rng.IntN(1_000_000)), 10)
		out = append(out, "\tname-"...)
		out = strconv.AppendInt(out, int64(rng.IntN(5000)), 36)
		out = append(out, "\t\\N\t2024-01-0"...)
		out = append(out, byte('1'+rng.IntN(9)), '\n')
	}
	return out[:n]
}

// allCodecs returns every codec at every level.
func allCodecs() []Codec {
	var cs []Codec
	for _, a := range algorithms {
		if a.maxLevel == 0 {
			cs = append(cs, a.make(0))
			continue
		}
		for l := a.minLevel; l <= a.maxLevel; l++ {
			cs = append(cs, a.make(l))
		}
	}
	return cs
}

// defaultCodecs returns each algorithm at its default level.
func defaultCodecs() []Codec {
	var cs []Codec
	for _, a := range algorithms {
		cs = append(cs, a.make(a.defaultLevel))
	}
	return cs
}
