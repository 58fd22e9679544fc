package servercopy

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/logical"
)

func TestResultPrinters(t *testing.T) {
	res := &Result{ID: "c1", Resumed: true,
		Position: archive.Positions{GTID: "0-1-5", BinlogFile: "bin.000002", BinlogPosition: 42},
		Load:     &logical.LoadResult{Tables: 3, Chunks: 4, Rows: 10, Kept: []string{"kept db.t"}},
		Masked:   []string{"db.u.email=hash"}}
	var b bytes.Buffer
	res.WriteText(&b, false)
	want := "copy c1 complete: 3 tables, 4 data files, 10 rows (resumed: 1 tables kept from the earlier run)\n" +
		"source position: GTID 0-1-5, binary log bin.000002 at 42 (recorded on the target in " + logical.JournalDatabase + ".copies)\n" +
		"masked as copied: db.u.email=hash\n" +
		"kept db.t\n" +
		"accounts: none created or changed (--users copies them)\n"
	if b.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", b.String(), want)
	}

	raw, err := json.Marshal(res.JSON(1500*time.Millisecond, errors.New("replication failed")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"copy":"c1"`, `"resumed":true`, `"tables":3`, `"data_files":4`, `"rows":10`,
		`"gtid_position":"0-1-5"`, `"binlog_file":"bin.000002"`, `"binlog_position":42`, `"kept_tables":["kept db.t"]`,
		`"dropped_tables":[]`, `"masked":["db.u.email=hash"]`, `"seconds":1.5`, `"error":"replication failed"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("JSON %s lacks %s", raw, want)
		}
	}
	if strings.Contains(string(raw), `"replication"`) {
		t.Errorf("JSON %s has a replication, none was set up", raw)
	}
}
