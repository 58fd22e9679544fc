package sandboxtest

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"
)

// ValuesDB is the database LoadValueFixtures builds.
const ValuesDB = "fid_v"

// LoadValueFixtures builds database fid_v with the values only a
// permissive sql_mode stores, which a logical backup must carry exactly
// whatever the source's and the target's global sql_mode:
//
//   - DATE, DATETIME and TIMESTAMP values that are zero or have a zero
//     month or day (2020-00-15, 2020-02-00 10:00:00, 0000-00-00 12:00:00,
//     0001-00-00), and invalid dates stored under ALLOW_INVALID_DATES
//     (2020-02-31), with and without fractional seconds;
//   - ENUM error values (index 0, stored for an invalid value) next to an
//     empty member, in an ENUM whose members look like numbers, and as a
//     primary key next to the empty member; SET values holding only an
//     empty member next to the empty set, and a 64-member SET with every bit;
//   - NULL next to all of these.
//
// Each kind is in an InnoDB table and in a MyISAM or Aria one, each with
// secondary keys over the values, which a load adds after the rows (an
// ALTER TABLE that may copy them). An existing fid_v is dropped first; the
// connection it used is discarded afterwards.
func LoadValueFixtures(ctx context.Context, db *sql.DB) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sandbox: value fixtures: %w", err)
	}
	defer func() {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		conn.Close()
	}()
	for _, s := range valueSteps() {
		if _, err := conn.ExecContext(ctx, s.sql, s.args...); err != nil {
			return fmt.Errorf("sandbox: value fixtures: %s: %w", s.what, err)
		}
	}
	return nil
}

func valueSteps() []fidelityStep {
	st := func(what, sql string, args ...any) fidelityStep { return fidelityStep{what, sql, args} }
	members := make([]string, 64)
	for i := range members {
		members[i] = fmt.Sprintf("'m%02d'", i)
	}
	steps := []fidelityStep{
		// What a permissive server takes: no strict mode, no NO_ZERO_DATE,
		// no NO_ZERO_IN_DATE.
		st("session", "SET SESSION sql_mode = '', time_zone = '+00:00', NAMES utf8mb4"),
		st("drop fid_v", "DROP DATABASE IF EXISTS fid_v"),
		st("create fid_v", "CREATE DATABASE fid_v CHARACTER SET utf8mb4"),
		st("use fid_v", "USE fid_v"),
	}
	for _, engine := range []string{"InnoDB", "MyISAM"} {
		name := "dates_" + strings.ToLower(engine)
		steps = append(steps,
			st("table "+name, `CREATE TABLE `+name+` (
				id INT NOT NULL PRIMARY KEY,
				d DATE NULL,
				dt DATETIME NULL,
				dt6 DATETIME(6) NULL,
				ts TIMESTAMP NULL DEFAULT NULL,
				ts3 TIMESTAMP(3) NOT NULL DEFAULT '0000-00-00 00:00:00.000',
				KEY k_d (d),
				KEY k_dt (dt, dt6)
			) ENGINE=`+engine),
			st("rows "+name, `INSERT INTO `+name+` (id, d, dt, dt6, ts, ts3) VALUES
				(1, '2020-00-15', '2020-02-00 10:00:00', '0000-00-00 12:00:00.000001', '0000-00-00 00:00:00', '0000-00-00 00:00:00.000'),
				(2, '0001-00-00', '0000-00-00 12:00:00', '2020-00-00 00:00:00.123456', '2020-01-15 10:20:30', '2038-01-19 03:14:07.999'),
				(3, '0000-00-00', '0000-00-00 00:00:00', '0000-01-00 23:59:59.999999', '1970-01-01 00:00:01', '1970-01-01 00:00:01.001'),
				(4, '0000-01-01', '2020-12-00 00:00:00', '9999-00-31 00:00:00.5', NULL, '2000-02-29 00:00:00'),
				(5, NULL, NULL, NULL, NULL, '0000-00-00 00:00:00.000')`),
			st("allow invalid dates", "SET SESSION sql_mode = 'ALLOW_INVALID_DATES'"),
			st("invalid dates "+name, `INSERT INTO `+name+` (id, d, dt, dt6) VALUES
				(6, '2020-02-31', '2021-04-31 08:00:00', '2019-02-29 00:00:00.000001')`),
			st("session back", "SET SESSION sql_mode = ''"),
		)
	}
	for _, engine := range []string{"InnoDB", "Aria"} {
		name := "enums_" + strings.ToLower(engine)
		steps = append(steps,
			st("table "+name, `CREATE TABLE `+name+` (
				id INT NOT NULL PRIMARY KEY,
				e ENUM('', 'a', 'b') NULL,
				en ENUM('a', 'b') NOT NULL,
				ed ENUM('0', '1', '2') NULL,
				s SET('', 'a', 'b') NULL,
				s64 SET(`+strings.Join(members, ", ")+`) NULL,
				KEY k_e (e, en),
				KEY k_s (s)
			) ENGINE=`+engine),
			// 'zz' is no member: a permissive server stores the error value
			// (index 0) for ENUMs and drops it from SETs. Numbers are
			// indexes and bitmasks.
			st("rows "+name, `INSERT INTO `+name+` (id, e, en, ed, s, s64) VALUES
				(1, 'zz', 'zz', 'zz', 1, 18446744073709551615),
				(2, '', 'a', '0', 0, 0),
				(3, 'a', 'b', '1', 'a,zz', 9223372036854775808),
				(4, 0, 0, 0, 7, 1),
				(5, NULL, 'zz', NULL, NULL, NULL),
				(6, 3, 2, 3, '', 6)`),
		)
	}
	steps = append(steps,
		// Old backups held both rows as '': a clash the load could not miss.
		st("table enum_key", "CREATE TABLE enum_key (e ENUM('', 'x') NOT NULL PRIMARY KEY, s SET('', 'x') NOT NULL) ENGINE=InnoDB"),
		st("rows enum_key", "INSERT INTO enum_key VALUES ('zz', 1), ('', 0), ('x', 3)"),
	)
	return steps
}

// DescribeValues returns every row of every table of database dbName as the
// server's text, keyed by "db.table" and sorted: each column
// as CAST(col AS CHAR) (NULL as \N), ENUM and SET columns also as their
// index or bitmask (which the text does not tell apart from an empty member),
// TIMESTAMPs in UTC. Two servers holding the same values give equal maps.
func DescribeValues(ctx context.Context, db *sql.DB, dbName string) (map[string]string, error) {
	conn, done, err := SessionConn(ctx, db, "time_zone = '+00:00', sql_mode = '', NAMES utf8mb4")
	if err != nil {
		return nil, err
	}
	defer done()
	type column struct{ table, name, typ string }
	rows, err := conn.QueryContext(ctx, `SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME, ORDINAL_POSITION`, dbName)
	if err != nil {
		return nil, err
	}
	var cols []column
	for rows.Next() {
		var c column
		if err := rows.Scan(&c.table, &c.name, &c.typ); err != nil {
			rows.Close()
			return nil, err
		}
		cols = append(cols, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	selects := map[string][]string{}
	var tables []string
	for _, c := range cols {
		if _, ok := selects[c.table]; !ok {
			tables = append(tables, c.table)
		}
		q := quoteIdent(c.name)
		selects[c.table] = append(selects[c.table], "CAST("+q+" AS CHAR)")
		if c.typ == "enum" || c.typ == "set" {
			selects[c.table] = append(selects[c.table], "CAST("+q+" AS UNSIGNED)")
		}
	}
	out := map[string]string{}
	for _, t := range tables {
		// Ordered by every field: the same rows in the same order on both
		// servers, whatever their keys.
		order := make([]string, len(selects[t]))
		for i := range order {
			order[i] = fmt.Sprint(i + 1)
		}
		q := "SELECT " + strings.Join(selects[t], ", ") + " FROM " + quoteIdent(dbName) + "." + quoteIdent(t) + " ORDER BY " + strings.Join(order, ", ")
		text, err := queryText(ctx, conn, q, len(selects[t]))
		if err != nil {
			return nil, fmt.Errorf("describe values of %s.%s: %w", dbName, t, err)
		}
		out[dbName+"."+t] = text
	}
	return out, nil
}

// queryText runs q and returns its rows as lines of tab-separated fields.
func queryText(ctx context.Context, conn *sql.Conn, q string, n int) (string, error) {
	rows, err := conn.QueryContext(ctx, q)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	vals := make([]sql.NullString, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var b strings.Builder
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return "", err
		}
		for i, v := range vals {
			if i > 0 {
				b.WriteByte('\t')
			}
			if v.Valid {
				b.WriteString(v.String)
			} else {
				b.WriteString(`\N`)
			}
		}
		b.WriteByte('\n')
	}
	return b.String(), rows.Err()
}

// SessionConn is a connection of db with the session settings set (as
// SET SESSION takes them); done discards it rather than returning it to
// the pool, whose other users expect the defaults.
func SessionConn(ctx context.Context, db *sql.DB, set string) (conn *sql.Conn, done func(), err error) {
	if conn, err = db.Conn(ctx); err != nil {
		return nil, nil, err
	}
	done = func() {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		conn.Close()
	}
	if _, err := conn.ExecContext(ctx, "SET SESSION "+set); err != nil {
		done()
		return nil, nil, err
	}
	return conn, done, nil
}
