package logical

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Files of a serial table never load at once; others do; every file is
// taken exactly once; take ends when the queue is closed and empty.
func TestFileQueue(t *testing.T) {
	q := newFileQueue(context.Background(), 3)
	serial, parallel := &target{name: "s", serial: true}, &target{name: "p"}
	var files []*loadFile
	for i := range 20 {
		tt := serial
		if i%2 == 1 {
			tt = parallel
		}
		files = append(files, &loadFile{t: tt, chunk: Chunk{ID: i}})
	}
	var inSerial, maxSerial, inParallel, maxParallel atomic.Int32
	taken := make([]atomic.Int32, len(files))
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := q.take(); f != nil; f = q.take() {
				in, m := &inParallel, &maxParallel
				if f.t.serial {
					in, m = &inSerial, &maxSerial
				}
				if n := in.Add(1); n > m.Load() {
					m.Store(n)
				}
				time.Sleep(2 * time.Millisecond)
				in.Add(-1)
				taken[f.chunk.ID].Add(1)
				q.done(f.t, true)
			}
		}()
	}
	for _, f := range files {
		if err := q.put(f); err != nil {
			t.Fatal(err)
		}
	}
	q.close()
	wg.Wait()
	if maxSerial.Load() != 1 {
		t.Errorf("%d loads of the serial table at once", maxSerial.Load())
	}
	if maxParallel.Load() < 2 {
		t.Errorf("the parallel table never loaded twice at once (max %d)", maxParallel.Load())
	}
	for i := range taken {
		if n := taken[i].Load(); n != 1 {
			t.Errorf("file %d taken %d times", i, n)
		}
	}
}

// A cancelled load wakes a full queue's writer and its takers.
func TestFileQueueCancel(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	q := newFileQueue(ctx, 1)
	tt := &target{serial: true}
	if err := q.put(&loadFile{t: tt}); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- q.put(&loadFile{t: tt}) }()
	stop := errors.New("stop")
	cancel(stop)
	select {
	case err := <-errc:
		if !errors.Is(err, stop) {
			t.Errorf("put after cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("put still blocked after cancel")
	}
	if f := q.take(); f != nil {
		t.Errorf("take after cancel returned a file")
	}
}

// The first file of a table loads alone: into an empty table InnoDB
// inserts in bulk under a table lock, and two such loads wait for each
// other. Once one has loaded, the rest of a table without AUTO_INCREMENT
// load at once; one that failed lets the next file load alone again.
func TestFileQueueFirstFileAlone(t *testing.T) {
	q := newFileQueue(context.Background(), 10)
	tt := &target{name: "p"}
	// Enough for the take takeSoon gave up on, which takes one later.
	for i := range 6 {
		if err := q.put(&loadFile{t: tt, chunk: Chunk{ID: i}}); err != nil {
			t.Fatal(err)
		}
	}
	q.close()
	takeSoon := func() *loadFile {
		got := make(chan *loadFile, 1)
		go func() { got <- q.take() }()
		select {
		case f := <-got:
			return f
		case <-time.After(100 * time.Millisecond):
			t.Cleanup(func() { <-got })
			return nil
		}
	}
	first := q.take()
	waiting := make(chan *loadFile, 1)
	go func() { waiting <- q.take() }()
	select {
	case f := <-waiting:
		t.Fatalf("file %d taken while the table's first file loads", f.chunk.ID)
	case <-time.After(100 * time.Millisecond):
	}
	q.done(first.t, false) // failed: the table is still empty
	second := <-waiting
	if f := takeSoon(); f != nil {
		t.Fatalf("file %d taken while the table's next first file loads", f.chunk.ID)
	}
	q.done(second.t, true)
	a, b := takeSoon(), takeSoon()
	if a == nil || b == nil {
		t.Fatalf("after a file loaded, two files of the table are not taken at once (%v, %v)", a, b)
	}
}
