// Package faulty wraps a real storage.Backend and injects faults into it,
// so that tests can show what the code above storage does when a write
// breaks off, a read returns damaged or short data, or a call is slow.
//
// Faults are matched in the order they were added; for each call the first
// matching fault that has not used up its Times fires. A fault that only
// delays lets the call proceed afterwards. A fault whose Err is marked
// storage.Transient behaves as the storage contract asks of such errors:
// after a read fails with it, the stream stays usable and goes on where it
// stopped.
//
// It is a decorator like the others: it hides none of the optional
// interfaces of what it wraps (see storage.Lookup), and knows nothing of
// what the objects hold.
package faulty

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/backstream/backstream/internal/storage"
)

// Operations a Fault can name.
const (
	OpPut    = "put"    // the data read by Put: After, Err, Corrupt, Truncate, Delay
	OpOpen   = "open"   // the Open call itself
	OpRead   = "read"   // the data read from an opened object: After, Err, Corrupt, Truncate, Delay
	OpStat   = "stat"   // the Stat call
	OpList   = "list"   // the List call; Name is matched against the prefix
	OpDelete = "delete" // the Delete call, before anything is deleted
)

// ErrInjected is returned by a fault whose Err is nil and which neither
// corrupts, truncates nor only delays.
var ErrInjected = errors.New("injected fault")

// Fault describes one fault. What it does: for put and read, flip a byte if
// Corrupt, else end the stream if Truncate; otherwise, for every op, fail
// with Err (ErrInjected if nil), unless Delay is the only thing set, in
// which case it only delays. Corrupt and Truncate on other ops fail.
type Fault struct {
	Op   string // "put", "open", "read", "stat", "list", "delete"; any other never fires
	Name string // substring of the object name (of the prefix for list); "" matches any

	// After is, for put and read, the number of bytes the stream passes
	// through intact before the fault: an error or truncation comes after
	// exactly After bytes, a corruption flips the byte at offset After of
	// the stream. Read streams count from the start of the opened range,
	// not of the object. A stream shorter than After never meets the fault.
	After int64

	Err      error         // error to return
	Corrupt  bool          // flip one byte instead of failing (put, read)
	Truncate bool          // end the stream early without error (put, read)
	Delay    time.Duration // wait before acting; a cancelled context cuts it short
	Times    int           // how many times it fires; 0 = always
	Skip     int           // how many matching calls it lets pass first
}

type fault struct {
	Fault
	fired   int
	skipped int
}

// Backend injects faults into an inner backend. It is safe for concurrent
// use, and faults may be added while it is in use.
type Backend struct {
	inner storage.Backend

	mu     sync.Mutex
	faults []*fault
	fired  int
}

var (
	_ storage.Backend = (*Backend)(nil)
	_ storage.Wrapper = (*Backend)(nil)
)

// New wraps inner with no faults; add them with Add.
func New(inner storage.Backend) *Backend {
	return &Backend{inner: inner}
}

// Add appends a fault, behind every fault added before it.
func (b *Backend) Add(f Fault) {
	f.After = max(f.After, 0)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.faults = append(b.faults, &fault{Fault: f})
}

// Clear removes every fault, so that a test can let the backend recover.
func (b *Backend) Clear() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.faults = nil
}

// Fired returns how many times faults have fired in total, so that a test
// can make sure the fault it meant to test was met at all.
func (b *Backend) Fired() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fired
}

// candidates returns the faults that could fire for op on name, in order;
// a fault still skipping counts this call as one it let pass.
func (b *Backend) candidates(op, name string) []*fault {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*fault
	for _, f := range b.faults {
		if f.Op != op || !strings.Contains(name, f.Name) || f.Times != 0 && f.fired >= f.Times {
			continue
		}
		if f.skipped < f.Skip {
			f.skipped++
			continue
		}
		out = append(out, f)
	}
	return out
}

// claim fires f if it has not used up its Times; concurrent streams may
// race for the last firing, and exactly one wins.
func (b *Backend) claim(f *fault) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if f.Times != 0 && f.fired >= f.Times {
		return false
	}
	f.fired++
	b.fired++
	return true
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fault) delayOnly() bool {
	return f.Delay > 0 && f.Err == nil && !f.Corrupt && !f.Truncate
}

func (f *fault) err() error {
	if f.Err != nil {
		return f.Err
	}
	return ErrInjected
}

// call fires the first matching fault of a call-level op; nil means the
// call goes on to the inner backend.
func (b *Backend) call(ctx context.Context, op, name string) error {
	for _, f := range b.candidates(op, name) {
		if !b.claim(f) {
			continue
		}
		if err := sleep(ctx, f.Delay); err != nil {
			return fmt.Errorf("faulty: %s %s: delay: %w", op, name, err)
		}
		if f.delayOnly() {
			return nil
		}
		return fmt.Errorf("faulty: %s %s: %w", op, name, f.err())
	}
	return nil
}

// Put passes a stream with the matching put faults to the inner Put.
func (b *Backend) Put(ctx context.Context, name string, r io.Reader) (int64, error) {
	if fs := b.candidates(OpPut, name); len(fs) > 0 {
		r = newStream(ctx, b, OpPut+" "+name, r, fs)
	}
	return b.inner.Put(ctx, name, r)
}

// Open fires open faults, then wraps the reader with the matching read faults.
func (b *Backend) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	if err := b.call(ctx, OpOpen, name); err != nil {
		return nil, err
	}
	rc, err := b.inner.Open(ctx, name, off, length)
	if err != nil {
		return nil, err
	}
	fs := b.candidates(OpRead, name)
	if len(fs) == 0 {
		return rc, nil
	}
	return struct {
		io.Reader
		io.Closer
	}{newStream(ctx, b, fmt.Sprintf("%s %s at %d", OpRead, name, off), rc, fs), rc}, nil
}

// Stat fires stat faults before asking the inner backend.
func (b *Backend) Stat(ctx context.Context, name string) (storage.Info, error) {
	if err := b.call(ctx, OpStat, name); err != nil {
		return storage.Info{}, err
	}
	return b.inner.Stat(ctx, name)
}

// List fires list faults, matched against prefix, before asking the inner backend.
func (b *Backend) List(ctx context.Context, prefix string) ([]storage.Info, error) {
	if err := b.call(ctx, OpList, prefix); err != nil {
		return nil, err
	}
	return b.inner.List(ctx, prefix)
}

// Delete fires delete faults; a failing one deletes nothing.
func (b *Backend) Delete(ctx context.Context, name string) error {
	if err := b.call(ctx, OpDelete, name); err != nil {
		return err
	}
	return b.inner.Delete(ctx, name)
}

// Location names the inner backend: faults do not move the data.
func (b *Backend) Location() string { return b.inner.Location() }

// Unwrap returns the inner backend.
func (b *Backend) Unwrap() storage.Backend { return b.inner }

// stream applies put or read faults to the bytes flowing through it.
type stream struct {
	ctx     context.Context
	b       *Backend
	what    string
	r       io.Reader
	pos     int64
	pending []*fault // sorted by After; each met at most once per stream
	err     error    // once set, every Read returns it; a transient fault's is not kept
}

func newStream(ctx context.Context, b *Backend, what string, r io.Reader, fs []*fault) *stream {
	slices.SortStableFunc(fs, func(x, y *fault) int { return cmp.Compare(x.After, y.After) })
	return &stream{ctx: ctx, b: b, what: what, r: r, pending: fs}
}

func (s *stream) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	// Faults that end the stream fire at their offset before any byte
	// past it is read; corruptions wait for the read that brings their byte.
	for i := 0; i < len(s.pending) && s.pending[i].After <= s.pos; {
		f := s.pending[i]
		if f.Corrupt {
			i++
			continue
		}
		s.pending = slices.Delete(s.pending, i, i+1)
		if !s.b.claim(f) {
			continue
		}
		if err := sleep(s.ctx, f.Delay); err != nil {
			s.err = fmt.Errorf("faulty: %s: delay at offset %d: %w", s.what, s.pos, err)
			return 0, s.err
		}
		switch {
		case f.Truncate:
			s.err = io.EOF
			return 0, s.err
		case f.delayOnly():
		default:
			err := fmt.Errorf("faulty: %s: at offset %d: %w", s.what, s.pos, f.err())
			if !storage.IsTransient(err) {
				s.err = err
			}
			return 0, err
		}
	}
	// Stop the read at the next ending fault, so that it fires after
	// exactly After bytes and the inner reader is not drained beyond it.
	for _, f := range s.pending {
		if !f.Corrupt && f.After > s.pos {
			p = p[:min(int64(len(p)), f.After-s.pos)]
			break
		}
	}
	n, err := s.r.Read(p)
	if n > 0 {
		end := s.pos + int64(n)
		flipped := int64(-1) // a second flip of one byte would undo the first
		for i := 0; i < len(s.pending) && s.pending[i].After < end; {
			f := s.pending[i]
			if !f.Corrupt {
				i++
				continue
			}
			s.pending = slices.Delete(s.pending, i, i+1)
			if f.After == flipped || !s.b.claim(f) {
				continue
			}
			flipped = f.After
			if derr := sleep(s.ctx, f.Delay); derr != nil {
				s.err = fmt.Errorf("faulty: %s: delay at offset %d: %w", s.what, f.After, derr)
				return 0, s.err
			}
			p[f.After-s.pos] ^= 0xff
		}
		s.pos = end
	}
	return n, err
}
