package logical

import (
	"context"
	"fmt"
	"testing"

	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// The ranges a key of each supported type is cut into are many, handed
// out while the planner still reads, and hold every row exactly once:
// their counts and checksums add up to the table's.
func TestKeysetRangesPartitionTheTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	db := src.DB()
	for _, q := range []string{
		"SET SESSION sql_mode = ''",
		"CREATE DATABASE k",
		"CREATE TABLE k.txt (id VARCHAR(60) COLLATE utf8mb4_unicode_ci PRIMARY KEY, v INT) ENGINE=InnoDB",
		"INSERT INTO k.txt SELECT CONCAT(IF(seq % 2, 'A', 'a'), 'é', LPAD(seq, 6, '0'), IF(seq % 3 = 0, ' ', '')), seq FROM k.seq_1_to_5000",
		"CREATE TABLE k.bin (id BINARY(16) PRIMARY KEY, v INT) ENGINE=InnoDB",
		"INSERT INTO k.bin SELECT UNHEX(MD5(seq)), seq FROM k.seq_1_to_5000",
		"CREATE TABLE k.u (id UUID PRIMARY KEY, v INT) ENGINE=InnoDB",
		"INSERT INTO k.u SELECT UUID(), seq FROM k.seq_1_to_5000",
		"CREATE TABLE k.dt (id DATETIME(6) PRIMARY KEY, v INT) ENGINE=InnoDB",
		"INSERT INTO k.dt SELECT '2026-01-01' + INTERVAL seq SECOND, seq FROM k.seq_1_to_5000",
		"INSERT INTO k.dt VALUES ('0000-00-00', 0)",
		"CREATE TABLE k.dec (id DECIMAL(20,6) PRIMARY KEY, v INT) ENGINE=InnoDB",
		"INSERT INTO k.dec SELECT seq / 3 - 500, seq FROM k.seq_1_to_5000",
		"CREATE TABLE k.comp (id VARCHAR(5), n INT, v INT, PRIMARY KEY (id, n)) ENGINE=InnoDB",
		"INSERT INTO k.comp SELECT CONCAT('t', seq % 4), seq, seq FROM k.seq_1_to_5000",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := setReadSession(ctx, conn); err != nil {
		t.Fatal(err)
	}
	for table, typ := range map[string]string{"txt": "varchar", "bin": "binary", "u": "uuid", "dt": "datetime", "dec": "decimal", "comp": "varchar"} {
		tb := &schema.Table{Name: table, Engine: "InnoDB", Key: []string{"id"}, Rows: 5000, DataBytes: 5000 * 100,
			Columns: []schema.Column{{Name: "id", DataType: typ}, {Name: "v", DataType: "int"}}}
		w := newTableWork("k", tb, dataFormat)
		if !w.keyset {
			t.Fatalf("%s (%s): not cut by boundary values", table, typ)
		}
		first, ok := w.nextKeyset()
		if !ok || !first.plan {
			t.Fatalf("%s: the first task does not plan", table)
		}
		if err := planKeyset(ctx, conn, w, 100*500); err != nil { // about 500 rows a range
			t.Fatalf("%s: %v", table, err)
		}
		var wheres []string
		for {
			tk, ok := w.nextKeyset()
			if !ok {
				t.Fatalf("%s: waiting after planning ended", table)
			}
			wheres = append(wheres, w.rangeWhere(tk.rng))
			if w.exhaust {
				break
			}
		}
		sum := func(where string) (n, s int64) {
			t.Helper()
			q := fmt.Sprintf("SELECT COUNT(*), COALESCE(SUM(CRC32(CONCAT(HEX(id), '/', v))), 0) FROM k.%s%s", table, where)
			if err := conn.QueryRowContext(ctx, q).Scan(&n, &s); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			return n, s
		}
		wantN, wantS := sum("")
		var gotN, gotS int64
		for _, where := range wheres {
			n, s := sum(where)
			gotN, gotS = gotN+n, gotS+s
		}
		if gotN != wantN || gotS != wantS {
			t.Errorf("%s (%s): %d ranges hold %d rows (checksum %d), the table %d (%d)", table, typ, len(wheres), gotN, gotS, wantN, wantS)
		}
		if min := map[string]int{"comp": 3}[table]; len(wheres) < max(min, 5) {
			t.Errorf("%s (%s): %d ranges, want several: %q", table, typ, len(wheres), wheres)
		}
	}
}

// A load names the system-versioned tables whose history it must insert,
// so that a target without system_versioning_insert_history is refused
// before anything changes, not loaded without their history.
func TestHistoryToLoad(t *testing.T) {
	tables := []*target{
		{db: "a", name: "plain", src: &schema.Table{}},
		{db: "a", name: "versioned", src: &schema.Table{Versioned: true}},
		{db: "b", name: "current_only", src: &schema.Table{Versioned: true, HistoryLeftOut: true}},
	}
	if got := historyToLoad(tables); len(got) != 1 || got[0] != "a.versioned" {
		t.Errorf("historyToLoad = %v, want [a.versioned]", got)
	}
}
