package backup_test

import (
	"context"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// Tables whose key does not start with an integer are cut into ranges of
// boundary values, dumped by both connections, and restore exactly:
// UUID-like BINARY(16), the UUID type, a case- and accent-insensitive
// VARCHAR whose values differ only in case, accents and trailing spaces
// (each unique in the collation), DATETIME(6) with zero dates, DECIMAL,
// and a composite key whose first column repeats across many rows.
func TestKeysetChunking(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	db := src.DB()
	for _, q := range []string{
		"SET SESSION sql_mode = ''",
		"CREATE DATABASE k",
		"CREATE TABLE k.bin (id BINARY(16) PRIMARY KEY, v VARCHAR(100)) ENGINE=InnoDB",
		"INSERT INTO k.bin SELECT UNHEX(MD5(seq)), REPEAT('b', 80) FROM k.seq_1_to_60000",
		"CREATE TABLE k.u (id UUID PRIMARY KEY, v VARCHAR(100)) ENGINE=InnoDB",
		"INSERT INTO k.u SELECT UUID(), REPEAT('u', 80) FROM k.seq_1_to_20000",
		"CREATE TABLE k.txt (name VARCHAR(60) COLLATE utf8mb4_unicode_ci PRIMARY KEY, v VARCHAR(100)) ENGINE=InnoDB",
		"INSERT INTO k.txt SELECT CONCAT(CHAR(65 + seq % 26), 'é', LPAD(seq, 6, '0'), IF(seq % 3 = 0, ' x', '')), REPEAT('t', 80) FROM k.seq_1_to_30000",
		"INSERT INTO k.txt VALUES ('Zz', 'upper'), ('zy', 'lower'), ('résumé', 'accent'), ('resume1', 'plain')",
		"CREATE TABLE k.dt (at DATETIME(6) PRIMARY KEY, v VARCHAR(100)) ENGINE=InnoDB",
		"INSERT INTO k.dt SELECT '2026-01-01' + INTERVAL seq * 7 SECOND + INTERVAL seq MICROSECOND, REPEAT('d', 80) FROM k.seq_1_to_30000",
		"INSERT INTO k.dt VALUES ('0000-00-00 00:00:00', 'zero'), ('2020-00-15 00:00:00', 'zero month')",
		"CREATE TABLE k.dec (amount DECIMAL(30,10) PRIMARY KEY, v VARCHAR(100)) ENGINE=InnoDB",
		"INSERT INTO k.dec SELECT seq / 7 - 1000, REPEAT('m', 80) FROM k.seq_1_to_30000",
		"CREATE TABLE k.comp (tenant VARCHAR(10), id INT, v VARCHAR(100), PRIMARY KEY (tenant, id)) ENGINE=InnoDB",
		"INSERT INTO k.comp SELECT CONCAT('t', seq % 3), seq, REPEAT('c', 80) FROM k.seq_1_to_30000",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := db.ExecContext(ctx, "ANALYZE TABLE k.bin, k.u, k.txt, k.dt, k.dec, k.comp"); err != nil {
		t.Fatal(err)
	}
	want := usecasetest.Checksums(t, src)
	repo := usecasetest.NewLocalRepo(t)
	req := usecasetest.LogicalBackupOf(t, repo, src)
	req.Dump.ChunkBytes, req.Dump.Filter.Databases, req.Dump.Skip.Users = 512<<10, []string{"k"}, true
	cat := usecasetest.Catalog(t, repo, usecasetest.Backup(t, req).Manifest.ID)
	for _, td := range cat.Tables {
		var rows int64
		for _, c := range td.Chunks {
			rows += c.Rows
		}
		t.Logf("%s: %d data files, %d rows", td.Table, len(td.Chunks), rows)
		if len(td.Chunks) < 3 {
			t.Errorf("table %s.%s: %d data files, want it cut into several", td.Database, td.Table, len(td.Chunks))
		}
	}
	dst := sandboxtest.Start(t, sandbox.Options{})
	usecasetest.Restore(t, usecasetest.LoadOf(repo, "", dst))
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, dst), want)
}

// A 500k-row table keyed by the UUID type is dumped by both connections
// at once: while the backup runs, the source's processlist shows two
// range selects of the table at the same moment, the table is cut into
// many data files, and every row comes back. (It had 2 M rows and 4 MiB
// chunks; 1 MiB chunks of a quarter of the rows make as many selects,
// each as long as one of the sampler's intervals many times over, at a
// quarter of the test's CPU.)
func TestKeysetChunkingKeepsBothConnectionsBusy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	db := src.DB()
	for _, q := range []string{
		"CREATE DATABASE k",
		"CREATE TABLE k.big (id UUID PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB",
		"INSERT INTO k.big SELECT UUID(), seq FROM k.seq_1_to_500000",
		"ANALYZE TABLE k.big",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	want := usecasetest.Checksums(t, src)
	// The data selects read ranges of the key; the planning scan reads
	// the key alone, ordered, and is not counted.
	const dataSelects = "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND INFO LIKE 'SELECT %FROM `k`.`big` WHERE%'"
	dump := func() (usecasetest.Repo, *backup.Result, int) {
		most := make(chan int, 1)
		stop := make(chan struct{})
		go func() {
			seen := 0
			defer func() { most <- seen }()
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				var n int
				if err := db.QueryRowContext(ctx, dataSelects).Scan(&n); err != nil {
					t.Error(err)
					return
				}
				seen = max(seen, n)
			}
		}()
		repo := usecasetest.NewLocalRepo(t)
		req := usecasetest.LogicalBackupOf(t, repo, src)
		req.Dump.ChunkBytes, req.Dump.Filter.Databases, req.Dump.Skip.Users = 1<<20, []string{"k"}, true
		res, err := backup.Run(ctx, req)
		close(stop)
		busiest := <-most
		if err != nil {
			t.Fatalf("backup: %v", err)
		}
		return repo, res, busiest
	}
	// On a machine starved of CPU (CI's load reached 30 on 2 cores) one
	// run saw a single select at a time: the planning scan, which hands
	// the other connection each range as it finds its upper boundary,
	// can fall behind that connection, and the sampler sees fewer
	// moments. Two more tries before the verdict: a dump that never runs
	// two ranges at once still fails.
	repo, res, busiest := dump()
	for try := 2; busiest < 2 && try <= 3; try++ {
		t.Logf("at most %d range select of k.big at once; try %d", busiest, try)
		repo, res, busiest = dump()
	}
	if busiest < 2 {
		t.Errorf("at most %d range select of k.big ran at once during the dump, three times; want both connections on it", busiest)
	}
	cat := usecasetest.Catalog(t, repo, res.Manifest.ID)
	var files int
	var rows int64
	for _, td := range cat.Tables {
		for _, c := range td.Chunks {
			files++
			rows += c.Rows
		}
	}
	t.Logf("k.big: %d data files, %d rows; at most %d range selects at once", files, rows, busiest)
	if files < 4 || rows != 500000 {
		t.Errorf("k.big: %d data files and %d rows, want several files and 500000 rows", files, rows)
	}
	dst := sandboxtest.Start(t, sandbox.Options{})
	usecasetest.Restore(t, usecasetest.LoadOf(repo, "", dst))
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, dst), want)
}
