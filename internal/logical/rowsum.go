package logical

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strconv"

	"github.com/zeebo/xxh3"

	"github.com/backstream/backstream/internal/logical/schema"
)

// RowSum digests a table's rows as they were dumped: the sum, modulo
// 2^64, of the XXH3 hash of every row's line in the data files. A sum does
// not depend on the order rows come in or on how they were cut into files,
// so a restore test can read the loaded table back in any order and
// compare it with what the dump saw, without trusting the files between.
// Zero means not recorded (backups made before row sums existed).
type RowSum uint64

func hashRow(line []byte) RowSum { return RowSum(xxh3.Hash(line)) }

func (s RowSum) String() string { return fmt.Sprintf("%016x", uint64(s)) }

// MarshalText writes the sum as 16 hex digits: JSON numbers above 2^53
// do not survive every reader.
func (s RowSum) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads what MarshalText wrote.
func (s *RowSum) UnmarshalText(b []byte) error {
	v, err := strconv.ParseUint(string(b), 16, 64)
	if err != nil || len(b) != 16 {
		return fmt.Errorf("row sum %q: want 16 hex digits", b)
	}
	*s = RowSum(v)
	return nil
}

// Sum adds up the rows and row sums the dump recorded for the table; ok is
// false when a data file has no sum recorded.
func (t TableData) Sum() (rows int64, sum RowSum, ok bool) {
	for _, c := range t.Chunks {
		if c.Sum == 0 {
			return 0, 0, false
		}
		rows += c.Rows
		sum += c.Sum
	}
	return rows, sum, true
}

// SumTable reads table t of database db over c the way a dump writing
// data files of the given format (the backup's Catalog.DataFormat) does
// and returns its row count and row sum, to compare with TableData.Sum.
func SumTable(ctx context.Context, c *sql.Conn, db string, t *schema.Table, format int) (rows int64, sum RowSum, err error) {
	if err := setReadSession(ctx, c); err != nil {
		return 0, 0, err
	}
	return newTableWork(db, t, format).sum(ctx, c)
}

// sum reads the table over c as dumpRows writes it, in whatever snapshot
// c is in, and returns its row count and row sum.
func (w *tableWork) sum(ctx context.Context, c *sql.Conn) (rows int64, sum RowSum, err error) {
	if len(w.cols) == 0 {
		return 0, 0, nil
	}
	var line []byte
	err = w.eachRow(ctx, c, "", func(vals []driver.Value) error {
		var err error
		if line, err = w.appendRow(line[:0], vals); err != nil {
			return err
		}
		sum += hashRow(line)
		rows++
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("read %s: %w", w.name(), err)
	}
	return rows, sum, nil
}
