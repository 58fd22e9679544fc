package logical

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/throttle"
	"github.com/backstream/backstream/internal/xbstream"
)

// emitter funnels the data files of all workers into the archive writer,
// which takes chunks from one goroutine. Each file's chunks stay in order;
// files of different workers interleave, each bound to its stream.
type emitter struct {
	w     *archive.Writer
	ch    chan emitted
	done  chan struct{}
	ids   atomic.Int64
	ended atomic.Bool
	err   error // why run stopped; set before done closes
	// limit, shared by every worker, bounds the bytes of data files made
	// per second (--max-rate); nil is no bound.
	limit *throttle.Limiter
}

type emitted struct {
	c   xbstream.Chunk
	raw []byte
}

func newEmitter(w *archive.Writer) *emitter {
	return &emitter{w: w, ch: make(chan emitted, 64), done: make(chan struct{})}
}

// run feeds the writer until finish is called, or fails with the writer.
func (e *emitter) run(ctx context.Context) error {
	e.err = e.feed(ctx)
	close(e.done)
	return e.err
}

func (e *emitter) feed(ctx context.Context) error {
	for {
		select {
		case it, ok := <-e.ch:
			if !ok {
				return nil
			}
			if err := e.w.Add(&it.c, it.raw); err != nil {
				return err
			}
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// finish says no more files come; run returns once it has added them all.
func (e *emitter) finish() {
	if !e.ended.Swap(true) {
		close(e.ch)
	}
}

// nextID numbers data files across the backup.
func (e *emitter) nextID() int { return int(e.ids.Add(1)) }

var errWriterStopped = errors.New("the stream writer stopped")

func (e *emitter) send(ctx context.Context, c *xbstream.Chunk) error {
	dc, raw, err := e.w.Encode(c)
	if err != nil {
		return err
	}
	select {
	case e.ch <- emitted{c: dc, raw: raw}:
		return nil
	case <-e.done:
		if e.err != nil {
			return e.err
		}
		return errWriterStopped
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// fileOut writes one file into the streams.
type fileOut struct {
	e    *emitter
	path string
	off  uint64
}

func (e *emitter) create(path string) *fileOut { return &fileOut{e: e, path: path} }

func (f *fileOut) write(ctx context.Context, p []byte) error {
	// Waiting here holds the worker, and so its query, back: the server
	// reads no faster than the budget allows.
	if err := f.e.limit.Wait(ctx, len(p)); err != nil {
		return err
	}
	err := f.e.send(ctx, &xbstream.Chunk{Type: xbstream.TypePayload, Path: f.path, Offset: f.off, Payload: p})
	f.off += uint64(len(p))
	return err
}

func (f *fileOut) close(ctx context.Context) error {
	return f.e.send(ctx, &xbstream.Chunk{Type: xbstream.TypeEOF, Path: f.path})
}
