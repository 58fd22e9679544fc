package logical

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/storage/local"
)

func testDump(t *testing.T, src *sandbox.Server, blockDDL bool, after func(ctx context.Context) error) (*repo.Repo, error) {
	t.Helper()
	b, err := local.New(filepath.Join(t.TempDir(), "repo"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := repo.OpenOrInit(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := codec.Parse("zstd")
	_, err = Dump(context.Background(), DumpJob{
		Conn: mariadb.Config{Socket: src.Socket, User: "root"}, Dest: r, Parallel: 2, Codec: c,
		Filter: schemaFilter("ddl"), BlockDDL: blockDDL, afterSnapshot: after,
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
