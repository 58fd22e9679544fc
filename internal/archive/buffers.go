package archive

import "github.com/backstream/backstream/internal/recycle"

// Buffers of a few MiB move through every stage (chunks, frames,
// compressed and decoded frames). Recycling them spares the allocator and
// the GC from zeroing and collecting gigabytes per backup. Idle buffers
// are kept per size class of 1 MiB so that a request finds a buffer that
// fits, held weakly (see recycle): the buffers a Read gave back with its
// budget are what the next frame reuses, never memory kept above the
// runtime's limit.
const (
	bufClass    = 1 << 20
	bufClasses  = 300 // buffers up to 300 MiB are recycled: frames are at most maxFrameBytes
	minPoolSize = 64 << 10
)

var freeLists [bufClasses + 1]recycle.List

func classOf(n int) int { return (n + bufClass - 1) / bufClass }

// getBuf returns an empty buffer with capacity of at least n.
func getBuf(n int) []byte {
	c := classOf(n)
	if n < minPoolSize || c > bufClasses {
		return make([]byte, 0, n)
	}
	if b := freeLists[c].Get(); b != nil {
		return b[:0]
	}
	return make([]byte, 0, c*bufClass)
}

// bufCharge is the capacity getBuf(n) hands out: what a buffer of n bytes
// takes from a memory budget.
func bufCharge(n int) int64 {
	c := classOf(n)
	if n < minPoolSize || c > bufClasses {
		return int64(n)
	}
	return int64(c) * bufClass
}

// putBuf gives a buffer back for reuse. The caller must not touch it again.
func putBuf(b []byte) {
	n := cap(b)
	c := n / bufClass // the class it fully serves
	if n < minPoolSize || c < 1 || c > bufClasses {
		return
	}
	freeLists[c].Put(b[:0])
}
