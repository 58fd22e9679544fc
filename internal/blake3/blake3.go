// Package blake3 is BLAKE3 hashed on one goroutine as wide as the CPU's
// vectors go: 16 chunks of 1 KiB at once with AVX-512, 8 with AVX2. It
// hashes every byte a backup reads (each file's digest, each block's
// keyed name) beside goroutines that keep the other cores busy with
// compression, where a hasher that spreads one input over goroutines
// (lukechampine.com/blake3's own) gains nothing and one no wider than
// AVX2 (github.com/zeebo/blake3) hashes half as many chunks a step. The
// digests are BLAKE3's: the same as any other implementation's (tested
// against github.com/zeebo/blake3).
package blake3

import (
	"encoding/binary"
	"errors"

	"lukechampine.com/blake3/guts"
)

// Size is the size of a digest in bytes.
const Size = 32

// group is what one step hashes: as many chunks as the widest vectors
// hold.
const group = guts.MaxSIMD * guts.ChunkSize

// groupHeight is a group's height in BLAKE3's tree of chunks.
const groupHeight = 4 // 2^4 == guts.MaxSIMD

// Hasher is a BLAKE3 hash.Hash with a 32-byte digest. The zero value is
// not ready: use New or NewKeyed.
type Hasher struct {
	key   [8]uint32
	flags uint32
	// the chaining values of the whole subtrees hashed so far, at most
	// one a height (from groupHeight), and how many chunks they hold:
	// bit i of chunks says whether the subtree of height i is there
	stack  [64][8]uint32
	chunks uint64
	// the last group written, hashed once more is written (the last is
	// the root's, or part of it, and hashes with other flags)
	buf    [group]byte
	buflen int
}

// New returns a hasher of BLAKE3's hash mode.
func New() *Hasher { return &Hasher{key: guts.IV} }

// NewKeyed returns a hasher of BLAKE3's keyed mode with a 32-byte key.
func NewKeyed(key []byte) (*Hasher, error) {
	if len(key) != 32 {
		return nil, errors.New("blake3: a key is 32 bytes")
	}
	h := &Hasher{flags: guts.FlagKeyedHash}
	for i := range h.key {
		h.key[i] = binary.LittleEndian.Uint32(key[4*i:])
	}
	return h, nil
}

// Write adds p to the hash; it never fails.
func (h *Hasher) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if h.buflen == group {
			h.push(&h.buf)
			h.buflen = 0
		}
		if h.buflen == 0 && len(p) > group {
			h.push((*[group]byte)(p))
			p = p[group:]
			continue
		}
		c := copy(h.buf[h.buflen:], p)
		h.buflen += c
		p = p[c:]
	}
	return n, nil
}

// push hashes a whole group that more bytes follow into the stack,
// merging the subtrees it completes.
func (h *Hasher) push(b *[group]byte) {
	cv := guts.ChainingValue(guts.CompressBuffer(b, group, &h.key, h.chunks, h.flags))
	i := groupHeight
	for h.chunks&(1<<i) != 0 {
		cv = guts.ChainingValue(guts.ParentNode(h.stack[i], cv, &h.key, h.flags))
		i++
	}
	h.stack[i] = cv
	h.chunks += guts.MaxSIMD
}

// Sum appends the digest of what was written to b; the hash goes on as
// it was.
func (h *Hasher) Sum(b []byte) []byte {
	n := guts.CompressBuffer(&h.buf, h.buflen, &h.key, h.chunks, h.flags)
	for i := groupHeight; i < len(h.stack); i++ {
		if h.chunks&(1<<i) != 0 {
			n = guts.ParentNode(h.stack[i], guts.ChainingValue(n), &h.key, h.flags)
		}
	}
	n.Flags |= guts.FlagRoot
	out := guts.WordsToBytes(guts.CompressNode(n))
	return append(b, out[:Size]...)
}

// Reset forgets what was written; a keyed hasher keeps its key.
func (h *Hasher) Reset() { h.chunks, h.buflen = 0, 0 }

// Size is the size of the digest Sum appends.
func (h *Hasher) Size() int { return Size }

// BlockSize is BLAKE3's block size.
func (h *Hasher) BlockSize() int { return guts.BlockSize }
