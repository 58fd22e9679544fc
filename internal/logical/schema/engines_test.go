package schema

import "testing"

// Which tables hold rows of their own, from their engine and (CONNECT)
// their options as SHOW CREATE TABLE prints them.
func TestRowsElsewhere(t *testing.T) {
	const head = "CREATE TABLE `t` (\n  `id` int(11) NOT NULL\n) ENGINE="
	for _, c := range []struct {
		engine, options string
		elsewhere       bool
	}{
		{"InnoDB", "", false},
		{"MyISAM", "", false},
		{"", "", false}, // a table the server could not open: its read fails loudly
		{"MRG_MyISAM", " DEFAULT CHARSET=latin1 INSERT_METHOD=LAST UNION=(`m1`,`m2`)", true},
		{"FEDERATED", " DEFAULT CHARSET=latin1 CONNECTION='mysql://root@127.0.0.1:3307/x/t'", true},
		{"SPIDER", " COMMENT='wrapper \"mysql\", srv \"s1\", table \"t\"'", true},
		{"CONNECT", " DEFAULT CHARSET=latin1 `TABLE_TYPE`='CSV'", false},
		{"CONNECT", " DEFAULT CHARSET=latin1", false}, // DOS, inward
		{"CONNECT", " DEFAULT CHARSET=latin1 `TABLE_TYPE`='CSV' `FILE_NAME`='/data/out.csv'", true},
		{"CONNECT", " `TABLE_TYPE`='MYSQL' CONNECTION='mysql://root@h/x/t'", true},
		{"CONNECT", " `TABLE_TYPE`='PROXY' `TABNAME`='remote'", true},
		{"CONNECT", " `TABNAME`='remote'", true},                           // PROXY
		{"CONNECT", " `SRCDEF`='select * from t'", true},                   // MYSQL
		{"CONNECT", " COMMENT='TABLE_TYPE=CSV' `TABLE_TYPE`='ODBC'", true}, // a string is not an option
	} {
		tbl := &Table{Name: "t", Engine: c.engine, Create: head + c.engine + c.options}
		if got := tbl.RowsElsewhere(); got != c.elsewhere {
			t.Errorf("%s: RowsElsewhere %v, want %v", tbl.Create, got, c.elsewhere)
		}
	}
}

// Transaction-precise versioning is told apart from timestamps by the
// type of the row start column, also when the period is implicit.
func TestVersionedByTransaction(t *testing.T) {
	trx := &Table{Versioned: true, Columns: []Column{{Name: "id", DataType: "int"},
		{Name: "s", DataType: "bigint", RowStart: true}, {Name: "e", DataType: "bigint", RowEnd: true}}}
	ts := &Table{Versioned: true, Columns: []Column{{Name: "id", DataType: "int"},
		{Name: "row_start", DataType: "timestamp", RowStart: true, Invisible: true}, {Name: "row_end", DataType: "timestamp", RowEnd: true, Invisible: true}}}
	plain := &Table{Columns: []Column{{Name: "id", DataType: "bigint"}}}
	if !trx.VersionedByTransaction() || ts.VersionedByTransaction() || plain.VersionedByTransaction() {
		t.Errorf("VersionedByTransaction: transaction ids %v, timestamps %v, not versioned %v; want true, false, false",
			trx.VersionedByTransaction(), ts.VersionedByTransaction(), plain.VersionedByTransaction())
	}
}
