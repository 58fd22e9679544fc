package limit

import (
	"bytes"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/local/localtest"
	"github.com/backstream/backstream/internal/storage/storagetest"
	"github.com/backstream/backstream/internal/throttle"
)

func TestConformance(t *testing.T) {
	t.Run("limited", func(t *testing.T) {
		// Fast enough for the suite's 20 MiB objects, but every byte
		// passes through the limiters.
		up, down := throttle.NewLimiter(1<<30), throttle.NewLimiter(1<<30)
		storagetest.Run(t, func(t *testing.T) storage.Backend { return New(localtest.New(t), up, down) })
	})
	t.Run("unlimited", func(t *testing.T) {
		storagetest.Run(t, func(t *testing.T) storage.Backend { return New(localtest.New(t), nil, nil) })
	})
}

func TestForwards(t *testing.T) {
	storagetest.Forwards(t, localtest.New(t), func(b storage.Backend) storage.Backend {
		return New(b, throttle.NewLimiter(1<<20), throttle.NewLimiter(1<<20))
	})
}

const rate = 256 << 10 // bytes per second

// atLeast is how long moving n bytes at rate takes at least: all but the
// limiter's burst (a tenth of a second, at least 64 KiB) must wait, less
// 1% for the limiter's clock (of two callers at once, the one that read
// the time first may take tokens second: a full run under load once
// measured 3.7490 s of 3.75).
func atLeast(n int) time.Duration {
	return time.Duration(0.99 * float64(n-64<<10) / rate * float64(time.Second))
}

// Uploads share one budget, downloads another: each direction is as slow
// as its own budget says, however many streams share it, and the other
// direction is not held up.
func TestRates(t *testing.T) {
	ctx := t.Context()
	data := bytes.Repeat([]byte("0123456789abcdef"), 512<<10/16)
	up, down := throttle.NewLimiter(rate), throttle.NewLimiter(rate)
	b := New(localtest.New(t), up, down)

	// Two uploads at once share the upload budget.
	start := time.Now()
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b"} {
		wg.Go(func() {
			if n, err := b.Put(ctx, name, bytes.NewReader(data)); err != nil || n != int64(len(data)) {
				t.Errorf("Put(%s) = %d, %v", name, n, err)
			}
		})
	}
	wg.Wait()
	if took, want := time.Since(start), atLeast(2*len(data)); took < want {
		t.Errorf("two uploads of %d bytes at %d B/s took %v, want at least %v", len(data), rate, took, want)
	}

	read := func(b storage.Backend, name string) time.Duration {
		t.Helper()
		start := time.Now()
		rc, err := b.Open(ctx, name, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		got, err := io.ReadAll(rc)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read back %d bytes, %v; want what was put", len(got), err)
		}
		return time.Since(start)
	}
	if took, want := read(b, "a"), atLeast(len(data)); took < want {
		t.Errorf("a download of %d bytes at %d B/s took %v, want at least %v", len(data), rate, took, want)
	}
	// The upload budget alone does not slow downloads (nor the other way).
	if took := read(New(b.Unwrap(), up, nil), "b"); took > atLeast(len(data))/2 {
		t.Errorf("a download with only uploads limited took %v", took)
	}
	start = time.Now()
	if _, err := New(b.Unwrap(), nil, down).Put(ctx, "c", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > atLeast(len(data))/2 {
		t.Errorf("an upload with only downloads limited took %v", took)
	}
}
