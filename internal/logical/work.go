package logical

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/mariadb"
)

// tableWork is one table's share of the dump: how to select it, how far
// the dump got, and the data files made.
type tableWork struct {
	db   string
	t    *schema.Table
	cols []schema.Column // the dumped columns, in file order
	from string          // `db`.`t`, with FOR SYSTEM_TIME ALL for versioned tables that keep their history
	list string          // the select list
	// masks masks the columns the dump's rules name (nil: none).
	masks *tableMasks

	mu sync.Mutex
	// A key whose first column is an integer is cut into ranges of that
	// column that any worker may take: one big table keeps every worker
	// busy. Otherwise one worker scans the table.
	ranged   bool
	planned  bool
	next     int64
	last     int64
	step     int64
	exhaust  bool // ranges all handed out, or the scan taken
	busy     int  // tasks handed out and not done
	counted  bool // reported done
	chunkNum int
	chunks   []Chunk

	// A key whose first column is not an integer (text, binary, temporal,
	// decimal, UUID) is cut by boundary values of that column, which the
	// planning worker reads in key order and publishes as it goes, so
	// that the others start on the first ranges while it reads on (see
	// keyset.go). Range i is (bounds[i-1], bounds[i]]; the first has no
	// lower end, the last (handed out once planning ended) no upper.
	keyset bool
	bounds []string // the boundaries as SQL literals the column compares with in its own collation
	taken  int      // ranges handed out
}

// newTableWork selects table t of database db the way data files of the
// given format (Catalog.DataFormat) hold it.
func newTableWork(db string, t *schema.Table, format int) *tableWork {
	w := &tableWork{db: db, t: t, from: qualified(db, t.Name)}
	if t.Versioned && !t.HistoryLeftOut {
		w.from += " FOR SYSTEM_TIME ALL"
	}
	var sel []string
	for _, c := range t.Columns {
		// Without history the server sets the period columns on load.
		if c.Generated || t.HistoryLeftOut && (c.RowStart || c.RowEnd) {
			continue
		}
		w.cols = append(w.cols, c)
		sel = append(sel, dumpExpr(c, format))
	}
	w.list = strings.Join(sel, ", ")
	// Ranges of the key's leading integer column are disjoint index range
	// scans that together cover the table, also when the key has more
	// columns or the table keeps history (versions share their key). Not
	// for ARCHIVE: it refuses an AUTO_INCREMENT value below the largest it
	// holds, so its rows must load in key order, which one scan of its
	// file (rows in the order they were inserted, hence increasing) gives,
	// and files of ranges dumped side by side do not.
	w.ranged = t.IntKey && !strings.EqualFold(t.Engine, "ARCHIVE")
	w.keyset = !t.IntKey && len(t.Key) > 0 && !strings.EqualFold(t.Engine, "ARCHIVE") && keysetType(w.keyColumn().DataType)
	return w
}

// keyColumn is the chunking key's first column.
func (w *tableWork) keyColumn() schema.Column {
	for _, c := range w.t.Columns {
		if len(w.t.Key) > 0 && strings.EqualFold(c.Name, w.t.Key[0]) {
			return c
		}
	}
	return schema.Column{}
}

// dumpExpr selects a column so that LOAD DATA can take the value back: BIT
// values travel as numbers (LOAD DATA would store their digits' bytes);
// YEAR as its text (the driver makes 0000 the number 0, which loads as
// 2000); FLOAT as a double (the server's text of a FLOAT keeps only six
// digits); ENUM and SET, in DataFormatNumeric, as their index and bitmask
// (CAST: a SET's +0 is signed, and a bitmask can use all 64 bits);
// everything else as its exact bytes. Temporal values are the server's
// text (the connection never parses dates, see mariadb.Open), so a zero
// date or one with a zero month or day (2020-00-15, which a permissive
// sql_mode stores) is written as the server holds it; TIMESTAMPs read in
// UTC (setReadSession).
func dumpExpr(c schema.Column, format int) string {
	switch c.DataType {
	case "bit":
		return "CAST(" + mariadb.QuoteIdent(c.Name) + " AS UNSIGNED)"
	case "year":
		return "CAST(" + mariadb.QuoteIdent(c.Name) + " AS CHAR)"
	case "float":
		return "CAST(" + mariadb.QuoteIdent(c.Name) + " AS DOUBLE)"
	case "enum", "set":
		if format >= DataFormatNumeric {
			return "CAST(" + mariadb.QuoteIdent(c.Name) + " AS UNSIGNED)"
		}
	}
	return mariadb.QuoteIdent(c.Name)
}

func (w *tableWork) name() string { return w.db + "." + w.t.Name }

func (w *tableWork) columnNames() []string {
	names := make([]string, len(w.cols))
	for i, c := range w.cols {
		names[i] = c.Name
	}
	return names
}

// task is one piece of dumping: a key range of a table, or a whole scan.
type task struct {
	w      *tableWork
	lo, hi int64
	scan   bool
	plan   bool // read the key range first (the first worker to reach the table)
	// keyset: range number rng of a table cut by boundary values.
	keyset bool
	rng    int
}

// scheduler hands out tasks, biggest tables first; a ranged table's
// ranges go to whichever worker is free.
type scheduler struct {
	mu     sync.Mutex
	tables []*tableWork
	// first is the index of the first table not yet exhausted: tables
	// only ever become exhausted, so the search starts there (from the
	// start, 10,000 tables made handing out the tasks quadratic: a third
	// of a dump's CPU).
	first int
}

func newScheduler(tables []*tableWork) *scheduler { return &scheduler{tables: tables} }

// skipExhausted moves first past the tables that have nothing left to
// hand out. s.mu is held.
func (s *scheduler) skipExhausted() {
	for s.first < len(s.tables) {
		w := s.tables[s.first]
		w.mu.Lock()
		done := w.exhaust
		w.mu.Unlock()
		if !done {
			return
		}
		s.first++
	}
}

// next returns the next task, or false when every table is handed out.
// A worker that finds only ranged tables still being planned waits briefly
// for their ranges rather than ending early. Every task handed out counts
// as busy on its table until taskDone.
func (s *scheduler) next(ctx context.Context) (task, bool, error) {
	for {
		s.mu.Lock()
		s.skipExhausted()
		waiting := false
		for _, w := range s.tables[s.first:] {
			w.mu.Lock()
			switch {
			case w.exhaust:
			case w.keyset:
				t, ok := w.nextKeyset()
				if ok {
					w.mu.Unlock()
					s.mu.Unlock()
					return t, true, nil
				}
				waiting = true
			case !w.ranged:
				w.exhaust = true
				w.busy++
				w.mu.Unlock()
				s.mu.Unlock()
				return task{w: w, scan: true}, true, nil
			case !w.planned && w.step == 0:
				w.step = -1 // being planned
				w.busy++
				w.mu.Unlock()
				s.mu.Unlock()
				return task{w: w, plan: true}, true, nil
			case !w.planned:
				waiting = true
			default:
				lo := w.next
				hi := lo + w.step - 1
				if hi < lo || hi >= w.last { // overflow, or the end
					hi = w.last
					w.exhaust = true
				}
				w.next = hi + 1
				w.busy++
				w.mu.Unlock()
				s.mu.Unlock()
				return task{w: w, lo: lo, hi: hi}, true, nil
			}
			w.mu.Unlock()
		}
		s.mu.Unlock()
		if !waiting {
			return task{}, false, nil
		}
		select {
		case <-ctx.Done():
			return task{}, false, context.Cause(ctx)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// dumpLoop runs one worker: it takes tasks until none are left, and tells
// out of each table once all of it is dumped.
func (s *session) dumpLoop(ctx context.Context, c *sql.Conn, sched *scheduler, out Output) error {
	// One buffer for all of the worker's tasks: a server of 10,000 small
	// tables makes tens of thousands of them, and a buffer each was 38 GB
	// of allocations for an 8 MiB dump, and a GiB of RSS.
	buf := make([]byte, 0, payloadSize+64<<10)
	for {
		t, ok, err := sched.next(ctx)
		if err != nil || !ok {
			return err
		}
		var made int64
		switch {
		case t.plan && t.w.keyset:
			err = planKeyset(ctx, c, t.w, s.opt.ChunkBytes)
		case t.plan:
			err = planRanges(ctx, c, t.w, s.opt.ChunkBytes)
		case t.keyset:
			made, err = s.dumpRows(ctx, c, out, t.w, t.w.rangeWhere(t.rng), &buf)
		case t.scan:
			made, err = s.dumpRows(ctx, c, out, t.w, "", &buf)
		default:
			made, err = s.dumpRows(ctx, c, out, t.w, fmt.Sprintf(" WHERE %s BETWEEN %d AND %d", mariadb.QuoteIdent(t.w.t.Key[0]), t.lo, t.hi), &buf)
		}
		if err != nil {
			return fmt.Errorf("table %s: %w", t.w.name(), explainLost(err))
		}
		if t.w.taskDone(t, made, s.opt.ChunkBytes) {
			s.progress.tableDone(t.w)
			if err := out.TableDone(ctx, t.w.data()); err != nil {
				return fmt.Errorf("table %s: %w", t.w.name(), err)
			}
		}
	}
}

// taskDone ends task t of the table, which made bytes of data files, and
// reports, once, that every part of the table is dumped. A range of an
// integer key resizes the ranges after it (adapt).
func (w *tableWork) taskDone(t task, made, chunkBytes int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.busy--
	if w.ranged && !t.plan && !t.scan {
		w.adapt(made, chunkBytes)
	}
	if w.exhaust && w.busy == 0 && !w.counted {
		w.counted = true
		return true
	}
	return false
}

// data is what the table's data files are so far.
func (w *tableWork) data() TableData {
	w.mu.Lock()
	defer w.mu.Unlock()
	td := TableData{Database: w.db, Table: w.t.Name, Columns: w.columnNames(), Chunks: slices.Clone(w.chunks)}
	if w.masks != nil {
		td.Masked = w.masks.applied
	}
	return td
}

// planRanges reads the key's range in the snapshot and sizes the first
// ranges from the table's average row length; adapt corrects them.
func planRanges(ctx context.Context, c *sql.Conn, w *tableWork, chunkBytes int64) error {
	key := mariadb.QuoteIdent(w.t.Key[0])
	var lo, hi sql.NullString
	err := c.QueryRowContext(ctx, fmt.Sprintf("SELECT MIN(%s), MAX(%s) FROM %s", key, key, w.from)).Scan(&lo, &hi)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.planned = true
	if !lo.Valid {
		w.exhaust = true // empty
		return nil
	}
	first, err1 := strconv.ParseInt(lo.String, 10, 64)
	last, err2 := strconv.ParseInt(hi.String, 10, 64)
	if err1 != nil || err2 != nil {
		// An unsigned key beyond the signed range: scan it whole.
		w.ranged = false
		return nil
	}
	rowLen := int64(100)
	if w.t.Rows > 0 && w.t.DataBytes > 0 {
		rowLen = max(w.t.DataBytes/w.t.Rows, 1)
	}
	rows := max(chunkBytes/rowLen, 1)
	span := uint64(last - first)
	w.step = int64(max(1, min(span/uint64(max(w.t.Rows, 1))*uint64(rows), 1<<62)))
	w.next, w.last = first, last
	return nil
}

// adapt resizes a ranged table's step so that its files come near the
// chunk size, within a factor of four per step; w.mu is held.
func (w *tableWork) adapt(made, chunkBytes int64) {
	if made <= 0 {
		w.step = min(w.step*4, 1<<62)
		return
	}
	f := float64(chunkBytes) / float64(made)
	f = max(0.25, min(f, 4))
	w.step = max(1, int64(float64(w.step)*f))
}

// payloadSize is the size of the xbstream chunks data files are cut into.
const payloadSize = 1 << 20

// dumpRows streams the rows of one select into data files cut at the
// chunk size and returns the bytes written.
func (s *session) dumpRows(ctx context.Context, c *sql.Conn, out Output, w *tableWork, where string, pbuf *[]byte) (made int64, err error) {
	if len(w.cols) == 0 {
		return 0, nil
	}
	// The worker's buffer, which a DataWriter's Write never keeps; grown
	// here, it stays grown for the worker's next task.
	buf := (*pbuf)[:0]
	defer func() { *pbuf = buf[:0] }()
	var (
		f      DataWriter
		fRows  int64
		fBytes int64
		fSum   RowSum
		chunk  Chunk
	)
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		// Waiting here holds the worker, and so its query, back: the server
		// reads no faster than the budget allows.
		if err := s.limit.Wait(ctx, len(buf)); err != nil {
			return err
		}
		err := f.Write(ctx, buf)
		fBytes += int64(len(buf))
		made += int64(len(buf))
		s.progress.made(w, int64(len(buf)))
		buf = buf[:0]
		return err
	}
	closeFile := func() error {
		if f == nil {
			return nil
		}
		if err := flush(); err != nil {
			return err
		}
		chunk.Rows, chunk.Bytes, chunk.Sum = fRows, fBytes, fSum
		if err := f.Close(ctx, chunk); err != nil {
			return err
		}
		w.mu.Lock()
		w.chunks = append(w.chunks, chunk)
		w.mu.Unlock()
		f = nil
		return nil
	}
	err = w.eachRow(ctx, c, where, func(vals []driver.Value) error {
		if f == nil {
			w.mu.Lock()
			w.chunkNum++
			n := w.chunkNum
			w.mu.Unlock()
			chunk = Chunk{ID: s.nextID(), Path: chunkPath(w.db, w.t.Name, n)}
			var err error
			if f, err = out.Create(ctx, w.db, w.t.Name, chunk); err != nil {
				return err
			}
			fRows, fBytes, fSum = 0, 0, 0
		}
		start := len(buf)
		var err error
		if buf, err = w.appendRow(buf, vals); err != nil {
			return err
		}
		fSum += hashRow(buf[start:])
		fRows++
		if len(buf) >= payloadSize {
			if err := flush(); err != nil {
				return err
			}
			if fBytes >= s.opt.ChunkBytes {
				return closeFile()
			}
		}
		return nil
	})
	if err != nil {
		return made, explainDDL(err)
	}
	return made, closeFile()
}

// eachRow runs the table's select with a where clause and hands every row
// to fn. Rows are read from the driver itself: database/sql's Scan would
// copy and convert every value once more, a tenth of the dump's CPU. vals
// is reused from row to row.
func (w *tableWork) eachRow(ctx context.Context, c *sql.Conn, where string, fn func(vals []driver.Value) error) error {
	return c.Raw(func(dc any) error {
		q, ok := dc.(driver.QueryerContext)
		if !ok {
			return fmt.Errorf("the MySQL driver cannot run queries directly (%T)", dc)
		}
		rows, err := q.QueryContext(ctx, "SELECT "+w.list+" FROM "+w.from+where, nil)
		if err != nil {
			return err
		}
		defer rows.Close()
		vals := make([]driver.Value, len(w.cols))
		for {
			if err := rows.Next(vals); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
			if err := fn(vals); err != nil {
				return err
			}
		}
	})
}

// appendRow writes one row as a line of a data file, masked as the
// dump's rules say.
func (w *tableWork) appendRow(dst []byte, vals []driver.Value) ([]byte, error) {
	for i, v := range vals {
		if i > 0 {
			dst = append(dst, '\t')
		}
		var err error
		if f := w.masks.fn(i); f != nil {
			dst, err = appendMasked(dst, v, f)
		} else {
			dst, err = appendValue(dst, v)
		}
		if err != nil {
			return dst, fmt.Errorf("column %s: %w", w.cols[i].Name, err)
		}
	}
	return append(dst, '\n'), nil
}

// appendValue writes one value as the driver gives it: the text protocol
// hands over the server's bytes, but parses integers and floats first;
// they are printed back the way database/sql would print them (the
// shortest text that reads back as the same number).
func appendValue(dst []byte, v driver.Value) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return appendField(dst, nil, true), nil
	case []byte:
		return appendField(dst, x, false), nil
	case string:
		return appendField(dst, []byte(x), false), nil
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	case uint64:
		return strconv.AppendUint(dst, x, 10), nil
	case float32:
		return strconv.AppendFloat(dst, float64(x), 'g', -1, 32), nil
	case float64:
		return strconv.AppendFloat(dst, x, 'g', -1, 64), nil
	}
	return dst, fmt.Errorf("unexpected value of type %T from the driver", v)
}

// explainDDL names the error InnoDB gives a snapshot reading a table that
// DDL rebuilt after the snapshot began.
func explainDDL(err error) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1412 {
		return fmt.Errorf("%w (the table was altered during the dump; run the backup again, or use --block-ddl)", err)
	}
	return err
}

// explainLost says what a broken connection means: the driver's words for
// it ("invalid connection", "unexpected EOF") do not tell the user that
// the server went away under the dump.
func explainLost(err error) error {
	var me *mysql.MySQLError
	if errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.As(err, &me) && (me.Number == 1053 || me.Number == 1927) { // server shutdown in progress, connection killed
		return fmt.Errorf("the connection to the server was lost (was it shut down or restarted?): %w", err)
	}
	return err
}
