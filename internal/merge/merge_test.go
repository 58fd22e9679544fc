package merge_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/merge"
	"github.com/backstream/backstream/internal/repoaccess"
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
	r := usecasetest.NewLocalRepo(t)
	// take is `backup`, with --incremental if incremental.
	take := func(incremental bool) *backup.Result {
		t.Helper()
		req := usecasetest.BackupOf(t, r, src)
		if incremental {
			req.Physical.Incremental = &backup.Incremental{}
		}
		return usecasetest.Backup(t, req)
	}
	load.More(t, 50)
	take(false)
	load.More(t, 100)
	take(true)
	load.More(t, 100)
	load.Finish(t)
	want := usecasetest.Checksums(t, src)
	take(true)
	chain := usecasetest.List(t, r)
	if len(chain) != 3 || chain[2].Depth != 2 {
		t.Fatalf("%d backups, the newest at depth %d; want a full and two incrementals", len(chain), chain[len(chain)-1].Depth)
	}

	// A full backup is no chain.
	if _, err := usecasetest.Merge(t, r.Access(), chain[0].ID, withWorkDir("")); !usecasetest.Refused(err) || !strings.Contains(err.Error(), "is a full backup: there is no chain to merge") {
		t.Errorf("merge of a full backup: %v; want a refusal", err)
	}

	work := t.TempDir()
	made, err := usecasetest.Merge(t, r.Access(), "latest", withWorkDir(work))
	if err != nil {
		t.Fatalf("merge: %v", err)
	}
	// What merge prints, "merged from" the chain, base first.
	if want := []string{chain[0].ID, chain[1].ID, chain[2].ID}; !slices.Equal(made.MergedFrom, want) {
		t.Errorf("merge made a backup merged from %v, want %v", made.MergedFrom, want)
	}
	if left, _ := filepath.Glob(filepath.Join(work, "*")); len(left) != 0 {
		t.Errorf("merge left %v in its work directory", left)
	}
	entries := usecasetest.List(t, r)
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
	case merged.ID != made.ID:
		t.Errorf("the repository lists %s as merged, merge made %s", merged.ID, made.ID)
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
	if got, end := usecasetest.ReadManifest(t, r.Location, merged.ID).Tables, usecasetest.ReadManifest(t, r.Location, chain[2].ID).Tables; len(got) == 0 || !slices.EqualFunc(got, end, func(a, b archive.Table) bool {
		return a.Name == b.Name && slices.Equal(a.Files, b.Files)
	}) || !slices.ContainsFunc(got, func(tb archive.Table) bool { return tb.Name == "bank.accounts" }) {
		t.Errorf("the merged backup lists tables %v, the chain's end %v", got, end)
	}
	if err := usecasetest.Verify(t, r, merged.ID); err != nil {
		t.Fatalf("verify of the merged backup: %v", err)
	}

	prepared := filepath.Join(t.TempDir(), "prepared")
	req := usecasetest.RestoreOf(r, merged.ID)
	req.Restore.TargetDir, req.Restore.Options.Prepare = prepared, true
	usecasetest.Restore(t, req)
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, usecasetest.ServerOn(t, prepared)), want)
	// Stored prepared, it starts a server as it is.
	asIs := filepath.Join(t.TempDir(), "as-is")
	req = usecasetest.RestoreOf(r, merged.ID)
	req.Restore.TargetDir = asIs
	usecasetest.Restore(t, req)
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, usecasetest.ServerOn(t, asIs)), want)
	if rep, err := usecasetest.RestoreTest(t, r, merged.ID); err != nil || !rep.Passed {
		if rep == nil {
			t.Fatalf("restore test of the merged backup: %v", err)
		}
		t.Errorf("restore test of the merged backup: %v, passed %v, problems %q", err, rep.Passed, rep.Problems)
	}

	// The merged backup is the newest (it comes after the chain it copies):
	// a new incremental builds on it, and restores to the newer state.
	if _, err := db.ExecContext(ctx, "UPDATE bank.accounts SET balance = balance + 1 WHERE id % 7 = 0"); err != nil {
		t.Fatal(err)
	}
	newer := usecasetest.Checksums(t, src)
	if res := take(true); res.Manifest.Parent != merged.ID || res.Manifest.Depth != 1 {
		t.Errorf("incremental after the merge: parent %q, depth %d; want an incremental on %s", res.Manifest.Parent, res.Manifest.Depth, merged.ID)
	}
	onMerged := filepath.Join(t.TempDir(), "on-merged")
	req = usecasetest.RestoreOf(r, "")
	req.Restore.TargetDir, req.Restore.Options.Prepare = onMerged, true
	usecasetest.Restore(t, req)
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, usecasetest.ServerOn(t, onMerged)), newer)

	// An encrypted chain merges only into an encrypted backup.
	pass := filepath.Join(t.TempDir(), "pass")
	if err := os.WriteFile(pass, []byte("correct horse battery staple\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keys := repoaccess.KeyFiles{PassphraseFile: pass}
	enc := usecasetest.NewLocalRepo(t)
	for _, incremental := range []bool{false, true} {
		req := usecasetest.Encrypted(t, enc, usecasetest.BackupOf(t, enc, src), keys)
		if incremental {
			req.Physical.Incremental = &backup.Incremental{}
		}
		usecasetest.Backup(t, req)
	}
	if _, err := usecasetest.Merge(t, enc.AccessWith(keys), "latest", withWorkDir("")); !usecasetest.Refused(err) || !strings.Contains(err.Error(), "merge it with --encrypt") {
		t.Errorf("merge of an encrypted chain without --encrypt: %v; want a refusal", err)
	}
	encrypt := enc.AccessWith(keys)
	encrypt.Encrypt = true
	encMade, err := usecasetest.Merge(t, encrypt, "latest", withWorkDir(""))
	if err != nil {
		t.Fatalf("merge --encrypt: %v", err)
	}
	var encMerged string
	for _, e := range usecasetest.List(t, enc) {
		if len(e.MergedFrom) > 0 {
			encMerged = e.ID
		}
	}
	if encMerged != encMade.ID {
		t.Errorf("the encrypted repository lists %q as merged, merge made %s", encMerged, encMade.ID)
	}
	manifest, err := os.ReadFile(filepath.Join(enc.Location, "backups", encMerged, "manifest.json"))
	if err != nil || !strings.Contains(string(manifest), `"encryption"`) {
		t.Errorf("the merged backup of an encrypted chain records no encryption (%v):\n%.400s", err, manifest)
	}
	encTarget := filepath.Join(t.TempDir(), "encrypted-merged")
	req = usecasetest.RestoreOf(enc, encMerged)
	req.Deferred.Open = enc.AccessWith(keys).Open
	req.Restore.TargetDir, req.Restore.Options.Prepare = encTarget, true
	usecasetest.Restore(t, req)
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, usecasetest.ServerOn(t, encTarget)), newer)
}

// withWorkDir is merge's job as `merge --parallel 2 --work-dir dir` sets it.
func withWorkDir(dir string) func(*merge.Job) {
	return func(j *merge.Job) { j.WorkDir, j.Parallel, j.Restore.Workers = dir, 2, 2 }
}
