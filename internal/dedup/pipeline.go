package dedup

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// pipeline names a stream's blocks and stores the new ones off the
// stream's goroutine, which only cuts frames into blocks: workers name
// each batch's blocks, claim the new ones and compress them into zstd
// frames of about frameTarget bytes; a collector takes the batches in the
// order they were cut, writes their frames on into packs as they come
// (see packer). What it holds is bounded by its queues: about (workers+2)
// batches of batchTarget bytes (no pack is held whole).
type pipeline struct {
	store *Store
	known *known
	jobs  chan *batch // to the workers
	order chan *batch // to the collector, in the order cut
	free  chan *batch // batches the collector is done with
	stop  sync.Once
	done  chan struct{} // the collector has finished
	// failed is the collector's first error, for the stream's goroutine
	// to stop early; after done, err says the same.
	failed atomic.Pointer[error]

	// storePart names the blocks of a part of the recipe (resolve) and
	// stores it; the collector calls it
	storePart func([]recipeFrame) error

	// the collector's, read by others after done
	err    error
	names  []Name // by handle, from base: those of the recipe's part being written
	base   int
	packer *packer
}

// batch is consecutive whole blocks of a stream, about batchTarget
// bytes.
type batch struct {
	raw     []byte
	handles []int
	sizes   []int
	// set by the worker
	names  []Name
	fresh  []blockRef   // the new blocks, offsets in their frame
	frames []freshFrame // the new blocks, compressed
	zbufs  [][]byte     // the frames' buffers, kept for the batch's reuse
	fresh0 int          // raw bytes of the new blocks
	err    error
	ready  chan struct{}
	// a marker (no blocks): the frames of a part of the recipe, whose
	// blocks are all in the batches before it, begun before handle
	// handles0
	part     []recipeFrame
	handles0 int
}

func newPipeline(ctx context.Context, s *Store, k *known, started func(name string, size int64), storePart func([]recipeFrame) error, storeIndex func(*index) error) *pipeline {
	workers := runtime.GOMAXPROCS(0)
	p := &pipeline{
		store: s, known: k, storePart: storePart,
		// A batch in order is in jobs or with a worker, so jobs never
		// holds more than order, plus the one the collector waits for.
		order: make(chan *batch, workers+2),
		jobs:  make(chan *batch, workers+3),
		free:  make(chan *batch, workers+3),
		done:  make(chan struct{}),
	}
	p.packer = newPacker(ctx, s.Backend, started, storeIndex)
	for range workers {
		go p.work()
	}
	go p.collect()
	return p
}

// batch returns an empty batch to fill.
func (p *pipeline) batch() *batch {
	select {
	case b := <-p.free:
		b.raw, b.handles, b.sizes, b.names, b.fresh, b.frames, b.fresh0, b.err = b.raw[:0], b.handles[:0], b.sizes[:0], b.names[:0], b.fresh[:0], b.frames[:0], 0, nil
		b.part, b.handles0 = nil, 0
		b.ready = make(chan struct{})
		return b
	default:
		return &batch{raw: make([]byte, 0, batchTarget+BlockSize), ready: make(chan struct{})}
	}
}

// submit hands a filled batch on; it waits while the queues are full.
func (p *pipeline) submit(ctx context.Context, b *batch) error {
	if err := p.failed.Load(); err != nil {
		return *err
	}
	select {
	case p.order <- b:
		p.jobs <- b // never waits: see newPipeline
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// finish stops the pipeline once what was submitted is stored and
// returns its first error. It may be called more than once.
func (p *pipeline) finish() error {
	p.stop.Do(func() {
		close(p.order)
		close(p.jobs)
	})
	<-p.done
	return p.err
}

func (p *pipeline) work() {
	for b := range p.jobs {
		b.work(p.store, p.known)
		close(b.ready)
	}
}

// freshFrame is a frame of a batch's new blocks: its bytes, its raw
// size, and the blocks it holds (fresh[from:to]).
type freshFrame struct {
	stored   []byte
	raw      int
	from, to int
}

// work names the batch's blocks, moves the new ones to the front of raw
// and compresses them.
func (b *batch) work(s *Store, k *known) {
	off := 0
	for _, size := range b.sizes {
		blk := b.raw[off : off+size]
		n := s.name(blk)
		b.names = append(b.names, n)
		if k.claim(n) {
			b.fresh = append(b.fresh, blockRef{Name: n, Offset: uint32(b.fresh0), Len: uint32(size)})
			if b.fresh0 != off { // (a batch of new blocks alone moves nothing)
				copy(b.raw[b.fresh0:], blk)
			}
			b.fresh0 += size
		}
		off += size
	}
	b.compress()
}

// compress compresses the new blocks into frames of about frameTarget
// raw bytes (a batch holds several: fewer hand-offs between goroutines,
// frames of the size zstd compresses fastest), their blocks' offsets
// made the frame's.
func (b *batch) compress() {
	for from := 0; from < len(b.fresh) && b.err == nil; {
		start, to := int(b.fresh[from].Offset), from
		raw := 0
		for to < len(b.fresh) && raw < frameTarget {
			b.fresh[to].Offset -= uint32(start)
			raw += int(b.fresh[to].Len)
			to++
		}
		k := len(b.frames)
		if k == len(b.zbufs) {
			b.zbufs = append(b.zbufs, nil)
		}
		b.zbufs[k], b.err = frameCodec.Compress(b.zbufs[k][:0], b.raw[start:start+raw])
		b.frames = append(b.frames, freshFrame{stored: b.zbufs[k], raw: raw, from: from, to: to})
		from = to
	}
}

func (p *pipeline) collect() {
	defer close(p.done)
	for b := range p.order {
		<-b.ready
		if p.err == nil {
			if p.err = p.take(b); p.err != nil {
				p.failed.Store(&p.err)
			}
		}
		select {
		case p.free <- b:
		default:
		}
	}
	if p.err == nil {
		p.err = p.packer.store()
	} else {
		p.packer.abort(p.err)
	}
}

// take records the names of a batch's blocks and puts its frame in the
// pack being filled.
func (p *pipeline) take(b *batch) error {
	if b.err != nil {
		return fmt.Errorf("dedup: compress new blocks: %w", b.err)
	}
	if b.part != nil {
		if err := p.storePart(b.part); err != nil {
			return err
		}
		// No block begun before handles0 is met again.
		p.names, p.base = p.names[:0], b.handles0
		return nil
	}
	for i, h := range b.handles {
		for len(p.names) <= h-p.base {
			p.names = append(p.names, Name{})
		}
		p.names[h-p.base] = b.names[i]
	}
	for _, f := range b.frames {
		if err := p.packer.frame(f.stored, f.raw, b.fresh[f.from:f.to]); err != nil {
			return err
		}
	}
	return nil
}

// resolve names the blocks of frames' items, from their handles: by the
// collector, or once it is done.
func (p *pipeline) resolve(frames []recipeFrame) error {
	for i := range frames {
		for j := range frames[i].Items {
			if it := &frames[i].Items[j]; !it.isLit {
				k := it.handle - p.base
				if k < 0 || k >= len(p.names) {
					return fmt.Errorf("block %d of its recipe was never named", it.handle)
				}
				it.Block = p.names[k]
			}
		}
	}
	return nil
}
