package repo_test

import (
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
)

// latest is one rule: the newest whole-server physical backup, else the
// newest whole-server logical one, else the newest partial one; with a
// kind, the same within that kind.
func TestLatest(t *testing.T) {
	phys := &archive.Manifest{ID: "p", Kind: archive.KindPhysical}
	whole := &archive.Manifest{ID: "w", Kind: archive.KindLogical}
	part := &archive.Manifest{ID: "d", Kind: archive.KindLogical, Partial: true}
	for _, c := range []struct {
		ms         []*archive.Manifest
		kind, want string
		wantWhole  string
	}{
		{[]*archive.Manifest{phys, whole, part}, "", "p", "p"},
		{[]*archive.Manifest{phys, whole, part}, archive.KindLogical, "w", "w"},
		{[]*archive.Manifest{whole, part}, "", "w", "w"},
		{[]*archive.Manifest{part}, "", "d", ""},
		{[]*archive.Manifest{part}, archive.KindPhysical, "", ""},
		{[]*archive.Manifest{phys, part}, archive.KindLogical, "d", ""},
		{nil, "", "", ""},
	} {
		id := func(m *archive.Manifest) string {
			if m == nil {
				return ""
			}
			return m.ID
		}
		if got := id(repo.Latest(c.ms, c.kind)); got != c.want {
			t.Errorf("Latest(%d backups, %q) = %q, want %q", len(c.ms), c.kind, got, c.want)
		}
		if got := id(repo.NewestWhole(c.ms, c.kind)); got != c.wantWhole {
			t.Errorf("NewestWhole(%d backups, %q) = %q, want %q", len(c.ms), c.kind, got, c.wantWhole)
		}
	}
}
