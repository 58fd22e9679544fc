package backup

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/repo/repotest"
)

func TestParent(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	db1 := archive.Server{Hostname: "db1", ServerID: 1}
	other := archive.Server{Hostname: "db2", ServerID: 2}
	full := repotest.Store(t, r, repotest.Backup{ID: "20261120T030000Z-0001", Server: db1, Files: map[string]string{"f": "x"}})
	inc := repotest.Store(t, r, repotest.Backup{ID: "20261121T030000Z-0002", Parent: full, Files: map[string]string{"f.delta": "y"}})
	repotest.Store(t, r, repotest.Backup{ID: "20261122T030000Z-0003", Server: other, Files: map[string]string{"f": "z"}})
	server := &mariadb.Server{Hostname: "db1", ServerID: 1, Major: 10, Minor: 11}

	var why []string
	p := Parent{Repo: r, FullBecause: func(w string) { why = append(why, w) }}
	got, err := p.For(ctx, server)
	if err != nil || got == nil || got.ID != inc.ID {
		t.Fatalf("newest of the server: %v, %v; want %s (the other server's newer backup is not a parent)", got, err, inc.ID)
	}

	p.Policy = physical.ChainPolicy{MaxChain: 1}
	got, err = p.For(ctx, server)
	if err != nil || got != nil || len(why) != 1 || !strings.Contains(why[0], "already has 1 incrementals") {
		t.Fatalf("chain at its limit: %v, %v, told %q; want a full and the reason", got, err, why)
	}

	p.Policy = physical.ChainPolicy{FullEvery: time.Hour}
	if got, _ = p.For(ctx, server); got != nil || !strings.Contains(why[len(why)-1], "old") {
		t.Fatalf("full too old: %v, told %q; want a full and the reason", got, why)
	}

	p = Parent{Repo: r, Explicit: full.ID, Policy: physical.ChainPolicy{MaxChain: 1}}
	if got, err = p.For(ctx, server); err != nil || got == nil || got.ID != full.ID {
		t.Fatalf("explicit parent: %v, %v; want %s whatever the policy", got, err, full.ID)
	}
	p.Explicit = "20991231T000000Z-beef"
	if _, err = p.For(ctx, server); err == nil {
		t.Fatal("an explicit parent that does not exist was accepted")
	}

	if got, _ = (Parent{Repo: r}).For(ctx, &mariadb.Server{Hostname: "db3", ServerID: 3}); got != nil {
		t.Fatalf("a server with no backup got parent %s", got.ID)
	}
}

// Parent choice skips a backup whose manifest is damaged, and the backups
// whose chain goes through it: an incremental built on them could not be
// restored.
func TestParentSkipsDamaged(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	db1 := archive.Server{Hostname: "db1", ServerID: 1}
	full := repotest.Store(t, r, repotest.Backup{ID: "20261120T030000Z-0001", Server: db1, Files: map[string]string{"f": "x"}})
	inc := repotest.Store(t, r, repotest.Backup{ID: "20261121T030000Z-0002", Parent: full, Files: map[string]string{"f.delta": "y"}})
	repotest.Store(t, r, repotest.Backup{ID: "20261122T030000Z-0003", Parent: inc, Files: map[string]string{"f.delta": "z"}})
	repotest.DamageManifest(t, r, inc.ID)
	server := &mariadb.Server{Hostname: "db1", ServerID: 1, Major: 10, Minor: 11}
	got, err := Parent{Repo: r}.For(ctx, server)
	if err != nil || got == nil || got.ID != full.ID {
		t.Fatalf("parent: %v, %v; want %s (the newer ones are damaged or built on it)", got, err, full.ID)
	}
	if _, err := (Parent{Repo: r, Explicit: inc.ID}).For(ctx, server); !archive.IsCorrupt(err) {
		t.Fatalf("explicit damaged parent: %v; want damage", err)
	}
}
