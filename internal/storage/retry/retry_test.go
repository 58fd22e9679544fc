package retry

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/faulty"
	"github.com/backstream/backstream/internal/storage/local/localtest"
	"github.com/backstream/backstream/internal/storage/storagetest"
)

func TestBackoff(t *testing.T) {
	for attempt := range 40 {
		d := Backoff(attempt)
		ceiling := backoffMax
		if attempt < 5 {
			ceiling = backoffBase << attempt
		}
		if d < ceiling/2 || d > ceiling {
			t.Errorf("Backoff(%d) = %v, want within [%v, %v]", attempt, d, ceiling/2, ceiling)
		}
	}
}

var errFlaky = errors.New("connection reset")

// failing returns an fn for Do that fails transiently n times, then
// succeeds, counting its calls.
func failing(n int, calls *int) func(context.Context) error {
	return func(context.Context) error {
		*calls++
		if *calls <= n {
			return storage.Transient(errFlaky)
		}
		return nil
	}
}

func TestDo(t *testing.T) {
	ctx := t.Context()
	t.Run("transient failures pass", func(t *testing.T) {
		calls, retried := 0, 0
		p := Policy{Window: time.Minute, OnRetry: func(err error, _ time.Duration) {
			retried++
			if !errors.Is(err, errFlaky) {
				t.Errorf("OnRetry got %v", err)
			}
		}}
		if err := p.Do(ctx, failing(3, &calls)); err != nil || calls != 4 || retried != 3 {
			t.Errorf("Do = %v after %d calls and %d retries, want success after 4 and 3", err, calls, retried)
		}
	})
	t.Run("permanent fails at once", func(t *testing.T) {
		calls := 0
		denied := errors.New("access denied")
		err := Policy{}.Do(ctx, func(context.Context) error { calls++; return denied })
		if err != denied || calls != 1 {
			t.Errorf("Do = %v after %d calls, want the error itself after 1", err, calls)
		}
	})
	t.Run("window", func(t *testing.T) {
		calls := 0
		const window = time.Second
		start := time.Now()
		err := Policy{Window: window}.Do(ctx, failing(1<<30, &calls))
		took := time.Since(start)
		var ex *ExhaustedError
		if !errors.As(err, &ex) || ex.Attempts != calls || ex.Window != window || !errors.Is(err, errFlaky) {
			t.Fatalf("Do = %v after %d calls, want an ExhaustedError of them wrapping the last failure", err, calls)
		}
		if storage.IsTransient(err) {
			t.Error("an exhausted error is still transient: a layer above would retry it again")
		}
		if took > window || calls < 3 || !strings.Contains(err.Error(), "retry window 1s") {
			t.Errorf("gave up after %v and %d calls with %q; want within the window of %v and several calls", took, calls, err, window)
		}
	})
	t.Run("cancelled while waiting", func(t *testing.T) {
		ctx, cancel := context.WithCancel(ctx)
		calls := 0
		err := Policy{OnRetry: func(error, time.Duration) { cancel() }}.Do(ctx, failing(1<<30, &calls))
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), errFlaky.Error()) || calls != 1 {
			t.Errorf("Do = %v after %d calls, want context.Canceled noting the failure after 1", err, calls)
		}
	})
	t.Run("cancelled before", func(t *testing.T) {
		ctx, cancel := context.WithCancel(ctx)
		cancel()
		calls := 0
		if err := (Policy{}).Do(ctx, failing(0, &calls)); !errors.Is(err, context.Canceled) || calls != 0 {
			t.Errorf("Do = %v after %d calls, want context.Canceled before any", err, calls)
		}
	})
}

// counting returns a Policy with window that counts its retries.
func counting(window time.Duration, n *atomic.Int64) Policy {
	return Policy{Window: window, OnRetry: func(error, time.Duration) { n.Add(1) }}
}

// Over a store that never fails transiently the decorator is invisible;
// over one that does now and then, the suite cannot tell either.
func TestConformance(t *testing.T) {
	t.Run("local", func(t *testing.T) {
		storagetest.Run(t, func(t *testing.T) storage.Backend { return New(localtest.New(t), Policy{}) })
	})
	t.Run("flaky", func(t *testing.T) {
		var retries atomic.Int64
		storagetest.Run(t, func(t *testing.T) storage.Backend {
			fb := faulty.New(localtest.New(t))
			for _, op := range []string{faulty.OpOpen, faulty.OpRead, faulty.OpStat, faulty.OpList, faulty.OpDelete} {
				fb.Add(faulty.Fault{Op: op, After: 3000, Err: storage.Transient(errFlaky), Times: 1})
			}
			return New(fb, counting(time.Minute, &retries))
		})
		if retries.Load() == 0 {
			t.Error("no transient fault was retried: the test did not test")
		}
	})
}

func TestForwards(t *testing.T) {
	storagetest.Forwards(t, localtest.New(t), func(b storage.Backend) storage.Backend { return New(b, Policy{}) })
}

// flaky returns a retrying backend over a store whose calls fail as
// faults say, with one object "obj" of 100 KiB.
func flaky(t *testing.T, window time.Duration, faults ...faulty.Fault) (*Backend, *faulty.Backend, *atomic.Int64, []byte) {
	t.Helper()
	inner := localtest.New(t)
	data := bytes.Repeat([]byte("0123456789abcdef"), 100<<10/16)
	if _, err := inner.Put(t.Context(), "obj", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	fb := faulty.New(inner)
	for _, f := range faults {
		fb.Add(f)
	}
	var retries atomic.Int64
	return New(fb, counting(window, &retries)), fb, &retries, data
}

func TestRetriesCalls(t *testing.T) {
	ctx := t.Context()
	calls := map[string]func(b *Backend) error{
		faulty.OpStat: func(b *Backend) error { _, err := b.Stat(ctx, "obj"); return err },
		faulty.OpList: func(b *Backend) error { _, err := b.List(ctx, "obj"); return err },
		faulty.OpOpen: func(b *Backend) error {
			rc, err := b.Open(ctx, "obj", 0, -1)
			if err == nil {
				rc.Close()
			}
			return err
		},
		faulty.OpDelete: func(b *Backend) error { return b.Delete(ctx, "obj") },
	}
	for op, call := range calls {
		t.Run(op, func(t *testing.T) {
			// Two transient failures are ridden out.
			b, fb, retries, _ := flaky(t, time.Minute, faulty.Fault{Op: op, Err: storage.Transient(errFlaky), Times: 2})
			if err := call(b); err != nil || fb.Fired() != 2 || retries.Load() != 2 {
				t.Errorf("%s through two transient failures = %v (%d fired, %d retries), want success after 2 retries", op, err, fb.Fired(), retries.Load())
			}
			// A permanent failure is reported at once.
			b, fb, retries, _ = flaky(t, time.Minute, faulty.Fault{Op: op, Err: errFlaky})
			if err := call(b); !errors.Is(err, errFlaky) || fb.Fired() != 1 || retries.Load() != 0 {
				t.Errorf("%s with a permanent failure = %v (%d fired, %d retries), want it at once", op, err, fb.Fired(), retries.Load())
			}
			// Failures that do not pass end with the window.
			b, _, _, _ = flaky(t, time.Second, faulty.Fault{Op: op, Err: storage.Transient(errFlaky)})
			var ex *ExhaustedError
			if err := call(b); !errors.As(err, &ex) || !errors.Is(err, errFlaky) || !strings.Contains(err.Error(), "obj") {
				t.Errorf("%s failing for good = %v, want an ExhaustedError naming the object", op, err)
			}
		})
	}
}

// Put is not retried: its reader cannot be read again.
func TestPutNotRetried(t *testing.T) {
	b, fb, retries, _ := flaky(t, time.Minute, faulty.Fault{Op: faulty.OpPut, After: 10, Err: storage.Transient(errFlaky), Times: 1})
	if _, err := b.Put(t.Context(), "new", strings.NewReader(strings.Repeat("x", 100))); !errors.Is(err, errFlaky) || fb.Fired() != 1 || retries.Load() != 0 {
		t.Errorf("Put = %v (%d fired, %d retries), want the failure, not retried", err, fb.Fired(), retries.Load())
	}
}

// A read that fails transiently goes on where it stopped; one that fails
// for good, or keeps failing, ends.
func TestResumesReads(t *testing.T) {
	ctx := t.Context()
	readAll := func(b *Backend, off, length int64) ([]byte, error) {
		rc, err := b.Open(ctx, "obj", off, length)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(rc)
	}
	b, fb, retries, data := flaky(t, time.Minute,
		faulty.Fault{Op: faulty.OpRead, After: 1000, Err: storage.Transient(errFlaky)},
		faulty.Fault{Op: faulty.OpRead, After: 50000, Err: storage.Transient(errFlaky), Times: 1},
		faulty.Fault{Op: faulty.OpRead, After: 50000, Err: storage.Transient(errFlaky), Times: 1})
	got, err := readAll(b, 10, 90000)
	if err != nil || !bytes.Equal(got, data[10:90010]) || fb.Fired() != 3 || retries.Load() != 3 {
		t.Errorf("read through 3 transient failures: %d bytes, %v (%d fired, %d retries); want the range intact", len(got), err, fb.Fired(), retries.Load())
	}

	b, _, _, _ = flaky(t, time.Minute, faulty.Fault{Op: faulty.OpRead, After: 1000, Err: errFlaky})
	if got, err := readAll(b, 0, -1); !errors.Is(err, errFlaky) || len(got) != 1000 {
		t.Errorf("read with a permanent failure: %d bytes, %v; want 1000 and the failure", len(got), err)
	}

	// Failures that do not pass end the read with the window.
	inner := localtest.New(t)
	if _, err := inner.Put(ctx, "obj", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	rc, err := New(brokenReads{inner}, Policy{Window: time.Second}).Open(ctx, "obj", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var ex *ExhaustedError
	if _, err := io.ReadAll(rc); !errors.As(err, &ex) || !errors.Is(err, errFlaky) {
		t.Errorf("read failing for good = %v, want an ExhaustedError", err)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if rc, err := b.Open(cancelled, "obj", 0, -1); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "obj") {
		if err == nil {
			rc.Close()
		}
		t.Errorf("Open with a cancelled context = %v, want context.Canceled naming the object", err)
	}
}

// brokenReads is a store whose readers fail transiently at every Read.
type brokenReads struct{ storage.Backend }

func (b brokenReads) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	rc, err := b.Backend.Open(ctx, name, off, length)
	if err != nil {
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{readerFunc(func([]byte) (int, error) { return 0, storage.Transient(errFlaky) }), rc}, nil
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
