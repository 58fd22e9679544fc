package recycle

import (
	"runtime"
	"testing"
)

// A buffer given back is the next one handed out, on any goroutine,
// while it lives.
func TestBufferGivenBackIsReused(t *testing.T) {
	var l List
	b := make([]byte, 3<<20)
	p := &b[0]
	l.Put(b)
	got := make(chan []byte)
	go func() { got <- l.Get() }()
	if c := <-got; len(c) != 3<<20 || &c[0] != p {
		t.Fatalf("got a buffer of %d bytes; want the one given back (%d bytes at %p)", len(c), 3<<20, p)
	}
	if c := l.Get(); c != nil {
		t.Fatalf("a buffer given back once was handed out twice")
	}
}

// An idle buffer does not outlive the first collection that finds it
// idle: what a budget gave back is never kept reachable above the
// runtime's memory limit (a sync.Pool's survived one collection whole).
func TestIdleBufferDiesAtTheFirstCollection(t *testing.T) {
	var l List
	l.Put(make([]byte, 5<<20))
	runtime.GC()
	if b := l.Get(); b != nil {
		t.Fatalf("a buffer of %d bytes outlived a collection idle", len(b))
	}
}

// A class given back far more often than asked for keeps no more than
// twice its live buffers' pointers, however many died.
func TestDeadBuffersAreForgotten(t *testing.T) {
	var l List
	for range 100 {
		for range 100 {
			l.Put(make([]byte, 1024))
		}
		runtime.GC()
	}
	if n := len(l.idle); n > 2*minPrune+100 {
		t.Fatalf("%d pointers kept after 10,000 buffers given back and collected", n)
	}
}
