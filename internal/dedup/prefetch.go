package dedup

import (
	"context"
	"fmt"
	"sync"
)

// prefetchDepth is how many pack frames a stream's reassembly reads ahead,
// all at once: ranged reads of an object store take a round trip each.
const prefetchDepth = 4

// prefetch reads the pack frames a stream's reassembly loads, in the
// order it loads them (see loads), ahead of it and several at once, each
// checked and decoded (Store.readFrame). It holds at most
// prefetchDepth+2 frames.
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

func startPrefetch(ctx context.Context, s *Store, loads []frameRef) *prefetch {
	ctx, cancel := context.WithCancel(ctx)
	p := &prefetch{cancel: cancel, order: make(chan *fetch, prefetchDepth), fed: make(chan struct{})}
	go func() {
		defer close(p.fed)
		defer close(p.order)
		for _, fr := range loads {
			f := &fetch{fr: fr, ready: make(chan struct{})}
			select {
			case p.order <- f:
			case <-ctx.Done():
				return
			}
			p.readers.Add(1)
			go func() {
				defer p.readers.Done()
				f.raw, f.err = s.readFrame(ctx, f.fr, getFrameBuf())
				close(f.ready)
			}()
		}
	}()
	return p
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
