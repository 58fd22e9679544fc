package logical

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/backstream/backstream/internal/logical/schema"
)

// LoadFrom loads the data files dump makes into the tables Prepare made,
// through Parallel connections, while dump runs: dump gets the Output to
// make them into (a DumpSession's Run). The files wait in a queue of
// 2 x Parallel; a full queue holds the dump back, so that memory stays
// within about (2 x Parallel + the dump's connections) x the chunk size.
// Every table must be dumped whole (Output.TableDone) or kept
// (Output.Keep).
func (ld *Loading) LoadFrom(ctx context.Context, dump func(context.Context, Output) error) error {
	l := ld.l
	if l.fromBackup() {
		return errors.New("a load of a backup reads its streams")
	}
	if tr := l.job.Progress; tr != nil {
		tr.Stage("loading")
		tr.SetTables(int64(len(l.tables)))
	}
	for _, t := range l.tables {
		t.all = t.data == nil // no rows to wait for: a sequence, or rows elsewhere
		if t.settle() {
			if err := l.tableLoaded(ctx, l.ddl, t); err != nil {
				return err
			}
		}
	}
	err := l.loadData(ctx, 2*l.job.Parallel, func(ctx context.Context, files *fileQueue) error {
		return dump(ctx, &loadOutput{l: l, files: files})
	})
	if err != nil {
		return err
	}
	for _, t := range l.tables {
		if !t.done {
			return fmt.Errorf("table %s: the dump ended without all of its rows", t)
		}
	}
	return nil
}

// loadOutput is the Output of a dump loaded as it is made.
type loadOutput struct {
	l     *loader
	files *fileQueue
}

// target finds the table a dump's data file belongs to.
func (o *loadOutput) target(db, table string) (*target, error) {
	t := o.l.bySource[db+"\x00"+table]
	if t == nil || t.data == nil {
		return nil, fmt.Errorf("the dump made data of %s.%s, which the load does not take", db, table)
	}
	return t, nil
}

func (o *loadOutput) Keep(ctx context.Context, db, table string, sum func(context.Context) (int64, RowSum, error)) (bool, error) {
	t, err := o.target(db, table)
	if err != nil {
		return false, err
	}
	return o.l.keep(ctx, t, sum)
}

func (o *loadOutput) Create(_ context.Context, db, table string, c Chunk) (DataWriter, error) {
	t, err := o.target(db, table)
	if err != nil {
		return nil, err
	}
	return &streamFile{files: o.files, t: t}, nil
}

func (o *loadOutput) TableDone(ctx context.Context, td TableData) error {
	t, err := o.target(td.Database, td.Table)
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.all = true
	for _, c := range td.Chunks {
		t.rows += c.Rows
		t.sum += c.Sum
	}
	loaded := t.settle()
	t.mu.Unlock()
	if loaded {
		return o.l.tableLoaded(ctx, o.l.db, t)
	}
	return nil
}

// streamFile gathers one data file of a dump, then queues it whole for
// the loaders.
type streamFile struct {
	files *fileQueue
	t     *target
	buf   []byte
}

func (f *streamFile) Write(_ context.Context, p []byte) error {
	f.buf = append(f.buf, p...)
	return nil
}

func (f *streamFile) Close(_ context.Context, c Chunk) error {
	f.t.mu.Lock()
	f.t.left++
	f.t.mu.Unlock()
	return f.files.put(&loadFile{t: f.t, chunk: c, buf: f.buf})
}

// keep decides, resuming a load from a dump, whether table t, complete
// after an earlier run, stays as it is: only if the dump's snapshot holds
// the rows the earlier run loaded (count and row sum, sum reads them) and
// the target holds them still (read back the same way). Otherwise the
// table is made again, empty, for the dump to fill. A table that is not
// such a candidate is dumped.
func (l *loader) keep(ctx context.Context, t *target, sum func(context.Context) (int64, RowSum, error)) (bool, error) {
	if !t.candidate {
		return false, nil
	}
	rows, s, err := sum(ctx)
	if err != nil {
		return false, err
	}
	c, err := l.conn(ctx)
	if err != nil {
		return false, err
	}
	defer c.Close()
	why := ""
	if rows != t.earlier.rows || s != t.earlier.sum {
		why = "its rows on the source changed since an earlier run loaded it"
	} else {
		got, gotSum, err := SumTable(ctx, c, t.db, t.src, l.job.Catalog.DataFormat)
		if err != nil {
			return false, fmt.Errorf("read it back on the target: %w", err)
		}
		if got != rows || gotSum != s {
			why = "its rows on the target differ from the source's"
		}
	}
	if why != "" {
		return false, l.remake(ctx, c, t, why)
	}
	// The counter moves with inserts that left no row: the source's, as
	// the catalog has it, which never moves a counter back.
	if n := autoIncrement.FindString(t.src.Create); n != "" {
		if _, err := c.ExecContext(ctx, "ALTER TABLE "+t.qname()+n); err != nil {
			return false, fmt.Errorf("set the AUTO_INCREMENT counter: %w", err)
		}
	}
	t.mu.Lock()
	t.all, t.rows, t.sum = true, rows, s
	loaded := t.settle()
	t.mu.Unlock()
	l.resMu.Lock()
	l.res.Kept = append(l.res.Kept, fmt.Sprintf("table %s kept: an earlier run loaded it, and its %d rows are the source's", t, rows))
	l.resMu.Unlock()
	if loaded {
		return true, l.tableLoaded(ctx, c, t)
	}
	return true, nil
}

// remake drops table t and creates it again, empty and without its
// secondary keys, for the dump to fill; the journal says first that it is
// not complete.
func (l *loader) remake(ctx context.Context, c *sql.Conn, t *target, why string) error {
	if err := l.journalTable(ctx, c, t); err != nil {
		return err
	}
	if _, err := c.ExecContext(ctx, "DROP TABLE "+t.qname()); err != nil {
		return fmt.Errorf("reload %s: %w", t, err)
	}
	if err := schema.CreateTable(ctx, c, t.db, t.src, t.base); err != nil {
		return fmt.Errorf("reload %s: %w", t, err)
	}
	t.candidate = false
	l.resMu.Lock()
	l.res.Reloaded = append(l.res.Reloaded, fmt.Sprintf("table %s reloaded from scratch: %s", t, why))
	l.resMu.Unlock()
	return nil
}
