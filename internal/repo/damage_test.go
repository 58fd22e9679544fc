package repo_test

import (
	"context"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repo/repotest"
)

// A damaged manifest affects only its own backup: the listing marks it,
// latest skips it, resolving it or a chain through it is damage naming
// the object, and every other backup stays listed and resolvable.
func TestDamagedManifestIsContained(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	full := repotest.Store(t, r, repotest.Backup{ID: "20261118T030000Z-0001", Files: map[string]string{"f": "a"}})
	inc := repotest.Store(t, r, repotest.Backup{ID: "20261119T030000Z-0002", Parent: full, Files: map[string]string{"f.delta": "b"}})
	inc2 := repotest.Store(t, r, repotest.Backup{ID: "20261120T030000Z-0003", Parent: inc, Files: map[string]string{"f.delta": "c"}})
	newest := repotest.Store(t, r, repotest.Backup{ID: "20261121T030000Z-0004", Files: map[string]string{"f": "d"}})
	repotest.DamageManifest(t, r, inc.ID)
	repotest.DamageManifest(t, r, newest.ID)
	object := repo.Dir(inc.ID) + "/" + repo.ManifestName

	entries, err := r.Scan(ctx)
	if err != nil {
		t.Fatalf("Scan failed as a whole: %v", err)
	}
	if len(entries) != 4 {
		t.Fatalf("Scan: %d entries, want 4", len(entries))
	}
	for _, e := range entries {
		damaged := e.ID == inc.ID || e.ID == newest.ID
		switch {
		case damaged && (e.Damage == nil || e.Manifest != nil):
			t.Errorf("%s: Damage %v, manifest %v; want it marked damaged", e.ID, e.Damage, e.Manifest)
		case damaged && (!archive.IsCorrupt(e.Damage) || !strings.Contains(e.Damage.Error(), repo.Dir(e.ID)+"/"+repo.ManifestName)):
			t.Errorf("%s: damage %q is not corruption naming the manifest object", e.ID, e.Damage)
		case !damaged && (e.Damage != nil || e.Manifest == nil):
			t.Errorf("%s: Damage %v; want it complete", e.ID, e.Damage)
		}
	}

	ms, err := r.List(ctx)
	if err != nil || len(ms) != 2 || ms[0].ID != full.ID || ms[1].ID != inc2.ID {
		t.Fatalf("List: %v, %v; want %s and %s", ms, err, full.ID, inc2.ID)
	}
	if m, err := r.Resolve(ctx, "latest"); err != nil || m.ID != inc2.ID {
		t.Fatalf("latest: %v, %v; want %s (the newest is damaged)", m, err, inc2.ID)
	}
	for _, ref := range []string{inc.ID, inc.ID[:20]} {
		_, err := r.Resolve(ctx, ref)
		if !archive.IsCorrupt(err) || !strings.Contains(err.Error(), object) {
			t.Errorf("Resolve(%s): %v; want damage naming %s", ref, err, object)
		}
	}
	if m, err := r.Resolve(ctx, full.ID[:20]); err != nil || m.ID != full.ID {
		t.Fatalf("Resolve by prefix of an undamaged backup: %v, %v", m, err)
	}
	_, err = r.Chain(ctx, inc2)
	if !archive.IsCorrupt(err) || !strings.Contains(err.Error(), object) || !strings.Contains(err.Error(), inc2.ID) {
		t.Fatalf("Chain through the damaged backup: %v; want damage naming %s and %s", err, inc2.ID, object)
	}
}
