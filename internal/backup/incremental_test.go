package backup_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// A chain of a full and three incrementals taken under a write load
// restores, in one restore, to a server whose CHECKSUM TABLE equals the
// source's when the last incremental was taken (the load stopped before
// it); an incremental after small changes is a fraction of the full.
func TestIncrementalChain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	db := src.DB()
	const accounts, initial = 1000, 1000
	// Bulk that does not compress away, so that a full backup is mostly
	// data, as in life; then flushed, so that the redo log a backup copies
	// (from the last checkpoint) does not carry the whole load again in
	// every link.
	usecasetest.CreateBank(t, db, accounts, initial, 200000, "CONCAT(SHA2(seq, 512), SHA2(-seq, 256))",
		"SET GLOBAL innodb_max_dirty_pages_pct = 0")
	usecasetest.WaitCheckpoint(t, db)
	load := usecasetest.StartLoad(1, func(rng *rand.Rand) error {
		return usecasetest.Transfer(ctx, db, "bank.accounts", "bank.accounts", rng.IntN(accounts)+1, rng.IntN(accounts)+1, rng.IntN(50)+1)
	})
	repo := usecasetest.NewLocalRepo(t)
	// take is `backup --incremental`; fullBecause is what it says when it
	// takes a full backup instead ("" when it did not).
	take := func() (*backup.Result, string) {
		t.Helper()
		fullBecause := ""
		req := usecasetest.BackupOf(t, repo, src)
		req.Physical.Incremental = &backup.Incremental{FullBecause: func(why string) { fullBecause = why }}
		res := usecasetest.Backup(t, req)
		return res, fullBecause
	}
	load.More(t, 50)
	if res, why := take(); why == "" || res.Manifest.Parent != "" || res.Manifest.Depth != 0 {
		t.Errorf("first incremental backup: parent %q, depth %d, full because %q; want a full backup and the reason",
			res.Manifest.Parent, res.Manifest.Depth, why)
	}
	for range 2 {
		load.More(t, 100)
		take()
	}
	load.Finish(t)
	want := usecasetest.Checksums(t, src)
	if res, why := take(); res.Manifest.Parent == "" || res.Manifest.Depth != 3 || why != "" {
		t.Errorf("fourth backup: parent %q, depth %d, full because %q; want an incremental at depth 3", res.Manifest.Parent, res.Manifest.Depth, why)
	}

	entries := usecasetest.List(t, repo)
	if len(entries) != 4 {
		t.Fatalf("%d backups, want 4", len(entries))
	}
	full := entries[0]
	for i, e := range entries {
		if e.Depth != i || e.Chain != full.ID || (i > 0 && e.Parent != entries[i-1].ID) {
			t.Errorf("link %d: depth %d chain %s parent %s", i, e.Depth, e.Chain, e.Parent)
		}
		t.Logf("link %d: %s stored %d bytes", i, e.ID, e.StoredBytes)
	}
	if last := entries[3]; last.StoredBytes*4 > full.StoredBytes {
		t.Errorf("incremental after small changes stores %d bytes, the full %d: not much smaller", last.StoredBytes, full.StoredBytes)
	}
	if err := usecasetest.Verify(t, repo, "latest"); err != nil {
		t.Fatalf("verify: %v", err)
	}

	// Without prepare an increment cannot be applied: refused.
	r := usecasetest.RestoreOf(repo, "")
	r.Restore.TargetDir = filepath.Join(t.TempDir(), "x")
	if _, err := restorecase.Run(ctx, r); err == nil || !strings.Contains(err.Error(), "--prepare") {
		t.Errorf("restore of an incremental without prepare: %v; want a refusal naming --prepare", err)
	}

	target := filepath.Join(t.TempDir(), "datadir")
	r = usecasetest.RestoreOf(repo, "")
	r.Restore.TargetDir, r.Restore.Options.Prepare = target, true
	usecasetest.Restore(t, r)
	if left, _ := filepath.Glob(target + ".increment-*"); len(left) != 0 {
		t.Errorf("increment directories left: %v", left)
	}
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, usecasetest.ServerOn(t, target)), want)
	if rep, err := usecasetest.RestoreTest(t, repo, "latest"); err != nil || !rep.Passed || len(rep.Chain) != 3 {
		if rep == nil {
			t.Fatalf("restore test of the chain: %v", err)
		}
		t.Errorf("restore test of the chain: %v, passed %v, chain %v, problems %q", err, rep.Passed, rep.Chain, rep.Problems)
	}

	// A missing link: the chain is refused, naming it, and nothing is left.
	if err := os.Remove(filepath.Join(repo.Location, "backups", entries[1].ID, "manifest.json")); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(t.TempDir(), "broken")
	r = usecasetest.RestoreOf(repo, "")
	r.Restore.TargetDir, r.Restore.Options.Prepare = broken, true
	if _, err := restorecase.Run(ctx, r); err == nil || !strings.Contains(err.Error(), entries[1].ID) || !strings.Contains(err.Error(), "broken") {
		t.Errorf("restore over a missing link: %v; want an error naming %s", err, entries[1].ID)
	}
	if _, err := os.Stat(broken); err == nil {
		t.Errorf("a refused restore left %s", broken)
	}
}

// On a server whose checkpoint lags (a large redo log, a bulk load that
// stays dirty in the buffer pool), incrementals hold what changed since
// their parent, not every page written since its checkpoint: after no
// change, an incremental's page deltas are a hundredth of the full's data,
// and with Checkpoint (so that its redo log is small too) the whole
// incremental is; after 1% of the rows changed,
// clustered, a tenth. Rows changed between the full's checkpoint and its
// end (the bulk, and transfers running during the full) are taken from the
// full, which its own redo log rebuilds: the chain restores equal to the
// source.
func TestIncrementalOnLaggingCheckpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{BufferPool: "512M",
		Args: []string{"--innodb-log-file-size=1G", "--innodb-max-dirty-pages-pct=90"}})
	db := src.DB()
	const accounts, rows = 1000, 800000
	// Bulk that does not compress, as in the measure (a full of
	// 863 MB), so that sizes compare data, not the few system files
	// every backup copies whole.
	usecasetest.CreateBank(t, db, accounts, 1000, 0, "''",
		"CREATE TABLE bank.bulk (id INT PRIMARY KEY, pad VARBINARY(100)) ENGINE=InnoDB",
		fmt.Sprintf("INSERT INTO bank.bulk SELECT seq, CONCAT(UNHEX(SHA2(seq, 512)), UNHEX(SHA2(-seq, 256))) FROM bank.seq_1_to_%d", rows))
	repo := usecasetest.NewLocalRepo(t)
	// take is `backup --incremental`, with --checkpoint if checkpoint: it
	// returns the backup made as the repository lists it.
	take := func(checkpoint bool) inventory.Backup {
		t.Helper()
		req := usecasetest.BackupOf(t, repo, src)
		req.Physical.Incremental, req.Physical.Checkpoint = &backup.Incremental{}, checkpoint
		made := usecasetest.Backup(t, req).Manifest
		entries := usecasetest.List(t, repo)
		if last := entries[len(entries)-1]; last.ID != made.ID {
			t.Fatalf("the repository lists %s last, not the backup made, %s", last.ID, made.ID)
		}
		return entries[len(entries)-1]
	}
	load := usecasetest.StartLoad(1, func(rng *rand.Rand) error {
		return usecasetest.Transfer(ctx, db, "bank.accounts", "bank.accounts", rng.IntN(accounts)+1, rng.IntN(accounts)+1, rng.IntN(50)+1)
	})
	load.More(t, 20)
	full := take(false)
	load.Finish(t)
	p := full.Positions
	t.Logf("full %s: to_lsn %d last_lsn %d, stored %d bytes, raw %d", full.ID, p.ToLSN, p.LastLSN, full.StoredBytes, full.RawBytes)
	if p.LastLSN-p.ToLSN < 50<<20 {
		t.Fatalf("the full's checkpoint (to_lsn %d) is only %d bytes of redo behind its end (last_lsn %d): the test needs one that lags", p.ToLSN, p.LastLSN-p.ToLSN, p.LastLSN)
	}

	// No change, the checkpoint still where it was: the link starts at the
	// full's end, though its own to_lsn is the old checkpoint.
	quiet := take(false)
	t.Logf("no change: %s stored %d bytes, positions %+v", quiet.ID, quiet.StoredBytes, quiet.Positions)
	if quiet.Positions.FromLSN != p.LastLSN {
		t.Errorf("incremental on %s starts at from_lsn %d, want its last_lsn %d", full.ID, quiet.Positions.FromLSN, p.LastLSN)
	}

	// No change, the checkpoint advanced first.
	flushed := take(true)
	t.Logf("no change, checkpoint first: %s stored %d bytes, positions %+v", flushed.ID, flushed.StoredBytes, flushed.Positions)
	if flushed.StoredBytes*100 > full.StoredBytes {
		t.Errorf("incremental after no change (checkpoint first) stores %d bytes, the full %d: more than 1%%", flushed.StoredBytes, full.StoredBytes)
	}

	// 1% of the rows, clustered.
	if _, err := db.ExecContext(ctx, fmt.Sprintf("UPDATE bank.bulk SET pad = CONCAT(UNHEX(SHA2(-id, 512)), UNHEX(SHA2(id, 256))) WHERE id BETWEEN %d AND %d", rows/2+1, rows/2+rows/100)); err != nil {
		t.Fatal(err)
	}
	changed := take(true)
	t.Logf("1%% changed: %s stored %d bytes", changed.ID, changed.StoredBytes)
	if changed.StoredBytes*10 > full.StoredBytes {
		t.Errorf("incremental after 1%% of the rows changed stores %d bytes, the full %d: more than 10%%", changed.StoredBytes, full.StoredBytes)
	}
	if changed.Depth != 3 {
		t.Errorf("last incremental at depth %d, want 3", changed.Depth)
	}

	want := usecasetest.Checksums(t, src)
	target := filepath.Join(t.TempDir(), "datadir")
	r := usecasetest.RestoreOf(repo, "")
	r.Restore.TargetDir, r.Restore.Options.Prepare = target, true
	usecasetest.Restore(t, r)
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, usecasetest.ServerOn(t, target)), want)
}
