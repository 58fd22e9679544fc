package faulty

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/local/localtest"
	"github.com/backstream/backstream/internal/storage/storagetest"
)

func newFaulty(t *testing.T) *Backend {
	t.Helper()
	return New(localtest.New(t))
}

// Without faults the wrapper must be invisible.
func TestConformanceWithoutFaults(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Backend { return newFaulty(t) })
}

// A fault that can never be met must not disturb anything either.
func TestConformanceWithUnmetFaults(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Backend {
		b := newFaulty(t)
		for _, op := range []string{OpPut, OpOpen, OpRead, OpStat, OpList, OpDelete} {
			b.Add(Fault{Op: op, Name: "no object has this name"})
		}
		b.Add(Fault{Op: OpRead, After: 1 << 40, Corrupt: true})
		b.Add(Fault{Op: OpPut, After: 1 << 40})
		return b
	})
}

func data(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}

func mustPut(t *testing.T, b storage.Backend, name string, d []byte) {
	t.Helper()
	if _, err := b.Put(t.Context(), name, bytes.NewReader(d)); err != nil {
		t.Fatalf("Put(%q): %v", name, err)
	}
}

func readAll(b storage.Backend, ctx context.Context, name string) ([]byte, error) {
	rc, err := b.Open(ctx, name, 0, -1)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

var errBoom = errors.New("boom")

func TestCallFaults(t *testing.T) {
	tests := []struct {
		op   string
		call func(ctx context.Context, b storage.Backend, name string) error
	}{
		{OpOpen, func(ctx context.Context, b storage.Backend, name string) error {
			_, err := readAll(b, ctx, name)
			return err
		}},
		{OpStat, func(ctx context.Context, b storage.Backend, name string) error {
			_, err := b.Stat(ctx, name)
			return err
		}},
		{OpList, func(ctx context.Context, b storage.Backend, name string) error {
			_, err := b.List(ctx, name)
			return err
		}},
		{OpDelete, func(ctx context.Context, b storage.Backend, name string) error {
			return b.Delete(ctx, name)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.op, func(t *testing.T) {
			b := newFaulty(t)
			mustPut(t, b, "dir/target", []byte("t"))
			mustPut(t, b, "dir/other", []byte("o"))
			b.Add(Fault{Op: tc.op, Name: "target", Err: errBoom})
			if err := tc.call(t.Context(), b, "dir/target"); !errors.Is(err, errBoom) {
				t.Errorf("%s of the named object = %v, want the injected error", tc.op, err)
			}
			if err := tc.call(t.Context(), b, "dir/other"); err != nil {
				t.Errorf("%s of another object = %v, want no fault", tc.op, err)
			}
			if b.Fired() != 1 {
				t.Errorf("Fired() = %d, want 1", b.Fired())
			}
			// A failed delete deleted nothing.
			if got, err := readAll(b.inner, t.Context(), "dir/target"); tc.op == OpDelete && (err != nil || string(got) != "t") {
				t.Errorf("after a failed delete the object reads %q, %v", got, err)
			}
		})
	}
}

func TestDefaultError(t *testing.T) {
	b := newFaulty(t)
	mustPut(t, b, "x", []byte("x"))
	b.Add(Fault{Op: OpStat})
	if _, err := b.Stat(t.Context(), "x"); !errors.Is(err, ErrInjected) {
		t.Errorf("Stat = %v, want ErrInjected", err)
	}
}

func TestTimes(t *testing.T) {
	b := newFaulty(t)
	mustPut(t, b, "x", []byte("x"))
	b.Add(Fault{Op: OpStat, Err: errBoom, Times: 2})
	for i, wantFail := range []bool{true, true, false, false} {
		_, err := b.Stat(t.Context(), "x")
		if failed := errors.Is(err, errBoom); failed != wantFail {
			t.Errorf("Stat %d: %v, want failure %v", i, err, wantFail)
		}
	}
	if b.Fired() != 2 {
		t.Errorf("Fired() = %d, want 2", b.Fired())
	}

	// Times 0 fires every time.
	b.Add(Fault{Op: OpList, Err: errBoom})
	for i := range 5 {
		if _, err := b.List(t.Context(), ""); !errors.Is(err, errBoom) {
			t.Errorf("List %d: %v, want the injected error", i, err)
		}
	}

	// Faults fire in the order added; an exhausted one gives way to the next.
	b.Clear()
	errSecond := errors.New("second")
	b.Add(Fault{Op: OpStat, Err: errBoom, Times: 1})
	b.Add(Fault{Op: OpStat, Err: errSecond, Times: 1})
	for i, want := range []error{errBoom, errSecond, nil} {
		_, err := b.Stat(t.Context(), "x")
		if (want == nil && err != nil) || (want != nil && !errors.Is(err, want)) {
			t.Errorf("Stat %d: %v, want %v", i, err, want)
		}
	}
}

// Skip lets that many matching calls pass before the fault fires: the
// third Put of a kind fails, not the first.
func TestSkip(t *testing.T) {
	b := newFaulty(t)
	b.Add(Fault{Op: OpPut, Name: "pack", Err: errBoom, Times: 1, Skip: 2})
	for i, want := range []error{nil, nil, errBoom, nil} {
		_, err := b.Put(t.Context(), fmt.Sprintf("pack%d", i), bytes.NewReader([]byte("x")))
		if (want == nil && err != nil) || (want != nil && !errors.Is(err, want)) {
			t.Errorf("Put %d: %v, want %v", i, err, want)
		}
	}
	if b.Fired() != 1 {
		t.Errorf("Fired() = %d, want 1", b.Fired())
	}
}

func TestTimesConcurrent(t *testing.T) {
	b := newFaulty(t)
	mustPut(t, b, "x", data(10_000))
	b.Add(Fault{Op: OpStat, Err: errBoom, Times: 5})
	b.Add(Fault{Op: OpRead, After: 5000, Err: errBoom, Times: 3})
	var wg sync.WaitGroup
	var mu sync.Mutex
	statFailures, readFailures := 0, 0
	for range 20 {
		wg.Go(func() {
			_, serr := b.Stat(t.Context(), "x")
			_, rerr := readAll(b, t.Context(), "x")
			mu.Lock()
			defer mu.Unlock()
			if errors.Is(serr, errBoom) {
				statFailures++
			}
			if errors.Is(rerr, errBoom) {
				readFailures++
			}
		})
	}
	wg.Wait()
	if statFailures != 5 || readFailures != 3 {
		t.Errorf("%d Stat and %d read failures, want 5 and 3", statFailures, readFailures)
	}
}

func TestReadFaults(t *testing.T) {
	const size, after = 100_000, 40_000
	orig := data(size)
	tests := []struct {
		name    string
		fault   Fault
		want    []byte
		wantErr error
	}{
		{"error", Fault{Err: errBoom}, orig[:after], errBoom},
		{"truncate", Fault{Truncate: true}, orig[:after], nil},
		{"corrupt", Fault{Corrupt: true}, flip(orig, after), nil},
		{"delay only", Fault{Delay: 10 * time.Millisecond}, orig, nil},
		{"error at start", Fault{Err: errBoom, After: -1}, nil, errBoom},
		{"beyond the end", Fault{Err: errBoom, After: size + 1}, orig, nil},
		{"error at the end", Fault{Err: errBoom, After: size}, orig, errBoom},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newFaulty(t)
			mustPut(t, b, "obj", orig)
			f := tc.fault
			f.Op, f.Name = OpRead, "obj"
			if f.After == 0 {
				f.After = after
			}
			b.Add(f)
			rc, err := b.Open(t.Context(), "obj", 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			got, err := io.ReadAll(rc)
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("read error %v, want %v", err, tc.wantErr)
			}
			if !bytes.Equal(got, tc.want) {
				t.Errorf("read %d bytes (differing at %d), want %d", len(got), firstDiff(got, tc.want), len(tc.want))
			}
			if got, _ := readAll(b.inner, t.Context(), "obj"); !bytes.Equal(got, orig) {
				t.Error("a read fault changed the stored object")
			}
		})
	}
}

// A read fault counts from the start of the opened range.
func TestReadFaultInRange(t *testing.T) {
	b := newFaulty(t)
	orig := data(1000)
	mustPut(t, b, "obj", orig)
	b.Add(Fault{Op: OpRead, After: 10, Corrupt: true, Times: 1})
	rc, err := b.Open(t.Context(), "obj", 500, 100)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	if want := flip(orig[500:600], 10); !bytes.Equal(got, want) {
		t.Errorf("range reads differently at %d, want the byte at 10 of the range flipped", firstDiff(got, want))
	}
	// Times 1: the next reader is clean.
	if got, _ := readAll(b, t.Context(), "obj"); !bytes.Equal(got, orig) {
		t.Error("second read was corrupted too")
	}
}

func TestSeveralFaultsInOneStream(t *testing.T) {
	b := newFaulty(t)
	orig := data(10_000)
	mustPut(t, b, "obj", orig)
	b.Add(Fault{Op: OpRead, After: 7000, Err: errBoom})
	b.Add(Fault{Op: OpRead, After: 10, Corrupt: true})
	b.Add(Fault{Op: OpRead, After: 6999, Corrupt: true})
	got, err := readAll(b, t.Context(), "obj")
	if !errors.Is(err, errBoom) {
		t.Errorf("read error %v, want the injected one", err)
	}
	if want := flip(flip(orig[:7000], 10), 6999); !bytes.Equal(got, want) {
		t.Errorf("read %d bytes differing at %d, want 7000 with bytes 10 and 6999 flipped", len(got), firstDiff(got, want))
	}
	if b.Fired() != 3 {
		t.Errorf("Fired() = %d, want 3", b.Fired())
	}
}

func TestPutFaults(t *testing.T) {
	const size, after = 3 << 20, 1<<20 + 5
	orig := data(size)
	tests := []struct {
		name     string
		fault    Fault
		stored   []byte // nil: nothing stored
		wantErr  error
		wantSize int64
	}{
		{"error", Fault{Err: errBoom}, nil, errBoom, 0},
		{"error at start", Fault{Err: errBoom, After: -1}, nil, errBoom, 0},
		{"truncate", Fault{Truncate: true}, orig[:after], nil, after},
		{"corrupt", Fault{Corrupt: true}, flip(orig, after), nil, size},
		{"delay only", Fault{Delay: 10 * time.Millisecond}, orig, nil, size},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newFaulty(t)
			f := tc.fault
			f.Op, f.Name = OpPut, "obj"
			if f.After == 0 {
				f.After = after
			}
			b.Add(f)
			n, err := b.Put(t.Context(), "dir/obj", bytes.NewReader(orig))
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("Put error %v, want %v", err, tc.wantErr)
			}
			if n != tc.wantSize {
				t.Errorf("Put = %d bytes, want %d", n, tc.wantSize)
			}
			got, err := readAll(b.inner, t.Context(), "dir/obj")
			if tc.stored == nil {
				if !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("after a failed Put the object reads %d bytes, %v; want it missing", len(got), err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.stored) {
				t.Errorf("stored %d bytes differing at %d, want %d", len(got), firstDiff(got, tc.stored), len(tc.stored))
			}
		})
	}
}

func TestDelay(t *testing.T) {
	b := newFaulty(t)
	mustPut(t, b, "x", []byte("x"))
	const d = 50 * time.Millisecond
	b.Add(Fault{Op: OpStat, Delay: d, Times: 1})
	start := time.Now()
	if _, err := b.Stat(t.Context(), "x"); err != nil {
		t.Errorf("Stat with a delay-only fault: %v", err)
	}
	if took := time.Since(start); took < d {
		t.Errorf("Stat took %v, want at least %v", took, d)
	}

	// Delay then fail.
	b.Add(Fault{Op: OpDelete, Delay: d, Err: errBoom, Times: 1})
	start = time.Now()
	if err := b.Delete(t.Context(), "x"); !errors.Is(err, errBoom) || time.Since(start) < d {
		t.Errorf("Delete = %v after %v, want the injected error after %v", err, time.Since(start), d)
	}

	// A cancelled context cuts the delay short.
	b.Add(Fault{Op: OpList, Delay: time.Hour})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := b.List(ctx, ""); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("List during a long delay = %v, want the context's error", err)
	}
}

func flip(b []byte, at int) []byte {
	out := bytes.Clone(b)
	out[at] ^= 0xff
	return out
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) == len(b) {
		return -1
	}
	return min(len(a), len(b))
}

// The wrapper hides none of the optional interfaces of what it wraps: a
// faulty S3 backend must still let a prune abort multipart uploads.
func TestForwards(t *testing.T) {
	storagetest.Forwards(t, localtest.New(t), func(b storage.Backend) storage.Backend { return New(b) })
}

// A read fault marked transient leaves the stream usable, as the storage
// contract asks of transient errors: the next Read goes on where the
// fault struck.
func TestTransientReadFault(t *testing.T) {
	b := newFaulty(t)
	data := bytes.Repeat([]byte("x"), 10000)
	if _, err := b.Put(t.Context(), "obj", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	flaky := errors.New("flaky")
	b.Add(Fault{Op: OpRead, After: 4000, Err: storage.Transient(flaky)})
	rc, err := b.Open(t.Context(), "obj", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var got []byte
	buf := make([]byte, 3000)
	failures := 0
	for {
		n, err := rc.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			if !storage.IsTransient(err) || !errors.Is(err, flaky) || len(got) != 4000 {
				t.Fatalf("after %d bytes: %v, want the transient fault at 4000", len(got), err)
			}
			if failures++; failures > 1 {
				t.Fatal("the fault fired twice in one stream")
			}
		}
	}
	if failures != 1 || !bytes.Equal(got, data) {
		t.Errorf("read %d bytes with %d failures, want all %d across one", len(got), failures, len(data))
	}
}
