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
				q.done(f.t)
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
