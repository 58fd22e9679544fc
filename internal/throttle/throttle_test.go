package throttle

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"
)

func randomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func TestNoLimitIsTheReaderItself(t *testing.T) {
	for _, rate := range []int64{0, -1} {
		if l := NewLimiter(rate); l != nil {
			t.Errorf("NewLimiter(%d) = %v, want nil (no limit)", rate, l)
		}
	}
	r := bytes.NewReader([]byte("x"))
	if got := NewReader(context.Background(), r, nil); got != r {
		t.Errorf("NewReader with no limit wrapped the reader: %T", got)
	}
	var l *Limiter
	if err := l.Wait(context.Background(), 1<<30); err != nil {
		t.Errorf("nil Limiter: Wait = %v, want nil", err)
	}
}

// Every read pattern iotest knows delivers exactly the bytes of the source.
func TestReaderDeliversTheBytes(t *testing.T) {
	data := randomBytes(1<<20+17, 1)
	l := NewLimiter(1 << 30)
	if err := iotest.TestReader(NewReader(context.Background(), bytes.NewReader(data), l), data); err != nil {
		t.Fatal(err)
	}
	// Reads far bigger than a burst, and reads of one byte.
	var out bytes.Buffer
	if _, err := io.CopyBuffer(&out, NewReader(context.Background(), bytes.NewReader(data), l), make([]byte, 64<<20)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), data) {
		t.Fatal("copy through the limiter changed the bytes")
	}
	small := data[:100<<10]
	got, err := io.ReadAll(NewReader(context.Background(), iotest.OneByteReader(bytes.NewReader(small)), l))
	if err != nil || !bytes.Equal(got, small) {
		t.Fatalf("one byte at a time: %d bytes, %v", len(got), err)
	}
}

// An error of the source comes through, with the bytes read before it.
func TestReaderPassesErrorsOn(t *testing.T) {
	boom := errors.New("disk on fire")
	src := io.MultiReader(bytes.NewReader([]byte("abc")), iotest.ErrReader(boom))
	got, err := io.ReadAll(NewReader(context.Background(), src, NewLimiter(1<<20)))
	if string(got) != "abc" || !errors.Is(err, boom) {
		t.Fatalf("got %q, %v; want abc, %v", got, err, boom)
	}
}

// The token bucket guarantees a lower bound on the time: whatever the
// machine's load, the bytes beyond the first burst cannot pass faster than
// the rate. Four readers share one limiter, so their sum is bounded.
func TestSharedLimiterBoundsTheSum(t *testing.T) {
	const rate = 8 << 20
	const each = 1 << 20
	l := NewLimiter(rate)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			data := randomBytes(each, uint64(i))
			got, err := io.ReadAll(NewReader(context.Background(), bytes.NewReader(data), l))
			if err == nil && !bytes.Equal(got, data) {
				err = errors.New("bytes differ")
			}
			errs[i] = err
		})
	}
	wg.Wait()
	took := time.Since(start)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("reader %d: %v", i, err)
		}
	}
	least := time.Duration(float64(4*each-l.l.Burst()) / rate * float64(time.Second))
	if took < least {
		t.Errorf("4 MiB at 8 MiB/s took %v, less than the %v the rate allows", took, least)
	}
	t.Logf("4 x 1 MiB at 8 MiB/s through one limiter: %v (at least %v)", took, least)
}

// A wait bigger than the bucket is split, not refused.
func TestWaitSplitsBigRequests(t *testing.T) {
	l := NewLimiter(1 << 30)
	if err := l.Wait(context.Background(), 2*l.l.Burst()+3); err != nil {
		t.Fatal(err)
	}
}

// countingWriter counts what passed, for a test to see a copy under way.
type countingWriter struct{ n atomic.Int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n.Add(int64(len(p)))
	return len(p), nil
}

// Cancelling the context stops a reader blocked on the budget at once,
// with the cause, though the rest of the copy would take minutes.
func TestCancelStopsAWaitingReader(t *testing.T) {
	l := NewLimiter(minBurst) // 64 KiB/s: 16 MiB would take over four minutes
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var w countingWriter
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(&w, NewReader(ctx, bytes.NewReader(make([]byte, 16<<20)), l))
		done <- err
	}()
	for w.n.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	stop := errors.New("operator said stop")
	cancel(stop)
	select {
	case err := <-done:
		if !errors.Is(err, stop) {
			t.Errorf("copy ended with %v, want the cancel cause", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the reader still waits a minute after its context ended")
	}
	if n := w.n.Load(); n >= 16<<20 {
		t.Errorf("all %d bytes passed: the limit did not hold", n)
	}
	// A reader whose context already ended reads nothing.
	n, err := NewReader(ctx, bytes.NewReader([]byte("abc")), l).Read(make([]byte, 3))
	if n != 0 || !errors.Is(err, stop) {
		t.Errorf("read after cancel: %d bytes, %v", n, err)
	}
}
