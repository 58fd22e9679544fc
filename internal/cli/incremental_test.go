package cli

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// A chain of a full and three incrementals taken under a write load
// restores, in one command, to a server whose CHECKSUM TABLE equals the
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
	createBank(t, db, accounts, initial, 200000, "CONCAT(SHA2(seq, 512), SHA2(-seq, 256))",
		"SET GLOBAL innodb_max_dirty_pages_pct = 0")
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var name string
		var age int64
		if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_checkpoint_age'").Scan(&name, &age); err != nil || age < 1<<20 {
			break
		}
	}
	load := startLoad(1, func(rng *rand.Rand) error {
		return transfer(ctx, db, "bank.accounts", "bank.accounts", rng.IntN(accounts)+1, rng.IntN(accounts)+1, rng.IntN(50)+1)
	})
	repoDir := filepath.Join(t.TempDir(), "repo")
	backup := func() result {
		return run(t, append([]string{"backup", "--repo", repoDir, "--incremental", "--parallel", "2"}, sandboxConn(src)...)...).mustSucceed(t)
	}
	load.more(t, 50)
	if r := backup(); !strings.Contains(r.stderr, "taking a full backup") || !strings.Contains(r.stdout, "full") {
		t.Errorf("first --incremental backup: stdout %q stderr %q; want a full backup and the reason", r.stdout, r.stderr)
	}
	for range 2 {
		load.more(t, 100)
		backup()
	}
	load.finish(t)
	want := checksums(t, src)
	if r := backup(); !strings.Contains(r.stdout, "depth 3") {
		t.Errorf("fourth backup printed %q, want depth 3", r.stdout)
	}

	entries := backupListing(t, repoDir)
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
	run(t, "verify", "--repo", repoDir).mustSucceed(t)

	// Without --prepare an increment cannot be applied: refused.
	r := run(t, "restore", "--repo", repoDir, "--target-dir", filepath.Join(t.TempDir(), "x"))
	if r.code == ExitOK || !strings.Contains(r.err.Error(), "--prepare") {
		t.Errorf("restore of an incremental without --prepare: exit %d, %v", r.code, r.err)
	}

	target := filepath.Join(t.TempDir(), "datadir")
	run(t, "restore", "--repo", repoDir, "--target-dir", target, "--prepare").mustSucceed(t)
	if left, _ := filepath.Glob(target + ".increment-*"); len(left) != 0 {
		t.Errorf("increment directories left: %v", left)
	}
	compareChecksums(t, checksums(t, serverOn(t, target)), want)
	if rep, res := restoreTestReport(t, repoDir, "latest"); res.code != ExitOK || !rep.Passed || len(rep.Chain) != 3 {
		t.Errorf("restore test of the chain: exit %d, passed %v, chain %v, problems %q", res.code, rep.Passed, rep.Chain, rep.Problems)
	}

	// A missing link: the chain is refused, naming it, and nothing is left.
	os.Remove(filepath.Join(repoDir, "backups", entries[1].ID, "manifest.json"))
	broken := filepath.Join(t.TempDir(), "broken")
	r = run(t, "restore", "--repo", repoDir, "--target-dir", broken, "--prepare")
	if r.code == ExitOK || !strings.Contains(r.err.Error(), entries[1].ID) || !strings.Contains(r.err.Error(), "broken") {
		t.Errorf("restore over a missing link: exit %d, %v; want an error naming %s", r.code, r.err, entries[1].ID)
	}
	if _, err := os.Stat(broken); err == nil {
		t.Errorf("a refused restore left %s", broken)
	}
}

// An incremental on a backup of another server is refused, naming both.
func TestIncrementalParentFromAnotherServer(t *testing.T) {
	t.Parallel()
	a := sandboxtest.Start(t, sandbox.Options{})
	b := sandboxtest.Start(t, sandbox.Options{})
	repoDir := filepath.Join(t.TempDir(), "repo")
	run(t, append([]string{"backup", "--repo", repoDir}, sandboxConn(a)...)...).mustSucceed(t)
	other := backupListing(t, repoDir)[0].ID

	// --incremental alone picks a backup of this server: b has none, so full.
	r := run(t, append([]string{"backup", "--repo", repoDir, "--incremental"}, sandboxConn(b)...)...).mustSucceed(t)
	if !strings.Contains(r.stdout, "full") {
		t.Errorf("--incremental with only another server's backup: %q, want a full backup", r.stdout)
	}
	r = run(t, append([]string{"backup", "--repo", repoDir, "--incremental", "--parent", other}, sandboxConn(b)...)...)
	if r.code == ExitOK || !strings.Contains(r.err.Error(), other) || !strings.Contains(r.err.Error(), "not of this one") {
		t.Errorf("incremental on another server's backup: exit %d, %v", r.code, r.err)
	}
	if n := len(backupListing(t, repoDir)); n != 2 {
		t.Errorf("%d backups after a refused incremental, want 2", n)
	}
}
