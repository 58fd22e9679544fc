package schema

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/backstream/backstream/internal/mariadb"
	"golang.org/x/sync/errgroup"
)

// readSettings are the session settings Read works under. sql_mode
// IGNORE_BAD_TABLE_OPTIONS alone makes SHOW CREATE print backquoted names
// and every table option (ANSI_QUOTES, NO_TABLE_OPTIONS, NO_FIELD_OPTIONS
// or ORACLE in the caller's session would change the text), options the
// engine does not know included (without the mode they are printed as
// comments, and a restore would drop them); utf8mb4 results carry every
// character the server's utf8mb3 metadata and the objects' texts can hold.
var readSettings = []setting{
	{"sql_mode", "IGNORE_BAD_TABLE_OPTIONS"},
	{"character_set_client", "utf8mb4"},
	{"character_set_results", "utf8mb4"},
	{"collation_connection", "utf8mb4_general_ci"},
	// SHOW CREATE TABLE prints a TIMESTAMP default, a moment, in the
	// session's time zone; tables are created in sessions in UTC (the
	// load's, the stock scripts'), so they are read in UTC, or a source
	// outside UTC would restore every such default shifted by its offset.
	{"time_zone", "+00:00"},
}

// Read reads the catalog of the source over conn and the connections in
// more: the databases are shared out among the connections, each read
// whole by one of them (on a server of many schemas the reading is a few
// queries per table, and one connection waits on each in turn). It runs inside
// whatever transaction the callers set up on the connections and leaves
// their sql_mode and character set as it found them; it does change their
// current database (USE), because SHOW CREATE VIEW qualifies table names
// relative to it.
func Read(ctx context.Context, conn *sql.Conn, more []*sql.Conn, f Filter, skip Skip) (*Catalog, error) {
	conns := append([]*sql.Conn{conn}, more...)
	cat := &Catalog{}
	err := withSession(ctx, conns[0], readSettings, func() error {
		if err := conns[0].QueryRowContext(ctx, "SELECT @@GLOBAL.sql_mode").Scan(&cat.SQLMode); err != nil {
			return fmt.Errorf("read global sql_mode: %w", err)
		}
		names, err := queryStrings(ctx, conns[0], "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA ORDER BY SCHEMA_NAME")
		if err != nil {
			return fmt.Errorf("list databases: %w", err)
		}
		names = slices.DeleteFunc(names, func(name string) bool { return !f.Database(name) })
		if cat.Databases, err = readDatabases(ctx, conns, names, f, skip); err != nil {
			return err
		}
		sortViews(cat.Databases)
		if !skip.Users {
			if cat.Users, cat.IgnoredAccounts, err = readAccounts(ctx, conns[0]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return cat, nil
}

// readDatabases reads the databases named, in that order, sharing them out
// among conns; conns[0] is already in the read's session, the others are
// put in it for the time they read. The first error ends the reading.
func readDatabases(ctx context.Context, conns []*sql.Conn, names []string, f Filter, skip Skip) ([]*Database, error) {
	dbs := make([]*Database, len(names))
	g, gctx := errgroup.WithContext(ctx)
	var next atomic.Int64
	read := func(conn *sql.Conn) error {
		for {
			i := int(next.Add(1)) - 1
			if i >= len(names) {
				return nil
			}
			d, err := readDatabase(gctx, conn, names[i], f, skip)
			if err != nil {
				return err
			}
			dbs[i] = d
		}
	}
	g.Go(func() error { return read(conns[0]) })
	// A connection more than there are databases would have none to read.
	for i := 1; i < min(len(conns), len(names)); i++ {
		c := conns[i]
		g.Go(func() error {
			return withSession(gctx, c, readSettings, func() error { return read(c) })
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return dbs, nil
}

// columnInfo is a row of information_schema.COLUMNS.
type columnInfo struct {
	Column
	nullable bool
}

func readDatabase(ctx context.Context, conn *sql.Conn, name string, f Filter, skip Skip) (*Database, error) {
	d := &Database{Name: name}
	if err := useDatabase(ctx, conn, name); err != nil {
		return nil, err
	}
	row, err := showCreate(ctx, conn, "SHOW CREATE DATABASE "+mariadb.QuoteIdent(name))
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", name, err)
	}
	if d.Create, err = row.get("Create Database"); err != nil {
		return nil, fmt.Errorf("database %s: %w", name, err)
	}

	columns, err := readColumns(ctx, conn, name)
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", name, err)
	}
	type tableRow struct {
		name, kind, engine string
		rows, bytes        int64
	}
	var tables []tableRow
	err = queryRows(ctx, conn, `SELECT TABLE_NAME, TABLE_TYPE, IFNULL(ENGINE, ''), IFNULL(TABLE_ROWS, 0), IFNULL(DATA_LENGTH, 0)
		FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME`, []any{name},
		func(rows *sql.Rows) error {
			var t tableRow
			if err := rows.Scan(&t.name, &t.kind, &t.engine, &t.rows, &t.bytes); err != nil {
				return err
			}
			tables = append(tables, t)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("database %s: list tables: %w", name, err)
	}
	for _, tr := range tables {
		if !f.Table(name, tr.name) {
			continue
		}
		switch tr.kind {
		case "BASE TABLE", "SYSTEM VERSIONED", "SEQUENCE":
			t := &Table{Name: tr.name, Engine: tr.engine, Rows: tr.rows, DataBytes: tr.bytes,
				Sequence: tr.kind == "SEQUENCE", Versioned: tr.kind == "SYSTEM VERSIONED"}
			if err := readTable(ctx, conn, name, t, columns[tr.name]); err != nil {
				return nil, fmt.Errorf("database %s: %s %s: %w", name, tableKind(t), tr.name, err)
			}
			d.Tables = append(d.Tables, t)
		case "VIEW":
			if skip.Views {
				continue
			}
			v, err := readView(ctx, conn, name, tr.name, columns[tr.name])
			if err != nil {
				return nil, fmt.Errorf("database %s: view %s: %w", name, tr.name, err)
			}
			d.Views = append(d.Views, v)
		}
		// TEMPORARY tables belong to their session; nothing to dump.
	}
	// Sequences first: a table's DEFAULT NEXTVAL(s) needs s.
	slices.SortStableFunc(d.Tables, func(a, b *Table) int {
		switch {
		case a.Sequence == b.Sequence:
			return 0
		case a.Sequence:
			return -1
		}
		return 1
	})

	if !skip.Triggers {
		if d.Triggers, err = readTriggers(ctx, conn, name, f); err != nil {
			return nil, fmt.Errorf("database %s: %w", name, err)
		}
	}
	if !skip.Routines {
		if d.Routines, err = readRoutines(ctx, conn, name); err != nil {
			return nil, fmt.Errorf("database %s: %w", name, err)
		}
	}
	if !skip.Events {
		if d.Events, err = readEvents(ctx, conn, name); err != nil {
			return nil, fmt.Errorf("database %s: %w", name, err)
		}
	}
	return d, nil
}

func tableKind(t *Table) string {
	if t.Sequence {
		return "sequence"
	}
	return "table"
}

// readColumns returns the columns of every table and view of database db,
// by table name, in ordinal order: one query for the database rather than
// one per table.
func readColumns(ctx context.Context, conn *sql.Conn, db string) (map[string][]columnInfo, error) {
	cols := map[string][]columnInfo{}
	err := queryRows(ctx, conn, `SELECT TABLE_NAME, COLUMN_NAME, LOWER(DATA_TYPE), EXTRA, IS_GENERATED,
			IFNULL(GENERATION_EXPRESSION, ''), IS_NULLABLE
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME, ORDINAL_POSITION`, []any{db},
		func(rows *sql.Rows) error {
			var table, extra, generated, expr, nullable string
			var c columnInfo
			if err := rows.Scan(&table, &c.Name, &c.DataType, &extra, &generated, &expr, &nullable); err != nil {
				return err
			}
			// Period columns show as STORED GENERATED with the expression
			// ROW START / ROW END; they are dumped (FOR SYSTEM_TIME ALL),
			// real generated columns are not.
			switch {
			case expr == "ROW START":
				c.RowStart = true
			case expr == "ROW END":
				c.RowEnd = true
			case generated == "ALWAYS":
				c.Generated = true
			}
			c.Invisible = strings.Contains(extra, "INVISIBLE")
			c.nullable = nullable == "YES"
			cols[table] = append(cols[table], c)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("read columns: %w", err)
	}
	return cols, nil
}

func readTable(ctx context.Context, conn *sql.Conn, db string, t *Table, cols []columnInfo) error {
	show := "SHOW CREATE TABLE "
	if t.Sequence {
		show = "SHOW CREATE SEQUENCE "
	}
	row, err := showCreate(ctx, conn, show+mariadb.QuoteIdent(t.Name))
	if err != nil {
		return err
	}
	if t.Create, err = row.get("Create Table"); err != nil {
		return err
	}
	for _, c := range cols {
		t.Columns = append(t.Columns, c.Column)
	}
	if t.Versioned && !slices.ContainsFunc(t.Columns, func(c Column) bool { return c.RowStart }) {
		// WITH SYSTEM VERSIONING without a PERIOD: the server adds
		// invisible row_start and row_end, which information_schema does
		// not list.
		t.Columns = append(t.Columns,
			Column{Name: "row_start", DataType: "timestamp", Invisible: true, RowStart: true},
			Column{Name: "row_end", DataType: "timestamp", Invisible: true, RowEnd: true})
	}
	if t.Sequence {
		return ReadSequenceState(ctx, conn, db, t)
	}
	ct, err := parseCreateTable(t.Create)
	if err != nil {
		return err
	}
	t.Key = chunkKey(ct, cols)
	if len(t.Key) > 0 {
		for _, c := range cols {
			if strings.EqualFold(c.Name, t.Key[0]) {
				t.IntKey = isIntegerType(c.DataType)
			}
		}
	}
	return nil
}

// chunkKey returns the PRIMARY KEY's columns, else those of the first UNIQUE
// key (in the server's key order) whose columns are all NOT NULL and that is
// not USING HASH; nil if none.
func chunkKey(ct *createTable, cols []columnInfo) []string {
	notNull := func(name string) bool {
		for _, c := range cols {
			if strings.EqualFold(c.Name, name) {
				return !c.nullable
			}
		}
		return false
	}
	for _, e := range ct.elems {
		if e.kind == elemPrimary {
			return e.columns
		}
	}
	for _, e := range ct.elems {
		if e.kind == elemUnique && !e.hash && len(e.columns) > 0 && !slices.ContainsFunc(e.columns, func(c string) bool { return !notNull(c) }) {
			return e.columns
		}
	}
	return nil
}

func isIntegerType(dataType string) bool {
	switch dataType {
	case "tinyint", "smallint", "mediumint", "int", "bigint":
		return true
	}
	return false
}

// setValStatement restores a sequence: with is_used 0 the next NEXTVAL
// returns next exactly, and next_not_cached_value and cycle_count read back
// as on the source.
// ReadSequenceState reads sequence t's stored state (next_not_cached_value
// and cycle_count) into it, and SetVal from them. A logical dump reads it
// again while commits are blocked, so that it matches the binary log
// position: every value handed out before that position is below it.
func ReadSequenceState(ctx context.Context, conn *sql.Conn, db string, t *Table) error {
	q := "SELECT next_not_cached_value, cycle_count FROM " + mariadb.QuoteIdent(db) + "." + mariadb.QuoteIdent(t.Name)
	if err := conn.QueryRowContext(ctx, q).Scan(&t.NextValue, &t.CycleCount); err != nil {
		return fmt.Errorf("read state: %w", err)
	}
	t.SetVal = setValStatement(db, t.Name, t.NextValue, t.CycleCount)
	return nil
}

func setValStatement(db, name string, next, cycle int64) string {
	return fmt.Sprintf("SELECT SETVAL(%s.%s, %d, 0, %d)", mariadb.QuoteIdent(db), mariadb.QuoteIdent(name), next, cycle)
}

func readView(ctx context.Context, conn *sql.Conn, db, name string, cols []columnInfo) (*Object, error) {
	row, err := showCreate(ctx, conn, "SHOW CREATE VIEW "+mariadb.QuoteIdent(name))
	if err != nil {
		return nil, err
	}
	o := &Object{Kind: KindView, Database: db, Name: name}
	if err := row.fill(o, "Create View"); err != nil {
		return nil, err
	}
	for _, c := range cols {
		o.Columns = append(o.Columns, c.Name)
	}
	return o, nil
}

// readTriggers returns the triggers of tables the filter selects, in an
// order that recreates their firing order (ACTION_ORDER within a table,
// timing and event).
func readTriggers(ctx context.Context, conn *sql.Conn, db string, f Filter) ([]*Object, error) {
	var objs []*Object
	err := queryRows(ctx, conn, `SELECT TRIGGER_NAME, EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS
		WHERE TRIGGER_SCHEMA = ? ORDER BY EVENT_OBJECT_TABLE, ACTION_TIMING, EVENT_MANIPULATION, ACTION_ORDER`, []any{db},
		func(rows *sql.Rows) error {
			o := &Object{Kind: KindTrigger, Database: db}
			if err := rows.Scan(&o.Name, &o.Table); err != nil {
				return err
			}
			if f.Table(db, o.Table) {
				objs = append(objs, o)
			}
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("list triggers: %w", err)
	}
	for _, o := range objs {
		row, err := showCreate(ctx, conn, "SHOW CREATE TRIGGER "+mariadb.QuoteIdent(o.Name))
		if err != nil {
			return nil, fmt.Errorf("trigger %s: %w", o.Name, err)
		}
		if err := row.fill(o, "SQL Original Statement"); err != nil {
			return nil, fmt.Errorf("trigger %s: %w", o.Name, err)
		}
	}
	return objs, nil
}

// routineOrder is the creation order of routine kinds: a package body needs
// its package; functions and procedures may be created in any order (the
// server resolves the routines a body calls when it runs).
var routineOrder = map[string]int{KindPackage: 0, KindPackageBody: 1, KindFunction: 2, KindProcedure: 3}

// routineColumns name the statement's column of SHOW CREATE per kind.
var routineColumns = map[string]string{
	KindPackage:     "Create Package",
	KindPackageBody: "Create Package Body",
	KindFunction:    "Create Function",
	KindProcedure:   "Create Procedure",
}

func readRoutines(ctx context.Context, conn *sql.Conn, db string) ([]*Object, error) {
	var objs []*Object
	err := queryRows(ctx, conn, `SELECT ROUTINE_NAME, LOWER(ROUTINE_TYPE) FROM information_schema.ROUTINES
		WHERE ROUTINE_SCHEMA = ?`, []any{db},
		func(rows *sql.Rows) error {
			o := &Object{Database: db}
			if err := rows.Scan(&o.Name, &o.Kind); err != nil {
				return err
			}
			if _, ok := routineOrder[o.Kind]; !ok {
				return fmt.Errorf("routine %s: unknown type %q", o.Name, o.Kind)
			}
			objs = append(objs, o)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("list routines: %w", err)
	}
	slices.SortFunc(objs, func(a, b *Object) int {
		return cmp.Or(cmp.Compare(routineOrder[a.Kind], routineOrder[b.Kind]), cmp.Compare(a.Name, b.Name))
	})
	for _, o := range objs {
		row, err := showCreate(ctx, conn, "SHOW CREATE "+strings.ToUpper(o.Kind)+" "+mariadb.QuoteIdent(o.Name))
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", o.Kind, o.Name, err)
		}
		if err := row.fill(o, routineColumns[o.Kind]); err != nil {
			return nil, fmt.Errorf("%s %s: %w", o.Kind, o.Name, err)
		}
	}
	return objs, nil
}

func readEvents(ctx context.Context, conn *sql.Conn, db string) ([]*Object, error) {
	names, err := queryStrings(ctx, conn, "SELECT EVENT_NAME FROM information_schema.EVENTS WHERE EVENT_SCHEMA = ? ORDER BY EVENT_NAME", db)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	var objs []*Object
	for _, name := range names {
		o := &Object{Kind: KindEvent, Database: db, Name: name}
		row, err := showCreate(ctx, conn, "SHOW CREATE EVENT "+mariadb.QuoteIdent(name))
		if err != nil {
			return nil, fmt.Errorf("event %s: %w", name, err)
		}
		if err := row.fill(o, "Create Event"); err != nil {
			return nil, fmt.Errorf("event %s: %w", name, err)
		}
		objs = append(objs, o)
	}
	return objs, nil
}

// readAccounts returns roles, then users, each by name and host, with their
// grants, and the accounts the server ignores. Left out: 'mariadb.sys'@'localhost'
// (the server's own, definer of system views) and the PUBLIC role of 10.11.
func readAccounts(ctx context.Context, conn *sql.Conn) (accounts []*Account, ignored []string, err error) {
	err = queryRows(ctx, conn, `SELECT User, Host, is_role, IFNULL(default_role, '') FROM mysql.user
		ORDER BY is_role = 'Y' DESC, User, Host`, nil,
		func(rows *sql.Rows) error {
			a := &Account{}
			var role string
			if err := rows.Scan(&a.User, &a.Host, &role, &a.DefaultRole); err != nil {
				return err
			}
			a.Role = role == "Y"
			switch {
			case a.User == "mariadb.sys" && a.Host == "localhost" && !a.Role:
			case a.User == "PUBLIC" && a.Host == "" && a.Role:
			default:
				accounts = append(accounts, a)
			}
			return nil
		})
	if err != nil {
		return nil, nil, fmt.Errorf("list accounts: %w", err)
	}
	kept := accounts[:0]
	for _, a := range accounts {
		if !a.Role {
			err := conn.QueryRowContext(ctx, "SHOW CREATE USER "+a.String()).Scan(&a.Create)
			if serverError(err) == errNoMatchingUser {
				ignored = append(ignored, a.String())
				continue
			}
			if err != nil {
				return nil, nil, fmt.Errorf("account %s: %w", a, err)
			}
		}
		grants, err := queryStrings(ctx, conn, "SHOW GRANTS FOR "+a.String())
		if err != nil {
			return nil, nil, fmt.Errorf("account %s: grants: %w", a, err)
		}
		for _, g := range grants {
			if ownGrant(g, a) {
				a.Grants = append(a.Grants, g)
			}
		}
		kept = append(kept, a)
	}
	return kept, ignored, nil
}

// ownGrant reports whether a line of SHOW GRANTS FOR a grants to a itself:
// not SET DEFAULT ROLE (Account.DefaultRole has it), not the grants of
// roles granted to a role (SHOW GRANTS FOR a role lists those too). The
// grantee follows the last TO outside quotes and parentheses.
func ownGrant(line string, a *Account) bool {
	toks := significant(lex(line, lexMode{}))
	if len(toks) == 0 || !toks[0].is(line, "GRANT") {
		return false
	}
	to := -1
	depth := 0
	for i, t := range toks {
		switch {
		case t.punct(line, '('):
			depth++
		case t.punct(line, ')'):
			depth--
		case depth == 0 && t.is(line, "TO"):
			to = i
		}
	}
	if to < 0 || to+1 >= len(toks) {
		return false
	}
	user := toks[to+1]
	if user.kind != tokIdent && user.kind != tokString && user.kind != tokWord {
		return false
	}
	if user.name(line) != a.User {
		return false
	}
	hasHost := to+3 < len(toks) && toks[to+2].punct(line, '@')
	if a.Role {
		return !hasHost
	}
	return hasHost && toks[to+3].name(line) == a.Host
}

// showRow is one row of a SHOW CREATE statement by column name.
type showRow map[string]sql.NullString

// showCreate runs a SHOW statement that returns one row.
func showCreate(ctx context.Context, conn *sql.Conn, q string) (showRow, error) {
	row, err := mariadb.ShowRow(ctx, conn, q)
	if err == nil && row == nil {
		err = fmt.Errorf("%s: no row", q)
	}
	return row, err
}

// get returns a column that must be there and not NULL. SHOW CREATE returns
// NULL for the text of an object the account may not read.
func (r showRow) get(col string) (string, error) {
	v, ok := r[col]
	if !ok {
		return "", fmt.Errorf("SHOW CREATE returned no column %q", col)
	}
	if !v.Valid {
		return "", fmt.Errorf("SHOW CREATE returned NULL for %q: the account may lack the privilege to see the definition", col)
	}
	return v.String, nil
}

// fill sets o.Create from column create, and the creation context from the
// columns the row has.
func (r showRow) fill(o *Object, create string) error {
	var err error
	if o.Create, err = r.get(create); err != nil {
		return err
	}
	o.SQLMode = r["sql_mode"].String
	o.TimeZone = r["time_zone"].String
	o.CharacterSetClient = r["character_set_client"].String
	o.CollationConnection = r["collation_connection"].String
	o.DatabaseCollation = r["Database Collation"].String
	return nil
}

// queryRows runs q and calls fn for each row.
func queryRows(ctx context.Context, conn *sql.Conn, q string, args []any, fn func(*sql.Rows) error) error {
	rows, err := conn.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// queryStrings runs q and returns its first column.
func queryStrings(ctx context.Context, conn *sql.Conn, q string, args ...any) ([]string, error) {
	var out []string
	err := queryRows(ctx, conn, q, args, func(rows *sql.Rows) error {
		var s string
		if err := rows.Scan(&s); err != nil {
			return err
		}
		out = append(out, s)
		return nil
	})
	return out, err
}
