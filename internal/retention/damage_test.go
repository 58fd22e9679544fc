package retention

import (
	"context"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repo/repotest"
)

// A damaged manifest neither stops expire nor gets its backup deleted,
// even with --prune-incomplete: the other backups are planned and deleted
// as the rules say.
func TestRunKeepsDamaged(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	ids := []string{"20261118T030000Z-0001", "20261119T030000Z-0002", "20261120T030000Z-0003", "20261121T030000Z-0004"}
	for _, id := range ids {
		repotest.Store(t, r, repotest.Backup{ID: id, Files: map[string]string{"f": id}})
	}
	damaged := ids[1]
	repotest.DamageManifest(t, r, damaged)

	out, err := Run(ctx, r, Request{Policy: Policy{KeepLast: 1}, PruneIncomplete: true, Confirm: true, Now: now})
	if err != nil {
		t.Fatalf("expire failed because of one damaged manifest: %v", err)
	}
	deleted := map[string]bool{}
	for _, e := range out.Entries {
		if e.ID == damaged && (!e.Keep || e.Deleted || e.Damaged == "" || len(e.Reasons) != 1 || e.Reasons[0] != keepDamaged) {
			t.Errorf("damaged backup: %+v; want it kept, with the damage and why", e)
		}
		if e.Deleted {
			deleted[e.ID] = true
		}
	}
	if !deleted[ids[0]] || !deleted[ids[2]] || deleted[ids[3]] || deleted[damaged] {
		t.Fatalf("deleted %v; want %s and %s only", deleted, ids[0], ids[2])
	}
	if !exists(t, r, repo.Dir(damaged)+"/"+repo.ManifestName) {
		t.Fatal("the damaged backup's manifest was deleted")
	}
	entries, err := r.Scan(ctx)
	if err != nil || len(entries) != 2 {
		t.Fatalf("after expire: %+v, %v; want the damaged and the newest backup", entries, err)
	}
}
