package restoretest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/physical"
)

func count(n int64) *int64 { return &n }

func TestReportAdd(t *testing.T) {
	tables := []Table{
		{Name: "shop.orders", Check: "OK", Rows: count(10), ExpectedRows: count(10), RowSum: "abc", ExpectedRowSum: "abc"},
		{Name: "mysql.user", Check: "OK"}, // a physical restore records no rows
		{Name: "shop.broken", Check: "error: Table is marked as crashed; status: Corrupt"},
		{Name: "shop.gone", Error: "not checked: connection refused"},
		{Name: "shop.unread", Check: "OK", Error: "reading the rows: connection lost"},
		{Name: "shop.fewer", Check: "OK", Rows: count(9), ExpectedRows: count(10), RowSum: "abd", ExpectedRowSum: "abc"},
		{Name: "shop.altered", Check: "OK", Rows: count(10), ExpectedRows: count(10), RowSum: "abd", ExpectedRowSum: "abc"},
		{Name: "shop.empty", Check: "OK", Rows: count(0), ExpectedRows: count(0), RowSum: "0", ExpectedRowSum: "0"},
	}
	var r Report
	r.add(tables)
	passed := map[string]bool{}
	var order []string
	for _, tb := range r.Tables {
		passed[tb.Name] = tb.Passed
		order = append(order, tb.Name)
	}
	for name, want := range map[string]bool{
		"shop.orders": true, "mysql.user": true, "shop.empty": true,
		"shop.broken": false, "shop.gone": false, "shop.unread": false, "shop.fewer": false, "shop.altered": false,
	} {
		if got, ok := passed[name]; !ok || got != want {
			t.Errorf("%s: passed %v (listed %v), want %v", name, got, ok, want)
		}
	}
	if !slices.IsSorted(order) || len(order) != len(tables) {
		t.Errorf("tables %q, want all of them sorted by name", order)
	}
	wantProblems := []string{
		"shop.broken: CHECK TABLE: error: Table is marked as crashed; status: Corrupt",
		"shop.gone: not checked: connection refused",
		"shop.unread: reading the rows: connection lost",
		"shop.fewer: 9 rows, but the backup recorded 10",
		"shop.altered: the rows differ from what the backup recorded (row sum abd, recorded abc)",
	}
	if !slices.Equal(r.Problems, wantProblems) {
		t.Errorf("problems:\n%q\nwant:\n%q", r.Problems, wantProblems)
	}

	// A second batch (the logical load's tables after the physical's) is
	// merged in order, and its problems are added to the first's.
	r.add([]Table{{Name: "a.first", Check: "OK"}, {Name: "z.last", Check: "status: Operation failed"}})
	if r.Tables[0].Name != "a.first" || r.Tables[len(r.Tables)-1].Name != "z.last" || len(r.Tables) != len(tables)+2 {
		t.Errorf("after a second batch: %d tables from %s to %s", len(r.Tables), r.Tables[0].Name, r.Tables[len(r.Tables)-1].Name)
	}
	if len(r.Problems) != len(wantProblems)+1 || r.Problems[len(r.Problems)-1] != "z.last: CHECK TABLE: status: Operation failed" {
		t.Errorf("after a second batch: problems %q", r.Problems)
	}
}

func TestReportFail(t *testing.T) {
	var r Report
	r.fail("restore: %v", errors.New("frame 3: checksum mismatch"))
	r.fail("the server did not start")
	want := []string{"restore: frame 3: checksum mismatch", "the server did not start"}
	if !slices.Equal(r.Problems, want) {
		t.Errorf("problems %q, want %q", r.Problems, want)
	}
}

// A restore that fails because of the backup fails the test; one that
// could not run here ends it without a verdict.
func TestAgainstBackup(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"damaged data", archive.Corruptf("frame %d: checksum mismatch", 3), true},
		{"damaged data, wrapped", fmt.Errorf("backup x: stream 2: %w", archive.Corruptf("truncated")), true},
		{"prepare failed", &physical.PrepareError{Err: errors.New("mariabackup exited 1")}, true},
		{"prepare failed, wrapped", fmt.Errorf("restore: %w", &physical.PrepareError{Err: errors.New("x")}), true},
		{"statement refused", fmt.Errorf("load t1: %w", &mysql.MySQLError{Number: 1064, Message: "syntax error"}), true},
		{"repository unreachable", fmt.Errorf("open: %w", fs.ErrNotExist), false},
		{"interrupted", context.Canceled, false},
		{"no room", errors.New("write /tmp/x: no space left on device"), false},
		{"driver error", fmt.Errorf("connect: %w", mysql.ErrInvalidConn), false},
	} {
		if got := againstBackup(tt.err); got != tt.want {
			t.Errorf("%s: againstBackup(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

func TestTableNames(t *testing.T) {
	ref := tableRef{db: "shop", t: &schema.Table{Name: "orders"}}
	if got := ref.name(); got != "shop.orders" {
		t.Errorf("name %q", got)
	}
	for in, want := range map[string]string{"t": "`t`", "a`b": "`a``b`", "``": "``````", "": "``", "x y.z": "`x y.z`"} {
		if got := mariadb.QuoteIdent(in); got != want {
			t.Errorf("mariadb.QuoteIdent(%q) = %s, want %s", in, got, want)
		}
	}
}
