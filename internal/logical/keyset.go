package logical

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"

	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/mariadb"
)

// Ranges of a key whose first column is not an integer. The planning
// worker reads that column in key order (ORDER BY, an index scan in the
// snapshot every worker shares) and takes a boundary every so many rows;
// range i selects (bounds[i-1], bounds[i]] with the column compared in
// its own collation, as ORDER BY sorted it. Whatever that order is, the
// ranges, being consecutive intervals of one total order, hold every row
// exactly once: a row equal to a boundary goes to the range below it,
// so equal values of a first column shared by several rows (a composite
// key) stay in one range.

// keysetType reports whether a key column of this type can be cut by
// boundary values: those whose comparison with a literal orders as ORDER
// BY does. ENUM and SET sort by index but compare as text, floats print
// rounded, and other types are left to one scan.
func keysetType(dataType string) bool {
	switch dataType {
	case "char", "varchar", "binary", "varbinary", "date", "datetime", "timestamp", "time", "decimal", "uuid":
		return true
	}
	return false
}

// textual is the text of a boundary of a type written as a quoted or bare
// literal: checked, so that no value read can change the statement.
var (
	temporalText = regexp.MustCompile(`^-?[0-9]{1,4}[0-9:. -]*$`)
	decimalText  = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)
	uuidText     = regexp.MustCompile(`^[0-9a-fA-F-]{32,36}$`)
)

// planKeyset reads the boundaries of w's key column and publishes them as
// it goes; the ranges between them go to any worker meanwhile.
func planKeyset(ctx context.Context, c *sql.Conn, w *tableWork, chunkBytes int64) error {
	col := w.keyColumn()
	key := mariadb.QuoteIdent(col.Name)
	literal, sel, err := keysetLiteral(ctx, c, w, col)
	if err != nil {
		return err
	}
	rowLen := int64(100)
	if w.t.Rows > 0 && w.t.DataBytes > 0 {
		rowLen = max(w.t.DataBytes/w.t.Rows, 1)
	}
	every := max(chunkBytes/rowLen, 1)
	rows, err := c.QueryContext(ctx, "SELECT "+sel+" FROM "+w.from+" ORDER BY "+key)
	if err != nil {
		return err
	}
	defer rows.Close()
	var n int64
	var last string
	for rows.Next() {
		var v []byte
		if err := rows.Scan(&v); err != nil {
			return err
		}
		if n++; n%every != 0 || string(v) == last || zeroDate.Match(v) {
			// A date with zero parts is no boundary: under NO_ZERO_DATE or
			// NO_ZERO_IN_DATE a comparison with it may not hold for any
			// row. Leaving a boundary out joins two ranges.
			continue
		}
		lit, err := literal(v)
		if err != nil {
			return fmt.Errorf("key column %s: %w", col.Name, err)
		}
		last = string(v)
		w.mu.Lock()
		w.bounds = append(w.bounds, lit)
		w.mu.Unlock()
	}
	if err := rows.Err(); err != nil {
		return err
	}
	w.mu.Lock()
	w.planned = true
	w.mu.Unlock()
	return nil
}

// keysetLiteral returns how a boundary of column col is selected and
// written as a literal that compares with the column in the column's own
// character set and collation.
func keysetLiteral(ctx context.Context, c *sql.Conn, w *tableWork, col schema.Column) (literal func([]byte) (string, error), sel string, err error) {
	key := mariadb.QuoteIdent(col.Name)
	switch col.DataType {
	case "char", "varchar":
		var cs, coll sql.NullString
		err := c.QueryRowContext(ctx, "SELECT CHARACTER_SET_NAME, COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME = ?",
			w.db, w.t.Name, col.Name).Scan(&cs, &coll)
		if err != nil {
			return nil, "", fmt.Errorf("key column %s: its collation: %w", col.Name, err)
		}
		if !identWord.MatchString(cs.String) || !identWord.MatchString(coll.String) {
			return nil, "", fmt.Errorf("key column %s: character set %q, collation %q", col.Name, cs.String, coll.String)
		}
		return func(hex []byte) (string, error) {
			return "_" + cs.String + " X'" + string(hex) + "' COLLATE " + coll.String, nil
		}, "HEX(" + key + ")", nil
	case "binary", "varbinary":
		return func(hex []byte) (string, error) { return "X'" + string(hex) + "'", nil }, "HEX(" + key + ")", nil
	}
	check := map[string]*regexp.Regexp{"decimal": decimalText, "uuid": uuidText}[col.DataType]
	if check == nil {
		check = temporalText
	}
	masked := w.masks.masked(col.Name)
	return func(v []byte) (string, error) {
		if !check.Match(v) && masked {
			// The boundaries are source values: they go into the WHERE of
			// the selects only, never into what is written or said.
			return "", fmt.Errorf("a value (not shown: the column is masked) is not a %s literal", col.DataType)
		}
		if !check.Match(v) {
			return "", fmt.Errorf("value %q is not a %s literal", v, col.DataType)
		}
		if col.DataType == "decimal" {
			return string(v), nil
		}
		return "'" + string(v) + "'", nil
	}, "CAST(" + key + " AS CHAR)", nil
}

// zeroDate matches a date or datetime with a zero year, month or day.
var zeroDate = regexp.MustCompile(`^0000-|^-|^[0-9]{4}-00|^[0-9]{4}-[0-9]{2}-00`)

// identWord matches a character set or collation name.
var identWord = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// nextKeyset hands out the next range of a table cut by boundary values,
// under w.mu: the planning of it first, then each range as soon as its
// upper boundary is known, the last once planning ended. ok is false
// while the ranges wait for the planner.
func (w *tableWork) nextKeyset() (task, bool) {
	switch {
	case w.step == 0:
		w.step = -1 // being planned
		w.busy++
		return task{w: w, plan: true}, true
	case w.taken < len(w.bounds):
	case w.planned:
		w.exhaust = true
	default:
		return task{}, false
	}
	i := w.taken
	w.taken++
	w.busy++
	return task{w: w, keyset: true, rng: i}, true
}

// rangeWhere selects range i of a table cut by boundary values.
func (w *tableWork) rangeWhere(i int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := mariadb.QuoteIdent(w.keyColumn().Name)
	var conds []string
	if i > 0 {
		conds = append(conds, key+" > "+w.bounds[i-1])
	}
	if i < len(w.bounds) {
		conds = append(conds, key+" <= "+w.bounds[i])
	}
	if len(conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(conds, " AND ")
}
