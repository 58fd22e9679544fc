package backup_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// A logical round trip on every backend: a dump in small chunks over two
// connections, list, verify, a load into a fresh server, and CHECKSUM
// TABLE of every table equal to the source's.
func TestLogicalRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 3, BigTableMB: 8, Blobs: true}); err != nil {
		t.Fatal(err)
	}
	want := usecasetest.Checksums(t, src)
	usecasetest.ForEachBackend(t, func(t *testing.T, repo usecasetest.Repo) {
		req := usecasetest.LogicalBackupOf(t, repo, src)
		req.Dump.ChunkBytes, req.Dump.Skip.Users = 256<<10, true
		if m := usecasetest.Backup(t, req).Manifest; m.Kind != archive.KindLogical {
			t.Errorf("backup %s is %s, want logical", m.ID, m.Kind)
		}
		entries := usecasetest.List(t, repo)
		if len(entries) != 1 || entries[0].Kind != "logical" || entries[0].Positions.GTID == "" {
			t.Fatalf("listing %+v, want one logical backup with its GTID position", entries)
		}
		if err := usecasetest.Verify(t, repo, "latest"); err != nil {
			t.Fatalf("verify: %v", err)
		}

		dst := sandboxtest.Start(t, sandbox.Options{})
		usecasetest.Restore(t, usecasetest.LoadOf(repo, "", dst))
		usecasetest.CompareChecksums(t, usecasetest.Checksums(t, dst), want)
	})
}

// Transfers between rows of two different tables run before, during and
// after the dump, each keeping the sum over both tables; the restored sum
// is exact, and the restored transfer log is exactly as long as the GTID
// position recorded in the manifest says.
func TestLogicalConsistencyUnderWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	db := src.DB()
	const rows, initial = 2000, 1000
	usecasetest.ExecAll(t, db,
		"CREATE DATABASE bank",
		"CREATE TABLE bank.checking (id INT PRIMARY KEY, balance BIGINT NOT NULL) ENGINE=InnoDB",
		"CREATE TABLE bank.savings (id INT PRIMARY KEY, balance BIGINT NOT NULL) ENGINE=InnoDB",
		fmt.Sprintf("INSERT INTO bank.checking SELECT seq, %d FROM bank.seq_1_to_%d", initial, rows),
		fmt.Sprintf("INSERT INTO bank.savings SELECT seq, %d FROM bank.seq_1_to_%d", initial, rows),
		"CREATE TABLE bank.transfers (id BIGINT AUTO_INCREMENT PRIMARY KEY, src INT, dst INT, amount INT) ENGINE=InnoDB",
		// Bulk, dumped first, so that the dump takes a while.
		"CREATE TABLE bank.filler (id INT PRIMARY KEY, pad VARCHAR(200)) ENGINE=InnoDB",
		"INSERT INTO bank.filler SELECT seq, REPEAT(MD5(seq), 6) FROM bank.seq_1_to_300000",
	)
	startSeq := usecasetest.GTIDSeq(t, db)
	load := usecasetest.StartLoad(2, func(rng *rand.Rand) error {
		from, to := "bank.checking", "bank.savings"
		if rng.IntN(2) == 0 {
			from, to = to, from
		}
		return usecasetest.Transfer(ctx, db, from, to, rng.IntN(rows)+1, rng.IntN(rows)+1, rng.IntN(50)+1)
	})
	load.More(t, 50)
	repo := usecasetest.NewLocalRepo(t)
	req := usecasetest.LogicalBackupOf(t, repo, src)
	req.Dump.ChunkBytes, req.Dump.Skip.Users = 256<<10, true
	before := load.Committed.Load()
	m := usecasetest.Backup(t, req).Manifest
	during := load.Committed.Load() - before
	load.More(t, 50)
	load.Finish(t)
	if during == 0 {
		t.Fatal("no transfer committed while the dump ran: the test proves nothing")
	}
	wantTransfers := usecasetest.SeqOf(t, m.Positions.GTID) - startSeq

	dst := sandboxtest.Start(t, sandbox.Options{})
	usecasetest.Restore(t, usecasetest.LoadOf(repo, m.ID, dst))
	var total, n int64
	if err := dst.DB().QueryRowContext(ctx, "SELECT (SELECT SUM(balance) FROM bank.checking) + (SELECT SUM(balance) FROM bank.savings), (SELECT COUNT(*) FROM bank.transfers)").Scan(&total, &n); err != nil {
		t.Fatal(err)
	}
	if total != 2*rows*initial {
		t.Errorf("restored total %d, want %d: the tables come from different moments", total, 2*rows*initial)
	}
	if n != wantTransfers {
		t.Errorf("restored %d transfers, the manifest's GTID says %d", n, wantTransfers)
	}
	t.Logf("%d transfers committed while the dump ran; %d in the backup", during, n)
}

// Fidelity: a schema with every kind of object and the hardest data, dumped
// whole (users included) and loaded into a fresh server, gives identical
// CHECKSUM TABLE results, SHOW CREATE output of every object, sequence
// rows, users and grants.
func TestLogicalFidelity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandboxtest.LoadFidelitySchema(ctx, src.DB()); err != nil {
		t.Fatal(err)
	}
	dbs := []string{"fid_a", "fid_b"}
	wantSums := usecasetest.Checksums(t, src)
	wantObjs, err := sandboxtest.DescribeObjects(ctx, src.DB(), dbs...)
	if err != nil {
		t.Fatal(err)
	}
	// SHOW GRANTS lists column grants in an in-memory hash order until
	// the privileges are reloaded.
	src.DB().ExecContext(ctx, "FLUSH PRIVILEGES")
	wantAccts, err := sandboxtest.DescribeAccounts(ctx, src.DB(), sandboxtest.FidelityUsers()...)
	if err != nil {
		t.Fatal(err)
	}
	repo := usecasetest.NewLocalRepo(t)
	req := usecasetest.LogicalBackupOf(t, repo, src)
	req.Dump.ChunkBytes = 1 << 20
	usecasetest.Backup(t, req)
	if err := usecasetest.Verify(t, repo, "latest"); err != nil {
		t.Fatalf("verify: %v", err)
	}

	dst := sandboxtest.Start(t, sandbox.Options{})
	load := usecasetest.LoadOf(repo, "", dst)
	load.Load.Users = true
	usecasetest.Restore(t, load)
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, dst), wantSums)
	gotObjs, err := sandboxtest.DescribeObjects(ctx, dst.DB(), dbs...)
	if err != nil {
		t.Fatal(err)
	}
	usecasetest.CompareDescriptions(t, gotObjs, wantObjs)
	dst.DB().ExecContext(ctx, "FLUSH PRIVILEGES")
	gotAccts, err := sandboxtest.DescribeAccounts(ctx, dst.DB(), sandboxtest.FidelityUsers()...)
	if err != nil {
		t.Fatal(err)
	}
	usecasetest.CompareDescriptions(t, gotAccts, wantAccts)
	if len(wantObjs) < 40 || len(wantAccts) < 6 {
		t.Errorf("only %d objects and %d account descriptions compared: the fidelity schema is not what it should be", len(wantObjs), len(wantAccts))
	}
}

// A TIMESTAMP column's default is a moment, which SHOW CREATE TABLE prints
// in the session's time zone: from a source whose time zone is not UTC it
// must come back as the same moment, not as the same wall-clock text read
// in UTC.
func TestLogicalTimestampDefaultsOfASourceOutsideUTC(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{Args: []string{"--default-time-zone=+05:00"}})
	usecasetest.ExecAll(t, src.DB(),
		"CREATE DATABASE tz",
		"CREATE TABLE tz.t (id INT PRIMARY KEY, at TIMESTAMP NOT NULL DEFAULT '2020-01-01 10:00:00', at6 TIMESTAMP(6) NULL DEFAULT '2021-06-01 12:34:56.123456')",
		"INSERT INTO tz.t (id) VALUES (1)",
	)
	repo := usecasetest.NewLocalRepo(t)
	req := usecasetest.LogicalBackupOf(t, repo, src)
	req.Dump.Filter.Databases, req.Dump.Skip.Users = []string{"tz"}, true
	usecasetest.Backup(t, req)
	dst := sandboxtest.Start(t, sandbox.Options{})
	usecasetest.Restore(t, usecasetest.LoadOf(repo, "", dst))
	// Both read in UTC, and a row that takes the defaults on each.
	read := func(s *sandbox.Server) (create string, at, at6 string) {
		t.Helper()
		c, err := s.DB().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var name string
		for _, q := range []string{"SET time_zone = '+00:00'", "INSERT INTO tz.t (id) VALUES (2)"} {
			if _, err := c.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := c.QueryRowContext(ctx, "SHOW CREATE TABLE tz.t").Scan(&name, &create); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRowContext(ctx, "SELECT CAST(at AS CHAR), CAST(at6 AS CHAR) FROM tz.t WHERE id = 2").Scan(&at, &at6); err != nil {
			t.Fatal(err)
		}
		return create, at, at6
	}
	wantCreate, wantAt, wantAt6 := read(src)
	gotCreate, gotAt, gotAt6 := read(dst)
	if gotCreate != wantCreate {
		t.Errorf("restored definition, read in UTC:\n%s\nsource's:\n%s", gotCreate, wantCreate)
	}
	if gotAt != wantAt || gotAt6 != wantAt6 || wantAt != "2020-01-01 05:00:00" {
		t.Errorf("a new row's defaults in UTC: restored %s, %s; source %s, %s (want 2020-01-01 05:00:00)", gotAt, gotAt6, wantAt, wantAt6)
	}
}
