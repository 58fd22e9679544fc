package retention

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repo/repotest"
)

func exists(t *testing.T, r *repo.Repo, name string) bool {
	t.Helper()
	_, err := r.Backend.Stat(context.Background(), name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

func TestRun(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	b := r.Backend
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	ids := []string{"20261118T030000Z-0001", "20261119T030000Z-0002", "20261120T030000Z-0003", "20261121T030000Z-0004"}
	stream := map[string]string{} // id -> its first stream object
	for _, id := range ids {
		m := repotest.Store(t, r, repotest.Backup{ID: id, Files: map[string]string{"f": id}})
		stream[id] = repo.Dir(id) + "/" + m.Streams[0].Name
	}
	crashed := "20261101T000000Z-dead"
	if _, err := b.Put(ctx, repo.Dir(crashed)+"/streams/00000.xbs", bytes.NewReader([]byte("partial"))); err != nil {
		t.Fatal(err)
	}
	byID := func(es []Entry) map[string]Entry {
		out := map[string]Entry{}
		for _, e := range es {
			out[e.ID] = e
		}
		return out
	}

	if _, err := Run(ctx, r, Request{Now: now}); err == nil {
		t.Fatal("Run with no rule and no pruning succeeded; it must refuse")
	}

	// A dry run plans and deletes nothing.
	plan, err := Run(ctx, r, Request{Policy: Policy{KeepLast: 2}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	got := byID(plan)
	if len(got) != 5 {
		t.Fatalf("plan has %d entries, want 4 backups and the crashed one: %+v", len(got), plan)
	}
	for i, id := range ids {
		if want := i >= 2; got[id].Keep != want || !got[id].Complete || got[id].Deleted {
			t.Errorf("dry run: %s planned %+v, want keep=%v, complete, not deleted", id, got[id], want)
		}
	}
	if c := got[crashed]; c.Complete || !c.Keep || c.Started.Year() != 2026 || c.Size != int64(len("partial")) {
		t.Errorf("dry run: crashed backup planned %+v, want incomplete, kept, started in 2026, its size", c)
	}
	for _, id := range ids {
		if !exists(t, r, repo.Dir(id)+"/"+repo.ManifestName) {
			t.Fatalf("dry run deleted %s", id)
		}
	}

	// Confirmed: the two oldest go, manifest and objects; the crashed one
	// stays without pruning.
	done, err := Run(ctx, r, Request{Policy: Policy{KeepLast: 2}, Confirm: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	got = byID(done)
	for i, id := range ids {
		gone := i < 2
		if got[id].Deleted != gone {
			t.Errorf("confirmed: %s deleted=%v, want %v", id, got[id].Deleted, gone)
		}
		if exists(t, r, stream[id]) == gone || exists(t, r, repo.Dir(id)+"/"+repo.ManifestName) == gone {
			t.Errorf("confirmed: objects of %s still there=%v, want %v", id, !gone, !gone)
		}
	}
	if !exists(t, r, repo.Dir(crashed)+"/streams/00000.xbs") {
		t.Error("the crashed backup was removed without PruneIncomplete")
	}

	// Pruning alone keeps every complete backup and removes the leftovers.
	done, err = Run(ctx, r, Request{PruneIncomplete: true, Confirm: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	got = byID(done)
	if !got[crashed].Deleted || exists(t, r, repo.Dir(crashed)+"/streams/00000.xbs") {
		t.Errorf("pruning left the crashed backup: %+v", got[crashed])
	}
	for _, id := range ids[2:] {
		if !got[id].Keep || got[id].Deleted || !exists(t, r, repo.Dir(id)+"/"+repo.ManifestName) {
			t.Errorf("pruning touched complete backup %s: %+v", id, got[id])
		}
	}
}
