package archive

import (
	"sync"
	"weak"
)

// Buffers of a few MiB move through every stage (chunks, frames,
// compressed and decoded frames). Recycling them spares the allocator and
// the GC from zeroing and collecting gigabytes per backup. Idle buffers
// are kept per size class of 1 MiB so that a request finds a buffer that
// fits.
const (
	bufClass    = 1 << 20
	bufClasses  = 300 // buffers up to 300 MiB are recycled: frames are at most maxFrameBytes
	minPoolSize = 64 << 10
)

// freeList holds a size class's idle buffers weakly: one is reused while
// it lives, and the first collection that finds it idle frees it. So the
// buffers a Read gave back with its budget are memory the next frame
// reuses, whichever goroutine and processor it runs on, and never memory
// kept above the runtime's limit: a sync.Pool's are reachable through a
// whole collection (its victim cache), and a buffer in one processor's
// private slot is out of reach of the others, so a command under a
// budget held up to three frames' buffers where the budget allowed one
// (peak RSS 213 MiB under a 128 MiB budget, TestMemoryBudgetBoundsReaders).
type freeList struct {
	mu   sync.Mutex
	idle []weak.Pointer[[]byte]
}

// get returns an idle buffer that is still alive, or nil.
func (l *freeList) get() *[]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	for n := len(l.idle); n > 0; n-- {
		p := l.idle[n-1].Value()
		l.idle = l.idle[:n-1]
		if p != nil {
			return p
		}
	}
	return nil
}

func (l *freeList) put(p *[]byte) {
	w := weak.Make(p)
	l.mu.Lock()
	l.idle = append(l.idle, w)
	l.mu.Unlock()
}

var freeLists [bufClasses + 1]freeList

func classOf(n int) int { return (n + bufClass - 1) / bufClass }

// getBuf returns an empty buffer with capacity of at least n.
func getBuf(n int) []byte {
	c := classOf(n)
	if n < minPoolSize || c > bufClasses {
		return make([]byte, 0, n)
	}
	if p := freeLists[c].get(); p != nil {
		return (*p)[:0]
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
	b = b[:0]
	freeLists[c].put(&b)
}
