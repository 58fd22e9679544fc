package schema

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func conn(t *testing.T, ctx context.Context, db *sql.DB) *sql.Conn {
	t.Helper()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readSnapshot reads the catalog inside a consistent snapshot, as a dump does.
func readSnapshot(t *testing.T, ctx context.Context, db *sql.DB, f Filter, skip Skip) *Catalog {
	t.Helper()
	c := conn(t, ctx, db)
	if _, err := c.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"); err != nil {
		t.Fatal(err)
	}
	cat, err := Read(ctx, c, nil, f, skip)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	return cat
}

// TestRoundTrip loads the fidelity schema into server A, reads its catalog,
// sends it through JSON, applies it to server B in the documented phases
// and compares every object's SHOW CREATE output, the fidelity accounts'
// grants and the sequences' rows. Then it applies the catalog again (a
// resumed load must be harmless) and once more under other database names.
func TestRoundTrip(t *testing.T) {
	ctx := testContext(t)
	a := sandboxtest.Start(t, sandbox.Options{})
	b := sandboxtest.Start(t, sandbox.Options{})
	if err := sandboxtest.LoadFidelitySchema(ctx, a.DB()); err != nil {
		t.Fatal(err)
	}

	src := readSnapshot(t, ctx, a.DB(), Filter{}, Skip{})
	data, err := json.Marshal(src)
	if err != nil {
		t.Fatal(err)
	}
	cat := &Catalog{}
	if err := json.Unmarshal(data, cat); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(src, cat) {
		t.Fatalf("catalog changed through JSON")
	}
	checkCatalog(t, cat)

	target := conn(t, ctx, b.DB())
	kept := applyCatalog(t, ctx, target, cat, nil)
	var keptNames []string
	for _, k := range kept {
		keptNames = append(keptNames, k.String())
	}
	// B's own root accounts exist already and are left alone; every
	// fidelity account is created.
	for _, k := range kept {
		if k.User != "root" {
			t.Errorf("account %s reported kept; only root accounts exist on a fresh server", k)
		}
	}
	if !slices.Contains(keptNames, "`root`@`localhost`") {
		t.Errorf("kept accounts %v: root@localhost missing", keptNames)
	}

	for _, db := range []string{"fid_a", "fid_b"} {
		compareDatabase(t, ctx, a.DB(), b.DB(), db, db)
	}
	compareAccounts(t, ctx, a.DB(), b.DB())

	// A resumed load runs phases again: nothing may fail or change.
	t.Run("again", func(t *testing.T) {
		kept := applyCatalog(t, ctx, target, cat, nil)
		if len(kept) != len(cat.Users) {
			t.Errorf("second run kept %d accounts of %d: every account exists now", len(kept), len(cat.Users))
		}
		for _, db := range []string{"fid_a", "fid_b"} {
			compareDatabase(t, ctx, a.DB(), b.DB(), db, db)
		}
	})

	t.Run("filter", func(t *testing.T) {
		checkFilter(t, ctx, a.DB())
	})

	// Over several connections (more than there are databases), each in
	// a session of its own settings: the same catalog, and every
	// connection's settings as they were.
	t.Run("connections", func(t *testing.T) {
		var conns []*sql.Conn
		for _, tz := range []string{"+05:00", "-03:00", "+01:00"} {
			c := conn(t, ctx, a.DB())
			if _, err := c.ExecContext(ctx, "SET SESSION sql_mode = 'ANSI_QUOTES,NO_TABLE_OPTIONS', character_set_results = latin1, time_zone = ?", tz); err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		got, err := Read(ctx, conns[0], conns[1:], Filter{}, Skip{})
		if err != nil {
			t.Fatal(err)
		}
		// Rows and DataBytes are the server's estimates, which InnoDB's
		// background statistics update after the load: they differ from
		// one read to the next whatever the connections.
		if estimated := withoutEstimates(got); !reflect.DeepEqual(estimated, withoutEstimates(src)) {
			gotJSON, _ := json.Marshal(estimated)
			srcJSON, _ := json.Marshal(withoutEstimates(src))
			t.Errorf("the catalog read over %d connections differs from the one read over one:\n%s\n%s", len(conns), gotJSON, srcJSON)
		}
		none, err := Read(ctx, conns[0], conns[1:], Filter{Databases: []string{"no_such_db"}}, Skip{Users: true})
		if err != nil || len(none.Databases) != 0 {
			t.Errorf("Read of no database over %d connections: %v, %d databases", len(conns), err, len(none.Databases))
		}
		for i, c := range conns {
			var mode, results, tz string
			if err := c.QueryRowContext(ctx, "SELECT @@SESSION.sql_mode, @@SESSION.character_set_results, @@SESSION.time_zone").Scan(&mode, &results, &tz); err != nil {
				t.Fatal(err)
			}
			if mode != "ANSI_QUOTES,NO_TABLE_OPTIONS" || results != "latin1" || tz != []string{"+05:00", "-03:00", "+01:00"}[i] {
				t.Errorf("connection %d after Read: sql_mode %q, character_set_results %q, time_zone %q; want its own settings back", i, mode, results, tz)
			}
		}
	})

	t.Run("definer", func(t *testing.T) {
		var view *Object
		for _, v := range cat.Databases[0].Views {
			if v.Name == "v_func" {
				view = v
			}
		}
		if view == nil {
			t.Fatal("no view v_func")
		}
		if err := CreateObject(ctx, target, "fid_a", view, nil, "'report'@'10.0.%'"); err != nil {
			t.Fatal(err)
		}
		rows := queryAll(t, ctx, target, "SHOW CREATE VIEW fid_a.v_func")
		if len(rows) != 1 || !strings.Contains(rows[0][1], "DEFINER=`report`@`10.0.%` SQL SECURITY DEFINER VIEW `v_func`") {
			t.Errorf("view after RewriteDefiner: %q", rows)
		}
	})

	t.Run("rename", func(t *testing.T) {
		checkRename(t, ctx, b, cat)
	})
}

// checkFilter reads the source with filters and skips and checks what each
// leaves out.
func checkFilter(t *testing.T, ctx context.Context, db *sql.DB) {
	summary := func(cat *Catalog) map[string][]string {
		m := map[string][]string{}
		for _, d := range cat.Databases {
			m["databases"] = append(m["databases"], d.Name)
			for _, tb := range d.Tables {
				m["tables"] = append(m["tables"], d.Name+"."+tb.Name)
			}
			for _, o := range d.Views {
				m["views"] = append(m["views"], d.Name+"."+o.Name)
			}
			for _, o := range d.Triggers {
				m["triggers"] = append(m["triggers"], d.Name+"."+o.Name)
			}
			for _, o := range d.Routines {
				m["routines"] = append(m["routines"], d.Name+"."+o.Name)
			}
			for _, o := range d.Events {
				m["events"] = append(m["events"], d.Name+"."+o.Name)
			}
		}
		for _, u := range cat.Users {
			m["users"] = append(m["users"], u.String())
		}
		return m
	}

	only := summary(readSnapshot(t, ctx, db, Filter{Tables: []string{"fid_a.parent", "fid_a.s_order", "fid_a.z_base"}}, Skip{Users: true}))
	want := map[string][]string{
		"databases": {"fid_a"},
		"tables":    {"fid_a.s_order", "fid_a.parent"},
		"views":     {"fid_a.z_base"},
		"triggers":  {"fid_a.parent_au", "fid_a.parent_bi2", "fid_a.parent_bi"},
		"routines":  {"fid_a.pkg", "fid_a.pkg", "fid_a.f_add", "fid_a.f_sum", "fid_a.p_coll", "fid_a.p_fill", "fid_a.p_invoker"},
		"events":    {"fid_a.ev_hourly", "fid_a.ev_once"},
	}
	if !reflect.DeepEqual(only, want) {
		t.Errorf("Tables filter:\n got %q\nwant %q", only, want)
	}

	excl := summary(readSnapshot(t, ctx, db, Filter{ExcludeDatabases: []string{"fid_b"}, ExcludeTables: []string{"fid_a.parent", "fid_a.big"}},
		Skip{Views: true, Routines: true, Events: true}))
	if !reflect.DeepEqual(excl["databases"], []string{"fid_a"}) {
		t.Errorf("ExcludeDatabases: databases %q", excl["databases"])
	}
	for _, gone := range []string{"fid_a.parent", "fid_a.big"} {
		if slices.Contains(excl["tables"], gone) {
			t.Errorf("ExcludeTables: %s still there", gone)
		}
	}
	if !slices.Contains(excl["tables"], "fid_a.child") {
		t.Errorf("ExcludeTables: fid_a.child missing from %q", excl["tables"])
	}
	if !reflect.DeepEqual(excl["triggers"], []string{"fid_a.child_bd"}) {
		t.Errorf("triggers %q: only child's stay when parent is excluded", excl["triggers"])
	}
	for _, k := range []string{"views", "routines", "events"} {
		if len(excl[k]) > 0 {
			t.Errorf("skipped %s still read: %q", k, excl[k])
		}
	}
	if len(excl["users"]) == 0 {
		t.Error("users not read")
	}
	none := summary(readSnapshot(t, ctx, db, Filter{Databases: []string{"fid_b"}}, Skip{Triggers: true, Users: true}))
	if len(none["triggers"]) > 0 || len(none["users"]) > 0 || !reflect.DeepEqual(none["databases"], []string{"fid_b"}) {
		t.Errorf("Databases fid_b, no triggers, no users: %q", none)
	}
}

// checkCatalog checks what Read must have found, beyond SHOW CREATE texts.
func checkCatalog(t *testing.T, cat *Catalog) {
	t.Helper()
	if cat.SQLMode == "" {
		t.Error("SQLMode empty: the server's default sql_mode is not empty")
	}
	var names []string
	dbs := map[string]*Database{}
	for _, d := range cat.Databases {
		names = append(names, d.Name)
		dbs[d.Name] = d
	}
	if !reflect.DeepEqual(names, []string{"fid_a", "fid_b"}) {
		t.Fatalf("databases %v, want fid_a fid_b (system databases left out)", names)
	}
	fa := dbs["fid_a"]
	tables := map[string]*Table{}
	seenTable := false
	for _, tb := range fa.Tables {
		tables[tb.Name] = tb
		if tb.Sequence && seenTable {
			t.Errorf("sequence %s after a table: sequences must come first", tb.Name)
		}
		seenTable = seenTable || !tb.Sequence
	}
	key := func(name string, want []string, intKey bool) {
		t.Helper()
		tb := tables[name]
		if tb == nil {
			t.Errorf("table %s missing", name)
			return
		}
		if !reflect.DeepEqual(tb.Key, want) || tb.IntKey != intKey {
			t.Errorf("table %s: Key %q IntKey %v, want %q %v", name, tb.Key, tb.IntKey, want, intKey)
		}
	}
	key("parent", []string{"id"}, true)
	key("child", []string{"parent_id", "seq"}, true)
	key("uniq_only", []string{"code"}, false)
	key("uniq_null", nil, false)
	key("no_key", nil, false)
	key("blob_uniq", []string{"id"}, true)
	key("seq_user", []string{"id"}, true)
	key("hist", []string{"id"}, true)
	key("hist_explicit", []string{"id", "ve"}, true)
	key("we.ird/`name é", []string{"col `x"}, true)
	key("big", []string{"id"}, true)

	col := func(table, name string) Column {
		t.Helper()
		for _, c := range tables[table].Columns {
			if c.Name == name {
				return c
			}
		}
		t.Errorf("table %s: no column %s", table, name)
		return Column{}
	}
	if c := col("gen", "b"); !c.Generated || c.Invisible {
		t.Errorf("gen.b %+v: want Generated", c)
	}
	if c := col("gen", "c"); !c.Generated {
		t.Errorf("gen.c %+v: want Generated", c)
	}
	if c := col("gen", "hidden"); c.Generated || !c.Invisible {
		t.Errorf("gen.hidden %+v: want Invisible", c)
	}
	if c := col("hist", "row_start"); !c.RowStart || !c.Invisible || c.Generated || c.DataType != "timestamp" {
		t.Errorf("hist.row_start %+v: want implicit RowStart", c)
	}
	if c := col("hist", "row_end"); !c.RowEnd || !c.Invisible || c.Generated {
		t.Errorf("hist.row_end %+v: want implicit RowEnd", c)
	}
	if n := len(tables["hist"].Columns); n != 4 {
		t.Errorf("hist has %d columns, want id, v, row_start, row_end", n)
	}
	if c := col("hist_explicit", "vs"); !c.RowStart || c.Generated || !c.Invisible {
		t.Errorf("hist_explicit.vs %+v: want RowStart, invisible", c)
	}
	if c := col("hist_explicit", "ve"); !c.RowEnd || c.Generated {
		t.Errorf("hist_explicit.ve %+v: want RowEnd", c)
	}
	if !tables["hist"].Versioned || tables["parent"].Versioned {
		t.Error("Versioned wrong for hist or parent")
	}
	for name, typ := range map[string]string{"j": "longtext", "bit13": "bit", "g": "geometry", "pt": "point", "uid": "uuid", "ip": "inet6", "b": "blob", "bin": "binary"} {
		if c := col("types", name); c.DataType != typ {
			t.Errorf("types.%s: DataType %q, want %q", name, c.DataType, typ)
		}
	}
	if tb := tables["big"]; tb.Rows < sandboxtest.FidelityBigRows/2 || tb.DataBytes <= 0 {
		t.Errorf("big: Rows %d DataBytes %d: estimates missing", tb.Rows, tb.DataBytes)
	}
	so := tables["s_order"]
	if so == nil || !so.Sequence || so.NextValue == 0 || !strings.HasPrefix(so.SetVal, "SELECT SETVAL(`fid_a`.`s_order`, ") {
		t.Errorf("sequence s_order: %+v", so)
	}
	if sc := tables["s_cycle"]; sc == nil || sc.CycleCount != 1 {
		t.Errorf("sequence s_cycle: %+v, want cycle_count 1", sc)
	}

	// Routines: package before its body, then functions, then procedures.
	var routines []string
	for _, o := range fa.Routines {
		routines = append(routines, o.Kind+" "+o.Name)
	}
	want := []string{"package pkg", "package body pkg", "function f_add", "function f_sum", "procedure p_coll", "procedure p_fill", "procedure p_invoker"}
	if !reflect.DeepEqual(routines, want) {
		t.Errorf("routines %q, want %q", routines, want)
	}
	// Triggers in firing order: parent_bi2 PRECEDES parent_bi.
	var triggers []string
	for _, o := range fa.Triggers {
		triggers = append(triggers, o.Name)
	}
	if i, j := slices.Index(triggers, "parent_bi2"), slices.Index(triggers, "parent_bi"); i < 0 || j < 0 || i > j {
		t.Errorf("triggers %q: parent_bi2 must come before parent_bi", triggers)
	}
	// Views: a view after the views it reads, across databases too.
	var order []string
	for _, v := range cat.OrderedViews() {
		order = append(order, v.Database.Name+"."+v.Object.Name)
	}
	before := func(x, y string) {
		t.Helper()
		if i, j := slices.Index(order, x), slices.Index(order, y); i < 0 || j < 0 || i > j {
			t.Errorf("views %q: %s must come before %s", order, x, y)
		}
	}
	before("fid_a.z_base", "fid_a.a_over")
	before("fid_b.v_cross", "fid_a.v_over_b")
	for _, v := range fa.Views {
		if v.Name == "a_over" && !reflect.DeepEqual(v.Columns, []string{"id", "name"}) {
			t.Errorf("view a_over columns %q", v.Columns)
		}
	}
	for _, e := range fa.Events {
		if e.Name == "ev_once" && e.TimeZone != "+02:00" {
			t.Errorf("event ev_once time zone %q, want +02:00", e.TimeZone)
		}
	}

	accounts := map[string]*Account{}
	for i, acc := range cat.Users {
		accounts[acc.String()] = acc
		if i > 0 && acc.Role && !cat.Users[i-1].Role {
			t.Errorf("role %s after a user: roles come first", acc)
		}
		for _, g := range acc.Grants {
			if strings.HasPrefix(g, "SET DEFAULT ROLE") {
				t.Errorf("account %s: grant %q", acc, g)
			}
		}
	}
	for _, skipped := range []string{"`mariadb.sys`@`localhost`", "`PUBLIC`"} {
		if accounts[skipped] != nil {
			t.Errorf("account %s must be left out", skipped)
		}
	}
	if app := accounts["`app`@`%`"]; app == nil || app.DefaultRole != "r_write" || !strings.Contains(app.Create, fidelityHashPrefix) {
		t.Errorf("account app: %+v", app)
	}
	if w := accounts["`r_write`"]; w == nil || !w.Role || w.Create != "" || len(w.Grants) != 3 {
		// GRANT `r_read` TO `r_write`, USAGE, INSERT/UPDATE; not r_read's.
		t.Errorf("role r_write: %+v, want its 3 own grants", w)
	}
}

// fidelityHashPrefix starts the password hash of 'app'@'%' in the fidelity
// schema: SHOW CREATE USER carries the hash.
const fidelityHashPrefix = "IDENTIFIED BY PASSWORD '*D92FF33B"

// applyCatalog applies the catalog to target in the documented phases and
// returns the accounts kept.
func applyCatalog(t *testing.T, ctx context.Context, target *sql.Conn, cat *Catalog, rename map[string]string) []*Account {
	t.Helper()
	name := func(db string) string {
		if n, ok := rename[db]; ok {
			return n
		}
		return db
	}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	for _, d := range cat.Databases {
		must("database", CreateDatabase(ctx, target, d, name(d.Name)))
	}
	type alter struct {
		db      string
		t       *Table
		indexes string
		fks     string
	}
	var alters []alter
	// Every other table is created with its indexes, as a load creates a
	// small one: both ways must restore the same SHOW CREATE TABLE.
	withIndexes := false
	for _, d := range cat.Databases {
		for _, tb := range d.Tables {
			stmt := tb.Create
			var al alter
			if !tb.Sequence {
				base, idx, fks, err := SplitCreateTable(tb.Create)
				must("split "+tb.Name, err)
				if withIndexes {
					base, fks, err = SplitForeignKeys(tb.Create)
					must("split "+tb.Name, err)
					idx = ""
				}
				withIndexes = !withIndexes
				stmt = base
				al = alter{name(d.Name), tb, RenameDatabases(idx, rename), RenameDatabases(fks, rename)}
				alters = append(alters, al)
			}
			err := CreateTable(ctx, target, name(d.Name), tb, RenameDatabases(stmt, rename))
			if errors.Is(err, ErrExists) {
				continue // a resumed load
			}
			must("create table", err)
		}
	}
	for _, d := range cat.Databases {
		for _, tb := range d.Tables {
			if tb.Sequence {
				must("sequence", RestoreSequence(ctx, target, name(d.Name), tb))
			}
		}
	}
	for _, al := range alters {
		must("indexes", AlterTable(ctx, target, al.db, al.t, al.indexes))
	}
	for _, al := range alters {
		must("foreign keys", AlterTable(ctx, target, al.db, al.t, al.fks))
	}
	for _, d := range cat.Databases {
		for _, o := range d.Routines {
			must("routine", CreateObject(ctx, target, name(d.Name), o, rename, ""))
		}
	}
	for _, d := range cat.Databases {
		for _, o := range d.Views {
			must("placeholder", CreateViewPlaceholder(ctx, target, name(d.Name), o))
		}
	}
	for _, v := range cat.OrderedViews() {
		must("view", CreateObject(ctx, target, name(v.Database.Name), v.Object, rename, ""))
	}
	for _, d := range cat.Databases {
		for _, o := range d.Triggers {
			must("trigger", CreateObject(ctx, target, name(d.Name), o, rename, ""))
		}
		for _, o := range d.Events {
			must("event", CreateObject(ctx, target, name(d.Name), o, rename, ""))
		}
	}
	if rename != nil {
		return nil
	}
	res, err := ApplyAccounts(ctx, target, cat.Users, AccountOptions{Rename: rename})
	must("accounts", err)
	return res.Kept
}

// compareDatabase compares database srcDB of server a with dstDB of server b
// object by object. The objects are listed from information_schema of both
// servers, not from the catalog, so that an object Read missed is caught.
func compareDatabase(t *testing.T, ctx context.Context, a, b *sql.DB, srcDB, dstDB string) {
	t.Helper()
	ca, cb := conn(t, ctx, a), conn(t, ctx, b)
	for _, c := range []struct {
		conn *sql.Conn
		db   string
	}{{ca, srcDB}, {cb, dstDB}} {
		if _, err := c.conn.ExecContext(ctx, "USE "+mariadb.QuoteIdent(c.db)); err != nil {
			t.Fatal(err)
		}
	}
	compareRows(t, ctx, ca, cb, "SHOW CREATE DATABASE "+mariadb.QuoteIdent(srcDB), "SHOW CREATE DATABASE "+mariadb.QuoteIdent(dstDB), nil)
	lists := []struct{ what, query string }{
		{"tables", "SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME"},
		{"triggers", "SELECT TRIGGER_NAME, EVENT_OBJECT_TABLE, ACTION_TIMING, EVENT_MANIPULATION, ACTION_ORDER FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? ORDER BY 1"},
		{"routines", "SELECT ROUTINE_NAME, ROUTINE_TYPE FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = ? ORDER BY 1, 2"},
		{"events", "SELECT EVENT_NAME, STATUS FROM information_schema.EVENTS WHERE EVENT_SCHEMA = ? ORDER BY 1"},
	}
	for _, l := range lists {
		ra := queryAll(t, ctx, ca, l.query, srcDB)
		rb := queryAll(t, ctx, cb, l.query, dstDB)
		if !reflect.DeepEqual(ra, rb) {
			t.Errorf("%s %s: source %q, target %q", srcDB, l.what, ra, rb)
			continue
		}
		for _, r := range ra {
			var show []string
			switch l.what {
			case "tables":
				kind := map[string]string{"VIEW": "VIEW", "SEQUENCE": "SEQUENCE"}[r[1]]
				if kind == "" {
					kind = "TABLE"
				}
				s := "SHOW CREATE " + kind + " " + mariadb.QuoteIdent(r[0])
				show = []string{s, s}
				if kind == "SEQUENCE" {
					s := "SELECT * FROM " + mariadb.QuoteIdent(r[0])
					compareRows(t, ctx, ca, cb, s, s, nil)
				}
			case "triggers":
				s := "SHOW CREATE TRIGGER " + mariadb.QuoteIdent(r[0])
				show = []string{s, s}
			case "routines":
				s := "SHOW CREATE " + r[1] + " " + mariadb.QuoteIdent(r[0])
				show = []string{s, s}
			case "events":
				s := "SHOW CREATE EVENT " + mariadb.QuoteIdent(r[0])
				show = []string{s, s}
			}
			// The trigger's creation time differs, necessarily.
			compareRows(t, ctx, ca, cb, show[0], show[1], []string{"Created"})
		}
	}
}

// compareRows runs qa on ca and qb on cb and reports differences, except in
// the columns named in ignore.
func compareRows(t *testing.T, ctx context.Context, ca, cb *sql.Conn, qa, qb string, ignore []string) {
	t.Helper()
	ra, colsA := queryAllCols(t, ctx, ca, qa)
	rb, colsB := queryAllCols(t, ctx, cb, qb)
	for _, rows := range [][][]string{ra, rb} {
		for _, row := range rows {
			for i, c := range colsA {
				if slices.Contains(ignore, c) && i < len(row) {
					row[i] = ""
				}
			}
		}
	}
	if !reflect.DeepEqual(colsA, colsB) || !reflect.DeepEqual(ra, rb) {
		t.Errorf("%s differs:\nsource %q\ntarget %q", qa, ra, rb)
	}
}

func compareAccounts(t *testing.T, ctx context.Context, a, b *sql.DB) {
	t.Helper()
	ca, cb := conn(t, ctx, a), conn(t, ctx, b)
	// SHOW GRANTS lists a grant's columns in the order of an in-memory
	// hash, which depends on the order the columns were granted in; loading
	// the grant tables afresh inserts them in key order on both servers.
	for _, c := range []*sql.Conn{ca, cb} {
		if _, err := c.ExecContext(ctx, "FLUSH PRIVILEGES"); err != nil {
			t.Fatal(err)
		}
	}
	for _, acc := range sandboxtest.FidelityUsers() {
		compareRows(t, ctx, ca, cb, "SHOW GRANTS FOR "+acc, "SHOW GRANTS FOR "+acc, nil)
		if strings.Contains(acc, "@") {
			compareRows(t, ctx, ca, cb, "SHOW CREATE USER "+acc, "SHOW CREATE USER "+acc, nil)
		}
	}
	q := "SELECT User, Host, is_role, default_role FROM mysql.user WHERE User IN ('app', 'report', 'r_read', 'r_write', 'odd`user@x') ORDER BY 1, 2"
	compareRows(t, ctx, ca, cb, q, q, nil)
}

func queryAll(t *testing.T, ctx context.Context, c *sql.Conn, q string, args ...any) [][]string {
	t.Helper()
	rows, _ := queryAllCols(t, ctx, c, q, args...)
	return rows
}

func queryAllCols(t *testing.T, ctx context.Context, c *sql.Conn, q string, args ...any) ([][]string, []string) {
	t.Helper()
	rows, err := c.QueryContext(ctx, q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		dest := make([]any, len(cols))
		for i := range vals {
			dest[i] = &vals[i]
		}
		if err := rows.Scan(dest...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = v.String
			if !v.Valid {
				row[i] = "NULL"
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out, cols
}

// checkRename applies the catalog to b again as fid_x and fid_y and checks
// that every reference between the databases follows the rename and nothing
// lands in fid_a or fid_b.
func checkRename(t *testing.T, ctx context.Context, b *sandbox.Server, cat *Catalog) {
	c := conn(t, ctx, b.DB())
	// Objects per kind and database: a qualified name in a statement would
	// put an object into fid_a or fid_b instead of fid_x or fid_y.
	count := func() [][]string {
		return queryAll(t, ctx, c, `SELECT 'trigger', TRIGGER_SCHEMA, COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA LIKE 'fid%' GROUP BY 2
			UNION ALL SELECT 'routine', ROUTINE_SCHEMA, COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA LIKE 'fid%' GROUP BY 2
			UNION ALL SELECT 'event', EVENT_SCHEMA, COUNT(*) FROM information_schema.EVENTS WHERE EVENT_SCHEMA LIKE 'fid%' GROUP BY 2
			UNION ALL SELECT 'table', TABLE_SCHEMA, COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA LIKE 'fid%' GROUP BY 2
			ORDER BY 1, 2`)
	}
	before := count()
	rename := map[string]string{"fid_a": "fid_x", "fid_b": "fid_y"}
	applyCatalog(t, ctx, c, cat, rename)

	// fid_x and fid_y gain the objects of fid_a and fid_b; those keep theirs.
	var want [][]string
	for _, r := range before {
		want = append(want, r)
		want = append(want, []string{r[0], map[string]string{"fid_a": "fid_x", "fid_b": "fid_y"}[r[1]], r[2]})
	}
	slices.SortFunc(want, func(x, y []string) int { return strings.Compare(x[0]+"\x00"+x[1], y[0]+"\x00"+y[1]) })
	if after := count(); !reflect.DeepEqual(after, want) {
		t.Errorf("objects per database %q, want %q", after, want)
	}

	show := func(q string, col int) string {
		rows := queryAll(t, ctx, c, q)
		if len(rows) != 1 {
			t.Fatalf("%s: %d rows", q, len(rows))
		}
		return rows[0][col]
	}
	for _, tc := range []struct{ q, want, not string }{
		{"SHOW CREATE VIEW fid_x.v_over_b", "`fid_y`.`v_cross`", "fid_b"},
		{"SHOW CREATE VIEW fid_y.v_cross", "`fid_x`.`parent`", "fid_a"},
		{"SHOW CREATE TABLE fid_y.child_b", "REFERENCES `fid_x`.`parent`", "fid_a"},
		{"SHOW CREATE TABLE fid_x.seq_user", "nextval(`fid_x`.`s_order`)", "fid_a"},
	} {
		got := show(tc.q, 1)
		if !strings.Contains(got, tc.want) || strings.Contains(got, tc.not) {
			t.Errorf("%s:\n%s\nwant %s and no %s", tc.q, got, tc.want, tc.not)
		}
	}
	// The triggers whose text qualified their database moved with it.
	for _, q := range []string{"SHOW CREATE TRIGGER fid_x.parent_au", "SHOW CREATE TRIGGER fid_y.latin_bi"} {
		if got := show(q, 2); strings.Contains(got, "fid_a.") || strings.Contains(got, "fid_b.") {
			t.Errorf("%s: %s still names the source database", q, got)
		}
	}
	// The views work: their tables and functions resolve in the new names.
	for _, q := range []string{"SELECT COUNT(*) FROM fid_x.v_over_b", "SELECT COUNT(*) FROM fid_x.v_func", "SELECT COUNT(*) FROM fid_x.a_over"} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
	if got := show("SELECT next_not_cached_value FROM fid_x.s_order", 0); got != fmt.Sprint(tablesByName(cat, "fid_a")["s_order"].NextValue) {
		t.Errorf("fid_x.s_order next_not_cached_value %s", got)
	}
}

func tablesByName(cat *Catalog, db string) map[string]*Table {
	m := map[string]*Table{}
	for _, d := range cat.Databases {
		if d.Name == db {
			for _, tb := range d.Tables {
				m[tb.Name] = tb
			}
		}
	}
	return m
}

// withoutEstimates is a copy of c with the estimates of information_schema
// (Table.Rows, Table.DataBytes) left out.
func withoutEstimates(c *Catalog) *Catalog {
	data, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	out := &Catalog{}
	if err := json.Unmarshal(data, out); err != nil {
		panic(err)
	}
	for _, d := range out.Databases {
		for _, t := range d.Tables {
			t.Rows, t.DataBytes = 0, 0
		}
	}
	return out
}
