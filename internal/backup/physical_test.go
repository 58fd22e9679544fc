package backup_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/usecasetest"
)

// The round trip of issue 2: several tables (one over 50 MB, blobs with every
// byte value), backup, verify, stock-tool extraction equal to our restore,
// restore with prepare, a server started on the result, and CHECKSUM TABLE
// of every table equal to the source's.
func TestPhysicalRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 3, BigTableMB: 55, Blobs: true}); err != nil {
		t.Fatal(err)
	}
	want := usecasetest.Checksums(t, src)
	usecasetest.ForEachBackend(t, func(t *testing.T, repo usecasetest.Repo) {
		req := usecasetest.BackupOf(t, repo, src)
		req.Parallel = 3
		made := usecasetest.Backup(t, req).Manifest

		entries := usecasetest.List(t, repo)
		if len(entries) != 1 || entries[0].ID != made.ID {
			t.Fatalf("list shows %+v, want the one backup %s", entries, made.ID)
		}
		e := entries[0]
		if e.Kind != "physical" || e.Streams != 3 || e.Positions.ToLSN == 0 || e.Positions.BinlogFile == "" || e.Positions.GTID == "" {
			t.Errorf("unexpected listing: %+v", e)
		}
		if e.StoredBytes >= e.RawBytes {
			t.Errorf("stored %d bytes of %d raw: nothing compressed", e.StoredBytes, e.RawBytes)
		}

		if err := usecasetest.Verify(t, repo, e.ID); err != nil {
			t.Fatalf("verify: %v", err)
		}

		// Restore without prepare, and the stock tools on every stream
		// object: the same files.
		plain := filepath.Join(t.TempDir(), "plain")
		r := usecasetest.RestoreOf(repo, e.ID)
		r.Restore.TargetDir = plain
		if res := usecasetest.Restore(t, r); res.Datadir == nil || res.Datadir.Prepared || res.Datadir.Target != plain {
			t.Errorf("restore without prepare: %+v", res)
		}
		stock := t.TempDir()
		objects := repo.StreamObjects(t, e.ID)
		if len(objects) != 3 {
			t.Fatalf("%d stream objects, want 3", len(objects))
		}
		for _, o := range objects {
			local := filepath.Join(t.TempDir(), filepath.Base(o))
			if err := os.WriteFile(local, repo.Read(t, o), 0o600); err != nil {
				t.Fatal(err)
			}
			usecasetest.StockExtract(t, local, stock)
		}
		testkit.CompareTrees(t, "zstd -dc | mbstream -x vs restore", testkit.TreeDigests(t, stock), testkit.TreeDigests(t, plain))

		// cat: the whole backup as one xbstream, for mbstream -x.
		catDir := t.TempDir()
		usecasetest.CatExtract(t, repo, e.ID, catDir)
		testkit.CompareTrees(t, "cat | mbstream -x vs restore", testkit.TreeDigests(t, catDir), testkit.TreeDigests(t, plain))

		// Restore with prepare; a server starts on it with the same data.
		target := filepath.Join(t.TempDir(), "datadir")
		r = usecasetest.RestoreOf(repo, "latest")
		r.Restore.TargetDir, r.Restore.Options.Prepare, r.Restore.Options.UseMemory = target, true, "256M"
		if res := usecasetest.Restore(t, r); res.Datadir == nil || !res.Datadir.Prepared {
			t.Errorf("restore with prepare: %+v", res)
		}
		info, err := os.Stat(target)
		if err != nil || info.Mode().Perm() != 0o700 {
			t.Errorf("target mode %v, %v; want 0700", info.Mode(), err)
		}
		got := usecasetest.Checksums(t, usecasetest.ServerOn(t, target))
		if len(got) != len(want) || len(want) < 5 {
			t.Errorf("restored %d tables, source has %d", len(got), len(want))
		}
		usecasetest.CompareChecksums(t, got, want)
	})
}

// Consistency under writes: transfers between accounts run during the
// backup, each in its own transaction that keeps the total and logs itself.
// The restored server must hold exactly the transfers committed up to the
// backup's GTID position, and the total must be unchanged.
func TestPhysicalConsistencyUnderWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	db := src.DB()
	const accounts, initial = 1000, 1000
	// Some bulk so that the backup takes a while.
	usecasetest.CreateBank(t, db, accounts, initial, 150000, "REPEAT(MD5(seq), 6)")
	startSeq := usecasetest.GTIDSeq(t, db)

	load := usecasetest.StartLoad(1, func(rng *rand.Rand) error {
		return usecasetest.Transfer(ctx, db, "bank.accounts", "bank.accounts", rng.IntN(accounts)+1, rng.IntN(accounts)+1, rng.IntN(50)+1)
	})
	// The load runs before, during and after the backup.
	load.More(t, 50)
	repo := usecasetest.NewLocalRepo(t)
	m := usecasetest.Backup(t, usecasetest.BackupOf(t, repo, src)).Manifest
	load.More(t, 50)
	load.Finish(t)
	committed := load.Committed.Load()
	backupSeq := usecasetest.SeqOf(t, m.Positions.GTID)
	if backupSeq <= startSeq || backupSeq >= startSeq+committed {
		t.Fatalf("backup GTID %s is not inside the load (load from seq %d, %d transfers); the test proves nothing", m.Positions.GTID, startSeq, committed)
	}

	target := filepath.Join(t.TempDir(), "datadir")
	r := usecasetest.RestoreOf(repo, m.ID)
	r.Restore.TargetDir, r.Restore.Options.Prepare = target, true
	usecasetest.Restore(t, r)
	dst := usecasetest.ServerOn(t, target)
	var total, rows, transfers int64
	if err := dst.DB().QueryRowContext(ctx, "SELECT SUM(balance), COUNT(*) FROM bank.accounts").Scan(&total, &rows); err != nil {
		t.Fatal(err)
	}
	if err := dst.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM bank.transfers").Scan(&transfers); err != nil {
		t.Fatal(err)
	}
	if total != accounts*initial || rows != accounts {
		t.Errorf("restored total %d over %d rows, want %d over %d", total, rows, accounts*initial, accounts)
	}
	// Each transfer is one GTID: the restored data is the state at the
	// backup's binlog position exactly.
	if transfers != backupSeq-startSeq {
		t.Errorf("restored %d transfers, but the backup's GTID %s says %d", transfers, m.Positions.GTID, backupSeq-startSeq)
	}
	var maxID int64
	dst.DB().QueryRowContext(ctx, "SELECT COALESCE(MAX(id),0) FROM bank.transfers").Scan(&maxID)
	if maxID != transfers {
		t.Errorf("transfers have gaps: max id %d, count %d", maxID, transfers)
	}
}
