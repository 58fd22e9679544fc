package schema

import (
	"reflect"
	"testing"
)

func TestColumnDefs(t *testing.T) {
	create := "CREATE TABLE `c` (\n" +
		"  `id` int(10) unsigned NOT NULL AUTO_INCREMENT,\n" +
		"  `email` varchar(64) NOT NULL COMMENT 'NOT NULL, (x',\n" +
		"  `name` varchar(40) CHARACTER SET latin1 COLLATE latin1_swedish_ci DEFAULT NULL,\n" +
		"  `bin` varchar(20) COLLATE utf8mb4_bin DEFAULT 'NOT NULL',\n" +
		"  `doc` longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT NULL CHECK (json_valid(`doc`)),\n" +
		"  `n` bigint(20) DEFAULT (1 + 2),\n" +
		"  `d` decimal(10,2) NOT NULL,\n" +
		"  `u` binary(16) DEFAULT NULL,\n" +
		"  `g` int(11) GENERATED ALWAYS AS (`n` + 1) VIRTUAL,\n" +
		"  `e` enum('a','b') NOT NULL,\n" +
		"  PRIMARY KEY (`id`),\n" +
		"  KEY `k` (`email`),\n" +
		"  CONSTRAINT `ck` CHECK (`n` is not null)\n" +
		") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"
	got, err := ColumnDefs(create)
	if err != nil {
		t.Fatal(err)
	}
	want := []ColumnDef{
		{Name: "id", Length: 10, Unsigned: true, NotNull: true},
		{Name: "email", Length: 64, NotNull: true, Charset: "utf8mb4"},
		{Name: "name", Length: 40, Charset: "latin1"},
		{Name: "bin", Length: 20, Charset: "utf8mb4"},
		{Name: "doc", Charset: "utf8mb4", JSON: true},
		{Name: "n", Length: 20},
		{Name: "d", Length: 10, NotNull: true},
		{Name: "u", Length: 16},
		{Name: "g", Length: 11},
		{Name: "e", NotNull: true, Charset: "utf8mb4"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ColumnDefs:\n got %+v\nwant %+v", got, want)
	}

	got, err = ColumnDefs("CREATE TABLE `t` (`a` char(3)) ENGINE=InnoDB DEFAULT CHARSET=latin1")
	if err != nil || len(got) != 1 || got[0].Charset != "latin1" || got[0].Length != 3 {
		t.Errorf("latin1 table: %+v, %v", got, err)
	}
	got, err = ColumnDefs("CREATE TABLE `t` (`a` text) ENGINE=InnoDB COLLATE=utf16_general_ci")
	if err != nil || len(got) != 1 || got[0].Charset != "utf16" {
		t.Errorf("a table's collation alone: %+v, %v", got, err)
	}
	if _, err := ColumnDefs("CREATE VIEW v AS SELECT 1"); err == nil {
		t.Error("a view: no error")
	}
}
