package logical

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/storage/local"
)

// testRepo is a new local repository.
func testRepo(t *testing.T) *repo.Repo {
	t.Helper()
	b, err := local.New(filepath.Join(t.TempDir(), "repo"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := repo.Init(context.Background(), b, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// catalogOf reads the catalog of logical backup m, and its bytes.
func catalogOf(t *testing.T, r *repo.Repo, m *archive.Manifest) (*Catalog, []byte) {
	t.Helper()
	data, err := r.ReadMeta(context.Background(), m, CatalogName)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := ParseCatalog(data)
	if err != nil {
		t.Fatal(err)
	}
	return cat, data
}

func testDump(t *testing.T, src *sandbox.Server, blockDDL bool, after func(ctx context.Context) error) (*repo.Repo, error) {
	t.Helper()
	r := testRepo(t)
	c, _ := codec.Parse("zstd")
	_, err := Dump(context.Background(), DumpJob{
		DumpOptions: DumpOptions{Conn: mariadb.Config{Socket: src.Socket, User: "root"}, Parallel: 2,
			Filter: schemaFilter("ddl"), BlockDDL: blockDDL, afterSnapshot: after},
		Dest: r, Codec: c,
	})
	return r, err
}

func ddlSource(t *testing.T) *sandbox.Server {
	src := sandboxtest.Start(t, sandbox.Options{})
	for _, q := range []string{
		"CREATE DATABASE ddl",
		"CREATE TABLE ddl.t (id INT PRIMARY KEY, v INT)",
		"INSERT INTO ddl.t SELECT seq, seq FROM ddl.seq_1_to_1000",
	} {
		if _, err := src.DB().Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return src
}

// DDL on a dumped table after the snapshot opened fails the backup, naming
// the table, and leaves no backup.
func TestDumpDetectsDDL(t *testing.T) {
	src := ddlSource(t)
	r, err := testDump(t, src, false, func(ctx context.Context) error {
		_, err := src.DB().ExecContext(ctx, "ALTER TABLE ddl.t ADD COLUMN w INT")
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "ddl.t") || !strings.Contains(err.Error(), "--block-ddl") {
		t.Fatalf("dump with DDL during it: %v; want a failure naming ddl.t and --block-ddl", err)
	}
	if ms, _ := r.List(context.Background()); len(ms) != 0 {
		t.Errorf("%d backups committed", len(ms))
	}
}

// With --block-ddl the same DDL waits for the dump (and times out here).
func TestDumpBlocksDDL(t *testing.T) {
	src := ddlSource(t)
	var ddlErr error
	r, err := testDump(t, src, true, func(ctx context.Context) error {
		conn, err := src.DB().Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		conn.ExecContext(ctx, "SET SESSION lock_wait_timeout = 1")
		start := time.Now()
		_, ddlErr = conn.ExecContext(ctx, "ALTER TABLE ddl.t ADD COLUMN w INT")
		if ddlErr != nil && time.Since(start) < 900*time.Millisecond {
			t.Errorf("the DDL failed without waiting: %v", ddlErr)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if ddlErr == nil || !strings.Contains(ddlErr.Error(), "Lock wait timeout") {
		t.Errorf("DDL during a --block-ddl dump: %v; want a lock wait timeout", ddlErr)
	}
	if ms, _ := r.List(context.Background()); len(ms) != 1 {
		t.Errorf("%d backups committed, want 1", len(ms))
	}
}

func schemaFilter(databases ...string) schema.Filter { return schema.Filter{Databases: databases} }

// MyISAM and Aria tables hold what they held at the backup's binary log
// position, not what they held when the dump reached them, so that a
// point-in-time replay from the position applies every later write to
// them exactly once. Sequences are recorded at that position too (above
// every value handed out before it), and the source's sequences keep the
// values they had cached: the backup changes nothing on the source.
func TestDumpEveryEngineAtPosition(t *testing.T) {
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	db := src.DB()
	exec := func(q string) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	nextval := func(seq string) int64 {
		t.Helper()
		var v int64
		if err := db.QueryRowContext(ctx, "SELECT NEXTVAL("+seq+")").Scan(&v); err != nil {
			t.Fatalf("NEXTVAL(%s): %v", seq, err)
		}
		return v
	}
	exec("CREATE DATABASE nt")
	engines := []string{"InnoDB", "MyISAM", "Aria"}
	for _, e := range engines {
		exec("CREATE TABLE nt." + e + " (id INT PRIMARY KEY, v INT) ENGINE=" + e)
		exec("INSERT INTO nt." + e + " SELECT seq, seq FROM nt.seq_1_to_100")
	}
	exec("CREATE SEQUENCE nt.s CACHE 10")
	exec("CREATE SEQUENCE nt.sa CACHE 10 ENGINE=Aria")
	nextval("nt.s")
	nextval("nt.sa")
	var lastBefore int64
	r := testRepo(t)
	c, _ := codec.Parse("zstd")
	m, err := Dump(ctx, DumpJob{Dest: r, Codec: c, DumpOptions: DumpOptions{
		Conn: mariadb.Config{Socket: src.Socket, User: "root"}, Parallel: 2,
		Filter: schemaFilter("nt"),
		// Past the cache: the sequence's stored state moves on after the
		// catalog has read it.
		afterCatalog: func(context.Context) error {
			for range 25 {
				lastBefore = nextval("nt.s")
			}
			return nil
		},
		// After the position: none of this may be in the backup.
		afterSnapshot: func(ctx context.Context) error {
			for _, e := range engines {
				if _, err := db.ExecContext(ctx, "INSERT INTO nt."+e+" VALUES (1000, 1000)"); err != nil {
					return err
				}
			}
			nextval("nt.s")
			return nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	cat, _ := catalogOf(t, r, m)
	rows := map[string]int64{}
	for _, td := range cat.Tables {
		for _, ch := range td.Chunks {
			rows[td.Table] += ch.Rows
		}
	}
	for _, e := range engines {
		if rows[e] != 100 {
			t.Errorf("table nt.%s: the backup holds %d rows, want the 100 it had at the backup's position", e, rows[e])
		}
	}
	for _, d := range cat.Schema.Databases {
		for _, tb := range d.Tables {
			if tb.Name == "s" && tb.NextValue <= lastBefore {
				t.Errorf("sequence nt.s recorded at %d, but %d was handed out before the backup's position", tb.NextValue, lastBefore)
			}
		}
	}
	// The source's caches: s handed out 1..26 and one more after the
	// snapshot (27), sa only 1.
	if v := nextval("nt.s"); v != lastBefore+2 {
		t.Errorf("NEXTVAL(nt.s) after the backup = %d, want %d: the backup made the source drop its cached values", v, lastBefore+2)
	}
	if v := nextval("nt.sa"); v != 2 {
		t.Errorf("NEXTVAL(nt.sa) after the backup = %d, want 2: the backup made the source drop its cached values", v)
	}
}
