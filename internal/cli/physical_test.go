package cli

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

func sandboxConn(s *sandbox.Server) []string {
	return []string{"--socket", s.Socket, "--user", "root", "--no-defaults"}
}

// The round trip of issue 2: several tables (one over 50 MB, blobs with every
// byte value), backup, verify, stock-tool extraction equal to our restore,
// restore with --prepare, a server started on the result, and CHECKSUM TABLE
// of every table equal to the source's.
func TestPhysicalRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 3, BigTableMB: 55, Blobs: true}); err != nil {
		t.Fatal(err)
	}
	want, err := sandbox.ChecksumTables(ctx, src.DB())
	if err != nil {
		t.Fatal(err)
	}
	forEachBackend(t, func(t *testing.T, repo testRepo) {
		repoDir := repo.location
		args := append([]string{"backup", "--repo", repoDir, "--parallel", "3"}, sandboxConn(src)...)
		r := run(t, args...).mustSucceed(t)
		if !strings.Contains(r.stdout, "complete") {
			t.Errorf("backup printed %q", r.stdout)
		}

		entries := backupListing(t, repoDir)
		if len(entries) != 1 {
			t.Fatalf("list shows %d backups, want 1", len(entries))
		}
		e := entries[0]
		if e.Kind != "physical" || e.Streams != 3 || e.Positions.ToLSN == 0 || e.Positions.BinlogFile == "" || e.Positions.GTID == "" {
			t.Errorf("unexpected listing: %+v", e)
		}
		if e.StoredBytes >= e.RawBytes {
			t.Errorf("stored %d bytes of %d raw: nothing compressed", e.StoredBytes, e.RawBytes)
		}

		run(t, "verify", e.ID, "--repo", repoDir).mustSucceed(t)

		// Restore without prepare, and the stock tools on every stream
		// object: the same files.
		plain := filepath.Join(t.TempDir(), "plain")
		run(t, "restore", e.ID, "--repo", repoDir, "--target-dir", plain).mustSucceed(t)
		stock := t.TempDir()
		objects := repo.streamObjects(t, e.ID)
		if len(objects) != 3 {
			t.Fatalf("%d stream objects, want 3", len(objects))
		}
		for _, o := range objects {
			local := filepath.Join(t.TempDir(), filepath.Base(o))
			if err := os.WriteFile(local, repo.read(t, o), 0o600); err != nil {
				t.Fatal(err)
			}
			stockExtract(t, local, stock)
		}
		compareTrees(t, "zstd -dc | mbstream -x vs restore", treeDigests(t, stock), treeDigests(t, plain))

		// cat: the whole backup as one xbstream, for mbstream -x.
		catDir := t.TempDir()
		catExtract(t, catDir, e.ID, "--repo", repoDir)
		compareTrees(t, "cat | mbstream -x vs restore", treeDigests(t, catDir), treeDigests(t, plain))

		// Restore with prepare; a server starts on it with the same data.
		target := filepath.Join(t.TempDir(), "datadir")
		r = run(t, "restore", "latest", "--repo", repoDir, "--target-dir", target, "--prepare", "--use-memory", "256M").mustSucceed(t)
		if !strings.Contains(r.stdout, "prepared") {
			t.Errorf("restore printed %q", r.stdout)
		}
		info, err := os.Stat(target)
		if err != nil || info.Mode().Perm() != 0o700 {
			t.Errorf("target mode %v, %v; want 0700", info.Mode(), err)
		}
		got := checksums(t, serverOn(t, target))
		if len(got) != len(want) || len(want) < 5 {
			t.Errorf("restored %d tables, source has %d", len(got), len(want))
		}
		for table, sum := range want {
			if got[table] != sum {
				t.Errorf("table %s: checksum %s after restore, %s in the source", table, got[table], sum)
			}
		}
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
	createBank(t, db, accounts, initial, 150000, "REPEAT(MD5(seq), 6)")
	startSeq := gtidSeq(t, db)

	load := startLoad(1, func(rng *rand.Rand) error {
		return transfer(ctx, db, "bank.accounts", "bank.accounts", rng.IntN(accounts)+1, rng.IntN(accounts)+1, rng.IntN(50)+1)
	})
	// The load runs before, during and after the backup.
	load.more(t, 50)
	repoDir := newRepoDir(t)
	run(t, append([]string{"backup", "--repo", repoDir, "--parallel", "2"}, sandboxConn(src)...)...).mustSucceed(t)
	load.more(t, 50)
	load.finish(t)
	committed := load.committed.Load()
	e := backupListing(t, repoDir)[0]
	backupSeq := seqOf(t, e.Positions.GTID)
	if backupSeq <= startSeq || backupSeq >= startSeq+committed {
		t.Fatalf("backup GTID %s is not inside the load (load from seq %d, %d transfers); the test proves nothing", e.Positions.GTID, startSeq, committed)
	}

	target := filepath.Join(t.TempDir(), "datadir")
	run(t, "restore", e.ID, "--repo", repoDir, "--target-dir", target, "--prepare").mustSucceed(t)
	dst := serverOn(t, target)
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
		t.Errorf("restored %d transfers, but the backup's GTID %s says %d", transfers, e.Positions.GTID, backupSeq-startSeq)
	}
	var maxID int64
	dst.DB().QueryRowContext(ctx, "SELECT COALESCE(MAX(id),0) FROM bank.transfers").Scan(&maxID)
	if maxID != transfers {
		t.Errorf("transfers have gaps: max id %d, count %d", maxID, transfers)
	}
}

func gtidSeq(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	var pos string
	if err := db.QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
		t.Fatal(err)
	}
	return seqOf(t, pos)
}

// seqOf returns the sequence number of a single-domain GTID position "0-1-42".
func seqOf(t *testing.T, gtid string) int64 {
	t.Helper()
	parts := strings.Split(gtid, "-")
	n, err := strconv.ParseInt(parts[len(parts)-1], 10, 64)
	if len(parts) != 3 || err != nil {
		t.Fatalf("GTID position %q is not a single-domain position", gtid)
	}
	return n
}
