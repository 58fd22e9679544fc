package physical

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/repo/repotest"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// The table guard against a real server. A full and an incremental
// record every table with its files, in the server's file name encoding:
// partitions, an Aria table, a view, sequences, a table with DATA
// DIRECTORY outside the datadir, one in the system tablespace, a name
// needing @-encoding. A backup whose stream lacks a table's tablespace
// (mariabackup's stream reaches the archive writer without it, as when it
// takes a live table for dropped) is refused naming the table, and
// nothing is committed. On the host's MariaDB and the other versions
// CI runs.
func TestBackupHoldsEveryTable(t *testing.T) {
	t.Run("host", func(t *testing.T) { testBackupHoldsEveryTable(t, sandbox.Options{}, "") })
	for _, v := range sandboxtest.Versions {
		t.Run(v, func(t *testing.T) {
			base := sandboxtest.Basedir(t, v)
			testBackupHoldsEveryTable(t, sandbox.Options{Basedir: base}, filepath.Join(base, "bin", "mariabackup"))
		})
	}
}

func testBackupHoldsEveryTable(t *testing.T, opt sandbox.Options, mariabackup string) {
	ctx := context.Background()
	remote := t.TempDir()
	srv := sandboxtest.Start(t, opt)
	db := srv.DB()
	for _, q := range []string{
		"CREATE DATABASE `we ird-db`",
		"CREATE TABLE `we ird-db`.`a b-ç` (id INT PRIMARY KEY) ENGINE=InnoDB",
		"INSERT INTO `we ird-db`.`a b-ç` VALUES (1), (2)",
		"CREATE TABLE `we ird-db`.ar (id INT PRIMARY KEY) ENGINE=Aria",
		"CREATE TABLE `we ird-db`.parts (id INT PRIMARY KEY) ENGINE=InnoDB PARTITION BY RANGE (id) SUBPARTITION BY HASH (id) SUBPARTITIONS 2 (PARTITION p0 VALUES LESS THAN (10), PARTITION `p 1` VALUES LESS THAN MAXVALUE)",
		"CREATE TABLE `we ird-db`.far (id INT PRIMARY KEY) ENGINE=InnoDB DATA DIRECTORY='" + remote + "'",
		"CREATE VIEW `we ird-db`.v AS SELECT 1 AS one",
		"CREATE SEQUENCE `we ird-db`.s",
		"CREATE SEQUENCE `we ird-db`.sa ENGINE=Aria",
		"SET GLOBAL innodb_file_per_table = 0",
		"CREATE TABLE `we ird-db`.sys (id INT PRIMARY KEY) ENGINE=InnoDB",
		"CREATE TABLE `we ird-db`.sysparts (id INT PRIMARY KEY) ENGINE=InnoDB PARTITION BY HASH (id) PARTITIONS 2",
		"SET GLOBAL innodb_file_per_table = 1",
		"CREATE DATABASE `dotted.db`",
		"CREATE TABLE `dotted.db`.`a.parts` (id INT PRIMARY KEY) ENGINE=Aria PARTITION BY HASH (id) PARTITIONS 2",
		"CREATE TABLE `we ird-db`.`aria parts` (id INT PRIMARY KEY) ENGINE=Aria PARTITION BY RANGE (id) SUBPARTITION BY HASH (id) SUBPARTITIONS 2 (PARTITION p0 VALUES LESS THAN (10), PARTITION `p 1` VALUES LESS THAN MAXVALUE)",
		"CREATE TABLE `we ird-db`.ft (id INT PRIMARY KEY, s TEXT, FULLTEXT (s)) ENGINE=InnoDB",
		// The privileges a backup needs, and no more: information_schema
		// shows this account no table.
		"CREATE USER bk@localhost",
		"GRANT RELOAD, PROCESS, LOCK TABLES, BINLOG MONITOR ON *.* TO bk@localhost",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// Temporary tables, open in a session through every backup, are no
	// table of the server's: never listed, never required.
	session, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	for _, q := range []string{
		"CREATE TEMPORARY TABLE `we ird-db`.tmp_innodb (id INT) ENGINE=InnoDB",
		"CREATE TEMPORARY TABLE `we ird-db`.tmp_aria (id INT) ENGINE=Aria",
	} {
		if _, err := session.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// The catalog opens none of the server's InnoDB tables: reading
	// information_schema.PARTITIONS of every table opened each (52 s a
	// read at 100,000 tables). Of 100 more InnoDB tables, a tenth
	// partitioned, it opens none; only the tables of other engines,
	// whose partitions it asks information_schema for.
	if _, err := db.ExecContext(ctx, "CREATE DATABASE many"); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		q := fmt.Sprintf("CREATE TABLE many.t%d (id INT PRIMARY KEY) ENGINE=InnoDB", i)
		if i%10 == 0 {
			q += " PARTITION BY HASH (id) PARTITIONS 3"
		}
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	opened := func() int {
		t.Helper()
		var name string
		var n int
		if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Opened_tables'").Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := db.ExecContext(ctx, "FLUSH TABLES"); err != nil {
		t.Fatal(err)
	}
	before := opened()
	catalog, err := readCatalog(ctx, mariadb.Config{Socket: srv.Socket, User: "root"})
	if err != nil {
		t.Fatal(err)
	}
	others := 0
	for _, tb := range catalog {
		if tb.Type != "view" && !strings.EqualFold(tb.Engine, "InnoDB") {
			others++
		}
	}
	if n := opened() - before; n > others {
		t.Errorf("reading the catalog opened %d tables; the server has %d tables of engines other than InnoDB", n, others)
	}
	if got, want := catalog["many/t10"].Files, []string{"many/t10#P#p0.ibd", "many/t10#P#p1.ibd", "many/t10#P#p2.ibd", "many/t10.frm"}; !slices.Equal(sorted(got), want) {
		t.Errorf("many.t10 is listed with %v, want %v", got, want)
	}

	c, err := codec.Parse("zstd")
	if err != nil {
		t.Fatal(err)
	}
	r := repotest.New(t)
	job := BackupJob{Dest: r, Conn: mariadb.Config{Socket: srv.Socket, User: "root"}, Mariabackup: mariabackup, Parallel: 2, Codec: c}
	const d = "we@0020ird@002ddb/"
	want := map[string]archive.Table{
		"we ird-db.a b-ç": {Name: "we ird-db.a b-ç", Engine: "InnoDB", Files: []string{d + "a@0020b@002d@0n.frm", d + "a@0020b@002d@0n.ibd"}},
		"we ird-db.ar":    {Name: "we ird-db.ar", Engine: "Aria", Files: []string{d + "ar.frm", d + "ar.MAD", d + "ar.MAI"}},
		"we ird-db.far":   {Name: "we ird-db.far", Engine: "InnoDB", Files: []string{d + "far.frm", d + "far.ibd"}},
		"we ird-db.parts": {Name: "we ird-db.parts", Engine: "InnoDB", Files: []string{d + "parts.frm",
			d + "parts#P#p0#SP#p0sp0.ibd", d + "parts#P#p0#SP#p0sp1.ibd", d + "parts#P#p@00201#SP#p@00201sp0.ibd", d + "parts#P#p@00201#SP#p@00201sp1.ibd"}},
		"we ird-db.aria parts": {Name: "we ird-db.aria parts", Engine: "Aria", Files: []string{d + "aria@0020parts.frm",
			d + "aria@0020parts#P#p0#SP#p0sp0.MAD", d + "aria@0020parts#P#p0#SP#p0sp0.MAI", d + "aria@0020parts#P#p0#SP#p0sp1.MAD", d + "aria@0020parts#P#p0#SP#p0sp1.MAI",
			d + "aria@0020parts#P#p@00201#SP#p@00201sp0.MAD", d + "aria@0020parts#P#p@00201#SP#p@00201sp0.MAI", d + "aria@0020parts#P#p@00201#SP#p@00201sp1.MAD", d + "aria@0020parts#P#p@00201#SP#p@00201sp1.MAI"}},
		"dotted.db.a.parts": {Name: "dotted.db.a.parts", Engine: "Aria", Files: []string{"dotted@002edb/a@002eparts.frm",
			"dotted@002edb/a@002eparts#P#p0.MAD", "dotted@002edb/a@002eparts#P#p0.MAI", "dotted@002edb/a@002eparts#P#p1.MAD", "dotted@002edb/a@002eparts#P#p1.MAI"}},
		"we ird-db.sysparts":   {Name: "we ird-db.sysparts", Engine: "InnoDB", Files: []string{d + "sysparts.frm"}},
		"we ird-db.v":          {Name: "we ird-db.v", Type: "view", Files: []string{d + "v.frm"}},
		"we ird-db.s":          {Name: "we ird-db.s", Type: "sequence", Engine: "InnoDB", Files: []string{d + "s.frm", d + "s.ibd"}},
		"we ird-db.sa":         {Name: "we ird-db.sa", Type: "sequence", Engine: "Aria", Files: []string{d + "sa.frm", d + "sa.MAD", d + "sa.MAI"}},
		"we ird-db.sys":        {Name: "we ird-db.sys", Engine: "InnoDB", Files: []string{d + "sys.frm"}},
		"mysql.user":           {Name: "mysql.user", Type: "view", Files: []string{"mysql/user.frm"}},
		"mysql.global_priv":    {Name: "mysql.global_priv", Engine: "Aria", Files: []string{"mysql/global_priv.frm", "mysql/global_priv.MAD", "mysql/global_priv.MAI"}},
		"mysql.general_log":    {Name: "mysql.general_log", Engine: "CSV", Files: []string{"mysql/general_log.frm", "mysql/general_log.CSV"}},
		"mysql.gtid_slave_pos": {Name: "mysql.gtid_slave_pos", Engine: "InnoDB", Files: []string{"mysql/gtid_slave_pos.frm", "mysql/gtid_slave_pos.ibd"}},
	}
	check := func(what string, m *archive.Manifest) {
		t.Helper()
		got := map[string]archive.Table{}
		for _, tb := range m.Tables {
			got[tb.Name] = tb
			if strings.HasPrefix(tb.Name, "performance_schema.") || strings.HasPrefix(tb.Name, "information_schema.") || strings.Contains(tb.Name, "tmp_") || strings.Contains(tb.Name, "#sql") {
				t.Errorf("%s lists %s", what, tb.Name)
			}
		}
		for name, w := range want {
			g := got[name]
			slices.Sort(g.Files)
			slices.Sort(w.Files)
			if g.Name != w.Name || g.Type != w.Type || g.Engine != w.Engine || !slices.Equal(g.Files, w.Files) {
				t.Errorf("%s: table %s is listed as %+v, want %+v", what, name, g, w)
			}
		}
		if missing := MissingTableFiles(m.Tables, m.Files); len(missing) > 0 {
			t.Errorf("%s lacks files of its tables: %v", what, missing)
		}
	}
	full, err := RunBackup(ctx, job)
	if err != nil {
		t.Fatalf("full backup: %v", err)
	}
	check("the full backup", full)
	if _, err := db.ExecContext(ctx, "INSERT INTO `we ird-db`.`a b-ç` VALUES (3)"); err != nil {
		t.Fatal(err)
	}
	incJob := job
	incJob.Parent = func(context.Context, *mariadb.Server) (*archive.Manifest, error) { return full, nil }
	inc, err := RunBackup(ctx, incJob)
	if err != nil {
		t.Fatalf("incremental backup: %v", err)
	}
	check("the incremental", inc)

	// The account that sees no table in information_schema still has
	// every InnoDB table listed, by its tablespaces.
	bkJob := job
	bkJob.Conn.User = "bk"
	bk, err := RunBackup(ctx, bkJob)
	if err != nil {
		t.Fatalf("backup as the least privileged account: %v", err)
	}
	got := map[string][]string{}
	for _, tb := range bk.Tables {
		got[tb.Name] = tb.Files
	}
	for name, files := range map[string][]string{
		"we ird-db.a b-ç":      {d + "a@0020b@002d@0n.ibd"},
		"we ird-db.parts":      {d + "parts#P#p0#SP#p0sp0.ibd", d + "parts#P#p0#SP#p0sp1.ibd", d + "parts#P#p@00201#SP#p@00201sp0.ibd", d + "parts#P#p@00201#SP#p@00201sp1.ibd"},
		"mysql.gtid_slave_pos": {"mysql/gtid_slave_pos.ibd"},
	} {
		if !slices.Equal(got[name], files) {
			t.Errorf("the least privileged account's backup lists %s with %v, want %v", name, got[name], files)
		}
	}
	if _, ok := got["we ird-db.sys"]; ok {
		t.Errorf("the least privileged account's backup lists we ird-db.sys (in the system tablespace): %v", got["we ird-db.sys"])
	}
	fts := 0
	for name := range got {
		if strings.HasPrefix(name, "we ird-db.FTS_") {
			fts++
		}
	}
	if fts == 0 {
		t.Errorf("the least privileged account's backup lists no table of the full-text index: %v", bk.Tables)
	}

	// The table's tablespace, under whichever name mariabackup streams it
	// (.ibd, .new, .ibd.delta), never reaches the archive writer.
	hiddenFromStream = func(p string) bool {
		return strings.HasPrefix(p, d+"a@0020b@002d@0n.") && !strings.HasSuffix(p, ".frm")
	}
	t.Cleanup(func() { hiddenFromStream = nil })
	for _, tc := range []struct {
		name string
		job  BackupJob
	}{{"full", job}, {"incremental", incJob}, {"least privileged", bkJob}} {
		m, err := RunBackup(ctx, tc.job)
		var missing *MissingTablesError
		if !errors.As(err, &missing) || !strings.Contains(err.Error(), "we ird-db.a b-ç ("+d+"a@0020b@002d@0n.ibd)") || !strings.Contains(err.Error(), "nothing was committed") {
			t.Fatalf("%s backup without a table's tablespace: %v, %v; want it refused naming `we ird-db`.`a b-ç`", tc.name, m, err)
		}
	}
	ms, err := r.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 {
		t.Fatalf("the repository holds %d backups, want the three that held every table", len(ms))
	}
}

// The guard's comparison, for every case it tells apart: what the
// catalog listed before and after the copy, what DDL touched, what the
// stream holds and what mariabackup said it ignored.
func TestCompareTables(t *testing.T) {
	table := func(key, name string, files ...string) *catalogTable {
		return &catalogTable{key: key, Table: archive.Table{Name: name, Engine: "InnoDB", Files: files}}
	}
	catalog := func(ts ...*catalogTable) map[string]*catalogTable {
		m := map[string]*catalogTable{}
		for _, t := range ts {
			m[t.key] = t
		}
		return m
	}
	stream := func(paths ...string) []archive.File {
		var fs []archive.File
		for _, p := range paths {
			fs = append(fs, archive.File{Path: p})
		}
		return fs
	}
	live := table("shop/customers", "shop.customers", "shop/customers.frm", "shop/customers.ibd")
	spaced := table("shop/a@0020b", "shop.a b", "shop/a@0020b.frm", "shop/a@0020b#P#p0.ibd")
	const ignored = "[00] 2026-11-28 06:47:48 Warning: We assume the  table was dropped during xtrabackup execution and ignore the tablespace ./shop/customers.ibd\n"
	for _, tc := range []struct {
		name           string
		before, after  map[string]*catalogTable
		touched        map[string]bool
		files          []archive.File
		log            string
		listed, refuse string // the tables listed, or what the refusal names
	}{
		{name: "held", before: catalog(live, spaced), after: catalog(live, spaced), touched: map[string]bool{},
			files: stream("shop/customers.frm", "shop/customers.ibd", "shop/a@0020b.frm", "shop/a@0020b#P#p0.ibd"), listed: "shop.a b,shop.customers"},
		{name: "created since the checkpoint, or incremental", before: catalog(live), after: catalog(live),
			files: stream("shop/customers.frm", "shop/customers.new.delta"), listed: "shop.customers"},
		{name: "tablespace missing", before: catalog(live, spaced), after: catalog(live, spaced),
			files: stream("shop/customers.frm", "shop/a@0020b.frm", "shop/a@0020b#P#p0.ibd"), refuse: "shop.customers (shop/customers.ibd)"},
		{name: "dropped during the copy", before: catalog(live, spaced), after: catalog(spaced),
			files: stream("shop/a@0020b.frm", "shop/a@0020b#P#p0.ibd"), log: ignored, listed: "shop.a b"},
		{name: "created during the copy, not streamed", before: catalog(spaced), after: catalog(live, spaced),
			files: stream("shop/a@0020b.frm", "shop/a@0020b#P#p0.ibd"), listed: "shop.a b"},
		{name: "created during the copy, streamed", before: catalog(spaced), after: catalog(live, spaced),
			files: stream("shop/customers.frm", "shop/customers.ibd", "shop/a@0020b.frm", "shop/a@0020b#P#p0.ibd"), listed: "shop.a b,shop.customers"},
		{name: "touched by DDL", before: catalog(live), after: catalog(live), touched: map[string]bool{"shop/customers": true},
			files: stream("shop/customers.frm"), log: ignored, listed: ""},
		{name: "ignored as dropped, streamed all the same, no DDL log", before: catalog(live), after: catalog(live),
			files: stream("shop/customers.frm", "shop/customers.ibd"), log: ignored, touched: nil, listed: "shop.customers"},
		{name: "ignored as dropped, but live", before: catalog(live), after: catalog(live),
			files: stream("shop/customers.frm"), log: ignored, refuse: "shop.customers (shop/customers.ibd)"},
		{name: "ignored as dropped, but live, and streamed all the same", before: catalog(live), after: catalog(live), touched: map[string]bool{},
			files: stream("shop/customers.frm", "shop/customers.ibd"), log: ignored, refuse: "ignored the tablespaces of live tables as dropped: shop.customers (shop/customers.ibd)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held, err := compareTables(tc.before, tc.after, tc.touched, tc.files, []byte(tc.log))
			if tc.refuse != "" {
				var missing *MissingTablesError
				if !errors.As(err, &missing) || !strings.Contains(err.Error(), tc.refuse) {
					t.Fatalf("got %v, %v; want a refusal naming %s", held, err, tc.refuse)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, h := range held {
				names = append(names, h.Name)
			}
			if got := strings.Join(names, ","); got != tc.listed {
				t.Fatalf("listed %q, want %q", got, tc.listed)
			}
		})
	}
}

func TestDDLTables(t *testing.T) {
	log := "1732770000\tCREATE\tInnoDB\t0\tshop\tcustomers_restored\t\n" +
		"1732770001\tRENAME\tAria\t0\tshop\told\t\tAria\t0\tshop2\ta@0020b\t\n" +
		"short\tline\n"
	got := ddlTables([]byte(log))
	want := map[string]bool{"shop/customers_restored": true, "shop/old": true, "shop2/a@0020b": true}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k := range want {
		if !got[k] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

// sorted returns a sorted copy of s.
func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
