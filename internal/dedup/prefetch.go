package dedup

import (
	"context"
	"fmt"
	"sync"
)

// prefetchDepth is the most pack frames a stream's reassembly reads ahead
// (a run's and the queue's; see spend for what memory allows), and
// runBytes the most a ranged read reads: ranged reads of an object store
// take a round trip each.
const (
	prefetchDepth = 16
	runBytes      = 2 << 20
)

// prefetch reads the pack frames a stream's reassembly loads, in the
// order it loads them (see loads), ahead of it, each checked and decoded
// (Store.nextFrame). Frames that follow each other in a pack are read in
// one ranged read (a run, at most runBytes stored and depth frames); two
// runs are read at once. It holds about 2*depth+1 decoded frames and two
// stored ones (see spend).
type prefetch struct {
	cancel  context.CancelFunc
	order   chan *fetch
	readers sync.WaitGroup
	fed     chan struct{} // the feeder has stopped
}

type fetch struct {
	fr    frameRef
	raw   []byte
	err   error
	ready chan struct{}
}

// startPrefetch reads ahead the frames feed yields, batch after batch
// (a stream's recipe part after part), in that order; feed stops when
// yield returns false or its ctx ends.
func startPrefetch(ctx context.Context, s *Store, depth int, feed func(ctx context.Context, yield func(loads []frameRef) bool)) *prefetch {
	ctx, cancel := context.WithCancel(ctx)
	p := &prefetch{cancel: cancel, order: make(chan *fetch, depth), fed: make(chan struct{})}
	go func() {
		defer close(p.fed)
		defer close(p.order)
		feed(ctx, func(loads []frameRef) bool { return p.enqueue(ctx, s, loads, depth) })
	}()
	return p
}

// enqueue reads loads in runs, in order; false once ctx ended.
func (p *prefetch) enqueue(ctx context.Context, s *Store, loads []frameRef, depth int) bool {
	for _, run := range runs(loads, depth) {
		fetches := make([]*fetch, len(run))
		for i, fr := range run {
			fetches[i] = &fetch{fr: fr, ready: make(chan struct{})}
		}
		p.readers.Add(1)
		go func() {
			defer p.readers.Done()
			s.readRun(ctx, fetches)
		}()
		for _, f := range fetches {
			select {
			case p.order <- f:
			case <-ctx.Done():
				return false
			}
		}
	}
	return true
}

// runs groups loads, in order, into runs of frames that follow each other
// in one pack, each at most depth frames and runBytes stored (a frame
// alone may be more).
func runs(loads []frameRef, depth int) [][]frameRef {
	var out [][]frameRef
	var stored int64
	for i, fr := range loads {
		if n := len(out); i > 0 && len(out[n-1]) < depth && stored+int64(fr.Stored) <= runBytes &&
			fr.Pack == loads[i-1].Pack && fr.Offset == loads[i-1].Offset+int64(loads[i-1].Stored) {
			out[n-1] = append(out[n-1], fr)
			stored += int64(fr.Stored)
			continue
		}
		out = append(out, []frameRef{fr})
		stored = int64(fr.Stored)
	}
	return out
}

// readRun reads the frames of a run in one ranged read, and makes each
// ready in turn; a failure is every frame's from there on.
func (s *Store) readRun(ctx context.Context, run []*fetch) {
	first, last := run[0].fr, run[len(run)-1].fr
	rc, err := s.openRange(ctx, first.Pack, first.Offset, last.Offset+int64(last.Stored)-first.Offset)
	if err == nil {
		defer rc.Close()
	}
	for _, f := range run {
		if err == nil {
			f.raw, err = s.nextFrame(rc, f.fr, getFrameBuf())
		}
		f.err = err
		close(f.ready)
	}
}

// next returns the next frame read, which must be want.
func (p *prefetch) next(ctx context.Context, want frameRef) ([]byte, error) {
	var f *fetch
	select {
	case f = <-p.order:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	if f == nil {
		return nil, fmt.Errorf("dedup: the frames read ahead ended before frame %d of pack %s", want.Offset, want.Pack)
	}
	select {
	case <-f.ready:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	if f.fr != want {
		return nil, fmt.Errorf("dedup: frame %d of pack %s was read ahead where frame %d of pack %s is needed", f.fr.Offset, f.fr.Pack, want.Offset, want.Pack)
	}
	return f.raw, f.err
}

// stop stops reading ahead and waits for the reads under way.
func (p *prefetch) stop() {
	p.cancel()
	for range p.order {
	}
	<-p.fed
	p.readers.Wait()
}
