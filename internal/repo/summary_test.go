package repo_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repo/repotest"
)

// A listing reads each backup's summary, not its manifest: a manifest
// overwritten with as many bytes of garbage still lists (the listing
// never read it), while resolving the backup reads the whole manifest and
// finds the damage, naming the object. A manifest of another size is
// damage the listing shows.
func TestScanReadsSummaries(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	a := repotest.Store(t, r, repotest.Backup{ID: "20261118T030000Z-0001", Files: map[string]string{"f": "a", "g": "b"}})
	b := repotest.Store(t, r, repotest.Backup{ID: "20261119T030000Z-0002", Files: map[string]string{"f": "c"}})
	manifest := repo.Dir(a.ID) + "/" + repo.ManifestName
	repotest.PutObject(t, r, manifest, bytes.Repeat([]byte("x"), len(repotest.Object(t, r, manifest))))

	ms, err := r.List(ctx)
	if err != nil || len(ms) != 2 {
		t.Fatalf("List: %v, %v; want both backups", ms, err)
	}
	for _, m := range ms {
		if !m.IsSummary() || len(m.Files) != 0 {
			t.Errorf("%s: listed as a whole manifest", m.ID)
		}
	}
	if ms[0].FileCount() != 2 || ms[1].FileCount() != 1 {
		t.Errorf("file counts %d and %d, want 2 and 1", ms[0].FileCount(), ms[1].FileCount())
	}
	if _, err := r.Resolve(ctx, a.ID[:20]); !archive.IsCorrupt(err) || !strings.Contains(err.Error(), manifest) {
		t.Errorf("Resolve of the garbled manifest: %v; want damage naming %s", err, manifest)
	}
	m, err := r.Resolve(ctx, "latest")
	if err != nil || m.IsSummary() || len(m.Files) != 1 || m.ID != b.ID {
		t.Fatalf("latest: %+v, %v; want the whole manifest of %s", m, err, b.ID)
	}

	// Truncated: the listing sees it by the object's size.
	repotest.PutObject(t, r, manifest, []byte("{"))
	entries, err := r.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e := entries[0]; e.Damage == nil || !archive.IsCorrupt(e.Damage) || !strings.Contains(e.Damage.Error(), manifest) || e.Manifest != nil {
		t.Errorf("a truncated manifest: %+v; want damage naming %s", e, manifest)
	}
}

// A summary that is damaged, or that does not agree with its manifest,
// is damage verify names (CheckSummary); a listing falls back to the
// manifest when the summary does not parse, and resolving a backup by
// the summary finds that it does not agree.
func TestSummaryDamage(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	m := repotest.Store(t, r, repotest.Backup{ID: "20261118T030000Z-0001", Files: map[string]string{"f": "a"}})
	summary := repo.Dir(m.ID) + "/" + repo.SummaryName
	if err := r.CheckSummary(ctx, m); err != nil {
		t.Fatalf("CheckSummary of a sound backup: %v", err)
	}
	stored := repotest.Object(t, r, summary)

	repotest.PutObject(t, r, summary, stored[:len(stored)/2])
	if err := r.CheckSummary(ctx, m); !archive.IsCorrupt(err) || !strings.Contains(err.Error(), summary) {
		t.Errorf("CheckSummary of a truncated summary: %v; want damage naming %s", err, summary)
	}
	ms, err := r.List(ctx)
	if err != nil || len(ms) != 1 || !ms[0].IsSummary() || ms[0].FileCount() != 1 {
		t.Errorf("List with the summary truncated: %+v, %v; want the backup, summarized from its manifest", ms, err)
	}

	// A sealed summary saying something else of the backup.
	forged, err := archive.ParseManifest(stored)
	if err != nil {
		t.Fatal(err)
	}
	forged.Positions.ToLSN++
	data, err := forged.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	repotest.PutObject(t, r, summary, data)
	if err := r.CheckSummary(ctx, m); !archive.IsCorrupt(err) || !strings.Contains(err.Error(), summary) {
		t.Errorf("CheckSummary of a summary that disagrees: %v; want damage naming %s", err, summary)
	}
	if _, err := r.Resolve(ctx, "latest"); !archive.IsCorrupt(err) || !strings.Contains(err.Error(), summary) {
		t.Errorf("latest by a summary that disagrees: %v; want damage naming %s", err, summary)
	}

	// A backup stored before summaries existed has none: it lists from
	// its manifest, and that is no damage.
	if err := r.Backend.Delete(ctx, summary); err != nil {
		t.Fatal(err)
	}
	if err := r.CheckSummary(ctx, m); err != nil {
		t.Errorf("CheckSummary without a summary: %v", err)
	}
	if got, err := r.Resolve(ctx, "latest"); err != nil || got.ID != m.ID || got.IsSummary() {
		t.Errorf("latest without a summary: %v, %v", got, err)
	}
}
