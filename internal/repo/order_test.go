package repo_test

import (
	"context"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/repo/repotest"
)

// Backup ids record the start to the second, and their random suffixes
// order backups made within one second at random. Listing, latest and so
// the parent of a new incremental follow the order in which backups were
// committed instead.
func TestBackupsWithinOneSecondInCommitOrder(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	second := time.Date(2026, 11, 21, 19, 5, 12, 0, time.UTC)
	// Committed in this order, their suffixes in the reverse one.
	ids := []string{"20261121T190512Z-ffff", "20261121T190512Z-8000", "20261121T190512Z-0000"}
	for i, id := range ids {
		repotest.Store(t, r, repotest.Backup{ID: id, Files: map[string]string{"f": id},
			Finished: second.Add(time.Duration(i+1) * 100 * time.Millisecond)})
	}
	ms, err := r.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.ID)
	}
	if len(got) != 3 || got[0] != ids[0] || got[1] != ids[1] || got[2] != ids[2] {
		t.Errorf("List: %v, want the commit order %v", got, ids)
	}
	entries, err := r.Scan(ctx)
	if err != nil || len(entries) != 3 || entries[2].ID != ids[2] {
		t.Errorf("Scan: %v, %v; want %s last", entries, err, ids[2])
	}
	if m, err := r.Resolve(ctx, "latest"); err != nil || m.ID != ids[2] {
		t.Errorf("latest: %v, %v; want %s, the last committed", m, err, ids[2])
	}
}
