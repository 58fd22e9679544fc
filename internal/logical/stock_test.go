package logical

import (
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/logical/schema"
)

// The way out of a catalog of two databases, one with an odd name: the
// scripts restore.list names exist, in the order of the phases, every
// database's in each; a view that reads a view of another database that
// reads one of the first splits the first's views in two runs; the data
// script loads every data file as a load does and sets the sequences;
// accounts are apart; every path is flat and unique.
func TestStockFiles(t *testing.T) {
	odd := "a.b/`c`\n-é"
	view := func(db, name, reads string) *schema.Object {
		return &schema.Object{Kind: schema.KindView, Database: db, Name: name, Create: "CREATE VIEW `" + name + "` AS select 1 AS `x` from " + reads,
			CharacterSetClient: "utf8mb4", CollationConnection: "utf8mb4_general_ci", Columns: []string{"x"}}
	}
	types := &schema.Table{Name: "t\tx", Create: "CREATE TABLE `t\tx` (`id` int, `b` bit(3), `e` enum('a'), `u` uuid)", Engine: "InnoDB",
		Columns: []schema.Column{{Name: "id", DataType: "int"}, {Name: "b", DataType: "bit"}, {Name: "e", DataType: "enum"}, {Name: "u", DataType: "uuid"}}}
	seq := &schema.Table{Name: "s", Sequence: true, Create: "CREATE SEQUENCE `s` start with 1", NextValue: 41, CycleCount: 1}
	arch := &schema.Table{Name: "arch", Engine: "ARCHIVE", Create: "CREATE TABLE `arch` (`id` int NOT NULL AUTO_INCREMENT, KEY (`id`)) ENGINE=ARCHIVE AUTO_INCREMENT=17 DEFAULT CHARSET=latin1"}
	merge := &schema.Table{Name: "m", Engine: "MRG_MyISAM", Create: "CREATE TABLE `m` (`id` int) ENGINE=MRG_MyISAM UNION=(`arch`)"}
	c := &Catalog{
		DataFormat: DataFormatNumeric, Whole: true,
		Schema: &schema.Catalog{
			SQLMode: "STRICT_TRANS_TABLES,NO_ZERO_DATE",
			Databases: []*schema.Database{
				{Name: "a", Create: "CREATE DATABASE `a` /*!40100 DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci */",
					Tables: []*schema.Table{seq, arch, merge},
					Views:  []*schema.Object{view("a", "first", "`a`.`arch`"), view("a", "over_b", "`b`.`vb`")},
					Routines: []*schema.Object{{Kind: schema.KindFunction, Database: "a", Name: "f", Create: "CREATE FUNCTION `f`() RETURNS int RETURN 1",
						CharacterSetClient: "utf8mb4", CollationConnection: "utf8mb4_general_ci", DatabaseCollation: "utf8mb4_general_ci"}}},
				{Name: odd, Create: "CREATE DATABASE `a.b/``c``\n-é` /*!40100 DEFAULT CHARACTER SET latin1 COLLATE latin1_swedish_ci */",
					Tables: []*schema.Table{types},
					Views:  []*schema.Object{}},
				{Name: "b", Create: "CREATE DATABASE `b` /*!40100 DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci */",
					Views: []*schema.Object{view("b", "vb", "`a`.`first`")}},
			},
			Users: []*schema.Account{{User: "u", Host: "%", Create: "CREATE USER `u`@`%`", Grants: []string{"GRANT SELECT ON `a`.* TO `u`@`%`"}}},
		},
		Tables: []TableData{
			{Database: "a", Table: "arch", Columns: []string{"id"}, Chunks: []Chunk{{ID: 1, Path: chunkPath("a", "arch", 1), Rows: 2, Bytes: 4}}},
			{Database: odd, Table: "t\tx", Columns: []string{"id", "b", "e", "u"}, Chunks: []Chunk{
				{ID: 2, Path: chunkPath(odd, "t\tx", 1), Rows: 3, Bytes: 30}, {ID: 3, Path: chunkPath(odd, "t\tx", 2), Rows: 1, Bytes: 10}}},
		},
	}
	m := &archive.Manifest{ID: "20261127T000000Z-abcd", Started: time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC),
		Server: archive.Server{Version: "10.11.19-MariaDB", Hostname: "db1"}, Tools: archive.Tools{Backstream: "test"}}
	files, err := stockFiles(c, m, archive.Positions{BinlogFile: "mariadb-bin.000002", BinlogPosition: 345, GTID: "0-1-7"}, func(s, _ string) (string, error) { return s, nil })
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]string{}
	for _, f := range files {
		if _, ok := byPath[f.path]; ok {
			t.Errorf("%s written twice", f.path)
		}
		byPath[f.path] = f.data
		if strings.Count(f.path, "/") > 1 || strings.HasPrefix(f.path, "/") {
			t.Errorf("%s: stock mbstream makes one directory level only", f.path)
		}
	}
	o := pathName(odd)
	wantOrder := []string{
		"a/create-database.sql", o + "/create-database.sql", "b/create-database.sql",
		"a/create-sequences.sql",
		"a/create-tables.sql", o + "/create-tables.sql",
		"a/create-tables-last.sql",
		"a/load-data.sql", o + "/load-data.sql",
		"a/create-routines.sql",
		"a/create-view-placeholders.sql", "b/create-view-placeholders.sql",
		"a/create-views.sql", "b/create-views.sql", "a/create-views-2.sql",
	}
	if got := strings.Join(wantOrder, "\n") + "\n"; byPath[stockOrder] != got {
		t.Errorf("restore.list:\n%s\nwant:\n%s", byPath[stockOrder], got)
	}
	for _, p := range wantOrder {
		if _, ok := byPath[p]; !ok {
			t.Errorf("restore.list names %s, which is not written", p)
		}
	}
	if strings.Contains(byPath[stockOrder], "accounts") || !strings.Contains(byPath[stockAccounts], "CREATE USER `u`@`%`") {
		t.Errorf("the accounts must be apart from restore.list, in accounts.sql:\n%s", byPath[stockAccounts])
	}
	for path, want := range map[string][]string{
		"a/create-tables.sql":      {"CREATE TABLE `arch` (`id` int NOT NULL AUTO_INCREMENT, KEY (`id`)) ENGINE=ARCHIVE DEFAULT CHARSET=latin1;\n"},
		"a/create-tables-last.sql": {"ENGINE=MRG_MyISAM UNION=(`arch`);\n"},
		o + "/load-data.sql": {
			"SET SESSION sql_mode = 'STRICT_TRANS_TABLES,NO_AUTO_VALUE_ON_ZERO,ALLOW_INVALID_DATES', foreign_key_checks = 0, check_constraint_checks = 0, time_zone = '+00:00', max_statement_time = 0;\n",
			"\n-- table `a.b/``c``\\n-é`.`t\tx`: 2 data files, 4 rows\n",
			"LOAD DATA LOCAL INFILE '" + chunkPath(odd, "t\tx", 1) + loadStatement(qualified(odd, "t\tx"), types, []string{"id", "b", "e", "u"}, DataFormatNumeric) + ";\n",
			"LOAD DATA LOCAL INFILE '" + chunkPath(odd, "t\tx", 2) + "' INTO TABLE `a.b/``c``\n-é`.`t\tx` CHARACTER SET binary FIELDS TERMINATED BY X'09' ESCAPED BY X'5C' LINES TERMINATED BY X'0A' (`id`, @v1, @v2, @v3) SET `b` = CAST(@v1 AS UNSIGNED), `e` = CAST(@v2 AS UNSIGNED), `u` = CONVERT(@v3 USING utf8mb4);\n",
		},
		"a/load-data.sql": {"DO SETVAL(`a`.`s`, 41, 0, 1);\n"},
		stockLoadData:     {"table `a.b/``c``\\n-é`.`t\tx`\n  columns: (`id`, @v1, @v2, @v3)\n  set: `b` = CAST(@v1 AS UNSIGNED), `e` = CAST(@v2 AS UNSIGNED), `u` = CONVERT(@v3 USING utf8mb4)\n  file: " + chunkPath(odd, "t\tx", 1) + " (3 rows, 30 bytes)\n"},
		stockReadme:       {"backstream logical backup 20261127T000000Z-abcd\n", "binary log mariadb-bin.000002 position 345", "xargs cat < restore.list | mariadb --binary-mode --comments --local-infile=1"},
	} {
		for _, w := range want {
			if !strings.Contains(byPath[path], w) {
				t.Errorf("%s lacks %q; it is:\n%s", path, w, byPath[path])
			}
		}
	}
	if strings.Contains(byPath[o+"/load-data.sql"], "system_versioning_insert_history") {
		t.Errorf("a database without system-versioned tables loads with system_versioning_insert_history")
	}
	types.Versioned = true
	files, err = stockFiles(c, m, archive.Positions{}, func(s, _ string) (string, error) { return s, nil })
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.path == o+"/load-data.sql" && !strings.Contains(f.data, ", system_versioning_insert_history = 1;\n") {
			t.Errorf("the history of a system-versioned table loads without system_versioning_insert_history:\n%s", f.data)
		}
	}
}
