package cli

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// merge builds a full backup from a chain taken under writes: restored
// (prepared or not) it equals the chain's end, the restore test passes on
// it, an incremental builds on it and restores to the source's newer
// state, and what cannot be merged is refused.
func TestMerge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	db := src.DB()
	const accounts, initial = 500, 1000
	usecasetest.CreateBank(t, db, accounts, initial, 50000, "SHA2(seq, 512)")
	load := usecasetest.StartLoad(1, func(rng *rand.Rand) error {
		return usecasetest.Transfer(ctx, db, "bank.accounts", "bank.accounts", rng.IntN(accounts)+1, rng.IntN(accounts)+1, rng.IntN(50)+1)
	})
	repoDir := newRepoDir(t)
	backup := func(flags ...string) result {
		return run(t, append(append([]string{"backup", "--repo", repoDir, "--parallel", "2"}, flags...), sandboxConn(src)...)...).mustSucceed(t)
	}
	load.More(t, 50)
	backup()
	load.More(t, 100)
	backup("--incremental")
	load.More(t, 100)
	load.Finish(t)
	want := usecasetest.Checksums(t, src)
	backup("--incremental")
	chain := backupListing(t, repoDir)
	if len(chain) != 3 || chain[2].Depth != 2 {
		t.Fatalf("%d backups, the newest at depth %d; want a full and two incrementals", len(chain), chain[len(chain)-1].Depth)
	}

	// A full backup is no chain.
	if r := run(t, "merge", chain[0].ID, "--repo", repoDir); r.code != ExitUsage || !strings.Contains(r.err.Error(), "is a full backup: there is no chain to merge") {
		t.Errorf("merge of a full backup: exit %d, %v", r.code, r.err)
	}

	work := t.TempDir()
	r := run(t, "merge", "--repo", repoDir, "--parallel", "2", "--work-dir", work).mustSucceed(t)
	if want := "merged from " + chain[0].ID + " + " + chain[1].ID + " + " + chain[2].ID; !strings.Contains(r.stdout, want) {
		t.Errorf("merge printed %q, want %q", r.stdout, want)
	}
	if left, _ := filepath.Glob(filepath.Join(work, "*")); len(left) != 0 {
		t.Errorf("merge left %v in its work directory", left)
	}
	entries := backupListing(t, repoDir)
	if len(entries) != 4 {
		t.Fatalf("%d backups after merge, want 4", len(entries))
	}
	var merged inventory.Backup
	for _, e := range entries {
		if len(e.MergedFrom) > 0 {
			merged = e
		}
	}
	switch {
	case merged.ID == "":
		t.Fatalf("no backup lists merged_from: %+v", entries)
	case merged.Parent != "" || merged.Depth != 0 || merged.Chain != merged.ID:
		t.Errorf("the merged backup has parent %q, depth %d, chain %q; want a full backup", merged.Parent, merged.Depth, merged.Chain)
	case !slices.Equal(merged.MergedFrom, []string{chain[0].ID, chain[1].ID, chain[2].ID}):
		t.Errorf("merged_from %v", merged.MergedFrom)
	case merged.Positions != func() archive.Positions {
		// Prepared: every change up to the end's last_lsn is in the pages.
		p := chain[2].Positions
		p.FromLSN, p.ToLSN = 0, p.LastLSN
		return p
	}():
		t.Errorf("merged positions %+v, the chain's end %+v", merged.Positions, chain[2].Positions)
	case !merged.Finished.Equal(chain[2].Finished):
		t.Errorf("merged backup finished %v, the chain's end %v", merged.Finished, chain[2].Finished)
	}
	// It lists the chain end's tables, whose files it holds (verify checks).
	if got, end := usecasetest.ReadManifest(t, repoDir, merged.ID).Tables, usecasetest.ReadManifest(t, repoDir, chain[2].ID).Tables; len(got) == 0 || !slices.EqualFunc(got, end, func(a, b archive.Table) bool {
		return a.Name == b.Name && slices.Equal(a.Files, b.Files)
	}) || !slices.ContainsFunc(got, func(tb archive.Table) bool { return tb.Name == "bank.accounts" }) {
		t.Errorf("the merged backup lists tables %v, the chain's end %v", got, end)
	}
	run(t, "verify", merged.ID, "--repo", repoDir).mustSucceed(t)

	prepared := filepath.Join(t.TempDir(), "prepared")
	run(t, "restore", merged.ID, "--repo", repoDir, "--target-dir", prepared, "--prepare").mustSucceed(t)
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, usecasetest.ServerOn(t, prepared)), want)
	// Stored prepared, it starts a server as it is.
	asIs := filepath.Join(t.TempDir(), "as-is")
	run(t, "restore", merged.ID, "--repo", repoDir, "--target-dir", asIs).mustSucceed(t)
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, usecasetest.ServerOn(t, asIs)), want)
	if rep, res := restoreTestReport(t, repoDir, merged.ID); res.code != ExitOK || !rep.Passed {
		t.Errorf("restore test of the merged backup: exit %d, passed %v, problems %q", res.code, rep.Passed, rep.Problems)
	}

	// The merged backup is the newest (it comes after the chain it copies):
	// a new incremental builds on it, and restores to the newer state.
	if _, err := db.ExecContext(ctx, "UPDATE bank.accounts SET balance = balance + 1 WHERE id % 7 = 0"); err != nil {
		t.Fatal(err)
	}
	newer := usecasetest.Checksums(t, src)
	if r := backup("--incremental"); !strings.Contains(r.stdout, "incremental on "+merged.ID) {
		t.Errorf("incremental on the merged backup printed %q", r.stdout)
	}
	onMerged := filepath.Join(t.TempDir(), "on-merged")
	run(t, "restore", "latest", "--repo", repoDir, "--target-dir", onMerged, "--prepare").mustSucceed(t)
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, usecasetest.ServerOn(t, onMerged)), newer)

	// An encrypted chain merges only into an encrypted backup.
	pass := filepath.Join(t.TempDir(), "pass")
	if err := os.WriteFile(pass, []byte("correct horse battery staple\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	encRepo := newRepoDir(t)
	for _, flags := range [][]string{nil, {"--incremental"}} {
		run(t, append(append([]string{"backup", "--repo", encRepo, "--parallel", "2", "--encrypt", "--passphrase-file", pass}, flags...), sandboxConn(src)...)...).mustSucceed(t)
	}
	if r := run(t, "merge", "--repo", encRepo, "--passphrase-file", pass); r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), "merge it with --encrypt") {
		t.Errorf("merge of an encrypted chain without --encrypt: exit %d, %v", r.code, r.err)
	}
	run(t, "merge", "--repo", encRepo, "--encrypt", "--passphrase-file", pass).mustSucceed(t)
	var encMerged string
	for _, e := range backupListing(t, encRepo, "--passphrase-file", pass) {
		if len(e.MergedFrom) > 0 {
			encMerged = e.ID
		}
	}
	manifest, err := os.ReadFile(filepath.Join(encRepo, "backups", encMerged, "manifest.json"))
	if err != nil || !strings.Contains(string(manifest), `"encryption"`) {
		t.Errorf("the merged backup of an encrypted chain records no encryption (%v):\n%.400s", err, manifest)
	}
	encTarget := filepath.Join(t.TempDir(), "encrypted-merged")
	run(t, "restore", encMerged, "--repo", encRepo, "--passphrase-file", pass, "--target-dir", encTarget, "--prepare").mustSucceed(t)
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, usecasetest.ServerOn(t, encTarget)), newer)
}
