package logical

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/xbstream"
)

// Output takes the data files of a dump as its connections make them: a
// backup's streams (archiveOutput), or a load into another server as they
// come (Loading.LoadFrom). Its methods are called from every dump
// connection at once; the bytes of one data file come in order, from one.
type Output interface {
	// Keep is asked once for each table before any of its rows are read,
	// while they stand still (in the dump's snapshot, or for a
	// non-transactional table while writes to it are stopped): true says
	// the destination holds exactly these rows already, and the table is
	// not dumped. sum reads the table as the dump would write it and
	// returns its row count and row sum (see RowSum).
	Keep(ctx context.Context, db, table string, sum func(context.Context) (int64, RowSum, error)) (bool, error)
	// Create starts data file c (its ID and Path) of table db.table.
	Create(ctx context.Context, db, table string, c Chunk) (DataWriter, error)
	// TableDone says that every data file of a table is made: t lists
	// them, with their rows, bytes and row sums.
	TableDone(ctx context.Context, t TableData) error
}

// DataWriter takes the bytes of one data file, then its end.
type DataWriter interface {
	// Write takes the next bytes of the file; p is not kept.
	Write(ctx context.Context, p []byte) error
	// Close ends the file: c is its chunk, with its rows, bytes and row sum.
	Close(ctx context.Context, c Chunk) error
}

// archiveOutput writes a backup's data files into its streams, and
// counts rows and tables as they are written.
type archiveOutput struct {
	em *emitter
	tr *progress.Tracker // nil: no progress display
}

// Keep keeps nothing: a backup holds no table before it is dumped.
func (archiveOutput) Keep(context.Context, string, string, func(context.Context) (int64, RowSum, error)) (bool, error) {
	return false, nil
}

func (a archiveOutput) Create(_ context.Context, _, _ string, c Chunk) (DataWriter, error) {
	return archiveFile{a.em.create(c.Path), a.tr}, nil
}

func (a archiveOutput) TableDone(context.Context, TableData) error {
	if a.tr != nil {
		a.tr.TableDone()
	}
	return nil
}

// archiveFile is a data file written into the streams.
type archiveFile struct {
	f  *fileOut
	tr *progress.Tracker
}

func (a archiveFile) Write(ctx context.Context, p []byte) error { return a.f.write(ctx, p) }

func (a archiveFile) Close(ctx context.Context, c Chunk) error {
	if a.tr != nil {
		a.tr.AddRows(c.Rows)
	}
	return a.f.close(ctx)
}

// emitter funnels the files of all workers into the archive writer,
// which takes chunks from one goroutine. Each file's chunks stay in order;
// files of different workers interleave, each bound to its stream.
type emitter struct {
	w     *archive.Writer
	ch    chan emitted
	done  chan struct{}
	ended atomic.Bool
	err   error // why run stopped; set before done closes
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
	err := f.e.send(ctx, &xbstream.Chunk{Type: xbstream.TypePayload, Path: f.path, Offset: f.off, Payload: p})
	f.off += uint64(len(p))
	return err
}

func (f *fileOut) close(ctx context.Context) error {
	return f.e.send(ctx, &xbstream.Chunk{Type: xbstream.TypeEOF, Path: f.path})
}
