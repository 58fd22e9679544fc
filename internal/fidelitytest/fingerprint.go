package fidelitytest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/backstream/backstream/internal/mariadb"

	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// Fingerprint describes database as the server holds it, keyed by object:
// SHOW CREATE of the database and of every table, sequence (with its row),
// view, trigger, routine and event; every row of every base table, all
// columns (invisible, generated and period columns too, history rows of
// system-versioned tables too), each value rendered by its type so that
// two values are the same text only when they are the same value; and
// CHECKSUM TABLE ... EXTENDED. Two servers holding the same database give
// equal maps.
func Fingerprint(ctx context.Context, db *sql.DB, database string) (map[string]string, error) {
	out, err := sandboxtest.DescribeObjects(ctx, db, database)
	if err != nil {
		return nil, err
	}
	conn, done, err := sandboxtest.SessionConn(ctx, db, "time_zone = '+00:00'")
	if err != nil {
		return nil, err
	}
	defer done()
	tables, err := baseTables(ctx, conn, database)
	if err != nil {
		return nil, err
	}
	for _, t := range tables {
		rows, err := tableRows(ctx, conn, database, t)
		if err != nil {
			return nil, fmt.Errorf("fingerprint %s.%s: %w", database, t.name, err)
		}
		out["rows "+database+"."+t.name] = rows
		var name string
		var sum sql.NullString
		if err := conn.QueryRowContext(ctx, "CHECKSUM TABLE "+qualified(database, t.name)+" EXTENDED").Scan(&name, &sum); err != nil {
			return nil, fmt.Errorf("fingerprint %s.%s: checksum: %w", database, t.name, err)
		}
		out["checksum "+database+"."+t.name] = sum.String
	}
	return out, nil
}

type table struct {
	name      string
	versioned bool
}

func baseTables(ctx context.Context, conn *sql.Conn, database string) ([]table, error) {
	rows, err := conn.QueryContext(ctx, "SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') ORDER BY TABLE_NAME", database)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []table
	for rows.Next() {
		var t table
		var typ string
		if err := rows.Scan(&t.name, &typ); err != nil {
			return nil, err
		}
		t.versioned = typ == "SYSTEM VERSIONED"
		out = append(out, t)
	}
	return out, rows.Err()
}

// inlineRows is how much of a table's rendered rows a fingerprint keeps as
// text, so that a difference shows the rows; beyond it, a count and hash.
const inlineRows = 32 << 10

// tableRows renders every row of the table, sorted.
func tableRows(ctx context.Context, conn *sql.Conn, database string, t table) (string, error) {
	// A period's ROW START column shows in GENERATION_EXPRESSION (EXTRA
	// says only STORED GENERATED on 10.11, ROW START on later servers).
	cols, err := conn.QueryContext(ctx, "SELECT COLUMN_NAME, DATA_TYPE, CONCAT(EXTRA, ' ', IFNULL(GENERATION_EXPRESSION, '')) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", database, t.name)
	if err != nil {
		return "", err
	}
	var exprs []string
	period := false
	for cols.Next() {
		var name, typ, extra string
		if err := cols.Scan(&name, &typ, &extra); err != nil {
			cols.Close()
			return "", err
		}
		period = period || strings.Contains(strings.ToUpper(extra), "ROW START")
		exprs = append(exprs, render(mariadb.QuoteIdent(name), typ))
	}
	cols.Close()
	if err := cols.Err(); err != nil {
		return "", err
	}
	from := qualified(database, t.name)
	if t.versioned {
		if !period {
			// Implicit system versioning: information_schema does not list
			// the row_start and row_end the server added.
			exprs = append(exprs, render("row_start", "timestamp"), render("row_end", "timestamp"))
		}
		from += " FOR SYSTEM_TIME ALL"
	}
	rows, err := conn.QueryContext(ctx, "SELECT CONCAT_WS(',', "+strings.Join(exprs, ", ")+") FROM "+from)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var all []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return "", err
		}
		all = append(all, r)
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	slices.Sort(all)
	text := strings.Join(all, "\n")
	if len(text) <= inlineRows {
		return text, nil
	}
	sum := sha256.Sum256([]byte(text))
	return fmt.Sprintf("%d rows, sha256 %s", len(all), hex.EncodeToString(sum[:])), nil
}

// render is the SQL that shows one value so that equal text means an equal
// value: strings, binary and spatial values as the hex of their bytes, ENUM
// and SET as their bytes and their number (an ENUM's error value and a ”
// member differ only there), FLOAT widened to DOUBLE (its text keeps six
// digits), everything else as the server's text; NULL apart from any value.
func render(col, typ string) string {
	var e string
	switch typ {
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext",
		"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob",
		"geometry", "point", "linestring", "polygon", "multipoint",
		"multilinestring", "multipolygon", "geometrycollection", "json", "bit":
		e = "HEX(" + col + ")"
	case "enum", "set":
		e = "CONCAT(HEX(" + col + "), '#', " + col + "+0)"
	case "float":
		e = "CAST(" + col + " AS DOUBLE)"
	default:
		e = "CAST(" + col + " AS CHAR)"
	}
	return "IF(" + col + " IS NULL, 'NULL', CONCAT('=', " + e + "))"
}

// Compare lists how got differs from want, one line per object, sorted.
func Compare(got, want map[string]string) []string {
	var diffs []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			diffs = append(diffs, k+": missing after the restore")
		case g != w:
			diffs = append(diffs, fmt.Sprintf("%s differs:\n  restored: %s\n    source: %s", k, clip(g), clip(w)))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, k+": restored but not in the source")
		}
	}
	slices.Sort(diffs)
	return diffs
}

func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}

func qualified(db, name string) string {
	return mariadb.QuoteIdent(db) + "." + mariadb.QuoteIdent(name)
}
