package restorecase

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/logical"
	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/repo/repotest"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// Restore of a logical backup loads it through the logical engine into
// the server its request names (a datadir asked for is not written), and
// says what it loaded; the target holds the source's rows.
func TestRestoreLogicalLoadsIntoServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{NoBinlog: true})
	for _, q := range []string{
		"CREATE DATABASE shop",
		"CREATE TABLE shop.orders (id INT PRIMARY KEY, total INT, KEY (total))",
		"INSERT INTO shop.orders SELECT seq, seq * 3 FROM shop.seq_1_to_500",
		"CREATE TABLE shop.notes (id INT PRIMARY KEY, note TEXT)",
		"INSERT INTO shop.notes VALUES (1, 'first'), (2, 'second')",
	} {
		if _, err := src.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	r := repotest.New(t)
	c, _ := codec.Parse("zstd")
	m, err := logical.Dump(ctx, logical.DumpJob{Dest: r, Codec: c, DumpOptions: logical.DumpOptions{
		Conn: mariadb.Config{Socket: src.Socket, User: "root"}, Parallel: 2, Filter: schema.Filter{Databases: []string{"shop"}}}})
	if err != nil {
		t.Fatal(err)
	}

	dst := sandboxtest.Start(t, sandbox.Options{NoBinlog: true})
	notWritten := filepath.Join(t.TempDir(), "datadir")
	res, err := Restore(ctx, BackupRequest{Repo: r, Backup: m, Datadir: restore.Job{TargetDir: notWritten},
		Load: logical.LoadJob{Conn: mariadb.Config{Socket: dst.Socket, User: "root"}, Parallel: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Load == nil || res.Datadir != nil || res.InPlace != nil {
		t.Fatalf("result %+v: want a load, nothing else", res)
	}
	if l := res.Load; l.Backup.ID != m.ID || l.Tables != 2 || l.Rows != 502 {
		t.Errorf("load of %s: backup %s, %d tables, %d rows; want 2 tables, 502 rows", m.ID, l.Backup.ID, l.Tables, l.Rows)
	}
	var n, sum int64
	if err := dst.DB().QueryRowContext(ctx, "SELECT COUNT(*), SUM(total) FROM shop.orders").Scan(&n, &sum); err != nil || n != 500 || sum != 3*500*501/2 {
		t.Errorf("shop.orders on the target: %d rows, sum %d, %v", n, sum, err)
	}
	if _, err := sandboxtest.DescribeObjects(ctx, dst.DB(), "shop"); err != nil {
		t.Error(err)
	}
	if entries, _ := filepath.Glob(notWritten + "*"); len(entries) != 0 {
		t.Errorf("a logical restore wrote %v", entries)
	}
}
