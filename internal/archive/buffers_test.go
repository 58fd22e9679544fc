package archive

import (
	"runtime"
	"testing"
)

// A buffer given back is the next one of its class handed out, on any
// goroutine, while it lives.
func TestBufferGivenBackIsReused(t *testing.T) {
	b := getBuf(3 << 20)
	b = append(b, 7)
	p := &b[:1][0]
	putBuf(b)
	got := make(chan []byte)
	go func() { got <- getBuf(3<<20 - 100) }()
	c := <-got
	if cap(c) != 3<<20 || &c[:1][0] != p {
		t.Fatalf("got a buffer of %d bytes at %p; want the one given back (%d bytes at %p)", cap(c), &c[:1][0], 3<<20, p)
	}
}

// An idle buffer does not outlive the first collection that finds it
// idle: what a budget gave back is never kept reachable above the
// runtime's memory limit (a sync.Pool's survived one collection whole).
func TestIdleBufferDiesAtTheFirstCollection(t *testing.T) {
	for range 2 { // what an earlier test left idle
		runtime.GC()
	}
	putBuf(getBuf(5 << 20))
	runtime.GC()
	if p := freeLists[5].get(); p != nil {
		t.Fatalf("a buffer of %d bytes outlived a collection idle", cap(*p))
	}
}
