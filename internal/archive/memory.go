package archive

import (
	"context"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sync/semaphore"

	"github.com/backstream/backstream/internal/xbstream"
)

// DefaultMemory is the budget of a Read given none.
const DefaultMemory = 512 << 20

// MinMemory is the smallest budget taken: below it every frame of a
// backup would be read alone.
const MinMemory = 16 << 20

// Memory is a budget of bytes for the frames a Read holds at once: stored
// frames read but not yet decoded, decoded frames being checked, hashed or
// written, and the chunk records of each. Every stream and worker of every
// Read sharing it draws on it, so what a command holds is bounded by the
// budget, not by streams x queue depth x the largest frame the format
// allows. A command makes one and passes it to every Read it starts, in
// whichever package. A frame's bytes are taken before its buffers are
// allocated and given back as they are recycled. A frame larger than the
// whole budget takes all of it and is read alone.
type Memory struct {
	size int64
	sem  *semaphore.Weighted

	held atomic.Int64 // bytes taken now
	peak atomic.Int64 // the most ever taken at once
}

// NewMemory returns a budget of size bytes (at least MinMemory).
func NewMemory(size int64) *Memory {
	size = max(size, MinMemory)
	return &Memory{size: size, sem: semaphore.NewWeighted(size)}
}

// Size is the budget in bytes.
func (m *Memory) Size() int64 { return m.size }

// Peak is the most the budget ever had out at once.
func (m *Memory) Peak() int64 { return m.peak.Load() }

// acquire takes n bytes (n <= Size), waiting for them.
func (m *Memory) acquire(ctx context.Context, n int64) error {
	if err := m.sem.Acquire(ctx, n); err != nil {
		return context.Cause(ctx)
	}
	m.took(n)
	return nil
}

// tryAcquire takes n bytes if they are free now, without waiting.
func (m *Memory) tryAcquire(n int64) bool {
	if !m.sem.TryAcquire(n) {
		return false
	}
	m.took(n)
	return true
}

// took counts n bytes taken, and the peak.
func (m *Memory) took(n int64) {
	held := m.held.Add(n)
	for p := m.peak.Load(); held > p && !m.peak.CompareAndSwap(p, held); p = m.peak.Load() {
	}
}

// release gives n bytes back (none to a nil budget).
func (m *Memory) release(n int64) {
	if m != nil && n > 0 {
		m.held.Add(-n)
		m.sem.Release(n)
	}
}

// chunkRecordSize is what check keeps per chunk of a decoded frame.
const chunkRecordSize = int64(unsafe.Sizeof(xbstream.Chunk{}))

// chunkRecordShare is the part of a frame's raw size allowed for its chunk
// records: a frame with more chunks than fit (thousands of tiny ones) is
// not kept as records but decoded again as it is delivered.
const chunkRecordShare = 16

// frameCharge is what one frame takes from a budget: its stored buffer,
// and its decoded buffer with its chunk records. Both the frame's source
// (FrameBuffer) and the reader compute it from the frame's record alone.
type frameCharge struct {
	stored, raw int64
}

func chargeOf(f Frame, budget int64) frameCharge {
	c := frameCharge{stored: bufCharge(int(f.Stored)), raw: bufCharge(int(f.Raw)) + 3*int64(f.Raw)/chunkRecordShare}
	if c.stored+c.raw > budget {
		// Alone: the stored part first, as it is given back first.
		c.stored = min(c.stored, budget)
		c.raw = budget - c.stored
	}
	return c
}

func (c frameCharge) total() int64 { return c.stored + c.raw }

// chargeKey carries a stream's *streamCharge in the context given to
// Input.OpenStream.
type chargeKey struct{}

// streamCharge is the budget of one stream being read, whether its
// source took the charge of the frame it returns last, and what the Read
// set aside for the source itself (see SourceMemory).
type streamCharge struct {
	budget  *readBudget
	charged bool
	source  int64
}

// MemoryUser is an Input whose sources hold memory of their own beside
// the frames they return (the block store's: the pack frames a stream's
// reassembly keeps and reads ahead), up to SourceWants bytes a stream.
// Read sets that aside from its budget for each stream's source before
// any stream reads, as much as is free then and at most a quarter of the
// budget over all its streams (never waiting: a source holds its share
// for the whole stream, and a wait for it could wait on frames that only
// another Read's progress gives back), and gives it back once the
// source is closed; the source keeps within what SourceMemory says it
// was given.
type MemoryUser interface {
	SourceWants() int64
}

// SourceMemory is what the Read that opened the source with ctx set
// aside for it (see MemoryUser), and whether a Read did: outside a Read
// (a sender forwarding stored frames) nothing bounds the source.
func SourceMemory(ctx context.Context) (int64, bool) {
	if ctx == nil {
		return 0, false
	}
	sc, ok := ctx.Value(chargeKey{}).(*streamCharge)
	if !ok {
		return 0, false
	}
	return sc.source, true
}

// sourceShare is the part of a Read's budget its sources may hold over
// all its streams (see MemoryUser).
const sourceShare = 4

// minSourceMemory is the least set aside for a source when less than it
// wants is free: below it, the source runs on nothing set aside.
const minSourceMemory = 1 << 20

// setAside takes for a stream's source what it wants, at most each (its
// part of the Read's sourceShare), or what is free of it at once, down to
// minSourceMemory; it returns what it took.
func (b *readBudget) setAside(wants, each int64) int64 {
	for n := min(wants, each); n >= minSourceMemory; n /= 2 {
		if b.mem.tryAcquire(n) {
			b.held.Add(n)
			return n
		}
	}
	return 0
}

// ReleaseFrameBuffer gives back a buffer FrameBuffer returned to a source
// used outside a Read (a sender forwarding stored frames), for reuse.
func ReleaseFrameBuffer(b []byte) { putBuf(b) }

// FrameBuffer returns a buffer with room for the stored bytes of frame f,
// for a FrameSource opened with ctx: it checks f's sizes against the
// format's limits and waits until the budget of the Read that opened the
// source has room for the frame (stored and decoded) before allocating.
// The Read gives the budget back as it recycles the frame.
func FrameBuffer(ctx context.Context, f Frame) ([]byte, error) {
	if err := checkFrameSizes(f); err != nil {
		return nil, Corruptf("%v", err)
	}
	if ctx == nil {
		ctx = context.Background() // a source used outside a Read
	}
	if sc, ok := ctx.Value(chargeKey{}).(*streamCharge); ok && !sc.charged {
		if err := sc.budget.acquire(ctx, chargeOf(f, sc.budget.mem.size).total()); err != nil {
			return nil, err
		}
		sc.charged = true
	}
	return getBuf(int(f.Stored)), nil
}
