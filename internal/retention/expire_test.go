package retention

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repo/repotest"
	"github.com/backstream/backstream/internal/storage"
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
	got := byID(plan.Entries)
	if len(got) != 5 {
		t.Fatalf("plan has %d entries, want 4 backups and the crashed one: %+v", len(got), plan.Entries)
	}
	for i, id := range ids {
		if want := i >= 2; got[id].Keep != want || !got[id].Complete || got[id].Deleted {
			t.Errorf("dry run: %s planned %+v, want keep=%v, complete, not deleted", id, got[id], want)
		}
	}
	if c := got[crashed]; c.Complete || !c.Keep || c.Started.Year() != 2026 || c.Size != int64(len("partial")) ||
		len(c.Reasons) != 1 || c.Reasons[0] != incompleteKept {
		t.Errorf("dry run: crashed backup planned %+v, want incomplete, kept for want of --prune-incomplete, started in 2026, its size", c)
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
	got = byID(done.Entries)
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
	got = byID(done.Entries)
	if !got[crashed].Deleted || got[crashed].Keep || len(got[crashed].Reasons) != 0 || exists(t, r, repo.Dir(crashed)+"/streams/00000.xbs") {
		t.Errorf("pruning left the crashed backup: %+v", got[crashed])
	}
	for _, id := range ids[2:] {
		if !got[id].Keep || got[id].Deleted || !exists(t, r, repo.Dir(id)+"/"+repo.ManifestName) {
			t.Errorf("pruning touched complete backup %s: %+v", id, got[id])
		}
	}
}

// tree lists every file and directory below dir, dot files included.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			rel += "/"
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return out
}

// The temporary files killed writers left in a local repository go with
// --prune-incomplete: those of a backup that never committed, of a
// directory that holds nothing else, of a complete backup (which keeps
// every object); a dry run counts them and removes nothing. Removing a
// backup by policy takes its own.
func TestRunRemovesLeftovers(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	root := r.Backend.Location()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	old := repotest.Store(t, r, repotest.Backup{ID: "20261118T030000Z-0001", Files: map[string]string{"f": "1"}})
	kept := repotest.Store(t, r, repotest.Backup{ID: "20261120T030000Z-0002", Files: map[string]string{"f": "2"}})
	killed, tempOnly := "20261121T030000Z-dead", "20261121T040000Z-temp"
	if err := r.Begin(ctx, &archive.Manifest{ID: killed, Streams: []archive.Stream{{Object: archive.Object{Name: "streams/00000.xbs.zst"}}}}); err != nil {
		t.Fatal(err)
	}
	plant := func(id, rel, data string) {
		p := filepath.Join(root, "backups", id, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const tmp = ".0123456789abcdef.tmp"
	plant(old.ID, "streams/.00000.xbs.zst.age"+tmp, "1")
	plant(kept.ID, "meta/.x.age"+tmp, "22")
	plant(killed, "streams/.00000.xbs.zst.age"+tmp, "333")
	plant(tempOnly, "streams/.00000.xbs.zst.age"+tmp, "4444")
	keptTree := tree(t, filepath.Join(root, "backups", kept.ID))

	leftovers := func(es []Entry) *Entry {
		for i := range es {
			if es[i].Kind == KindLeftovers {
				return &es[i]
			}
		}
		return nil
	}
	plan, err := Run(ctx, r, Request{PruneIncomplete: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if l := leftovers(plan.Entries); l == nil || l.Deleted || *l.Leftovers != (storage.Leftovers{TempFiles: 4, Bytes: 10}) || l.Size != 10 {
		t.Fatalf("dry run: leftovers entry %+v, want 4 temporary files of 10 bytes, not deleted", l)
	}
	if n := len(tree(t, filepath.Join(root, "backups", tempOnly))); n != 3 {
		t.Fatalf("the dry run removed something: %d entries left under the directory of temporary files", n)
	}

	// By policy alone: the old backup goes with its temporary file.
	done, err := Run(ctx, r, Request{Policy: Policy{KeepLast: 1}, Confirm: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if l := leftovers(done.Entries); l == nil || !l.Deleted || *l.Leftovers != (storage.Leftovers{TempFiles: 1, Bytes: 1}) {
		t.Errorf("by policy: leftovers entry %+v, want the old backup's temporary file", l)
	}
	if left := tree(t, filepath.Join(root, "backups", old.ID)); len(left) != 0 {
		t.Errorf("left of the expired backup: %q", left)
	}

	done, err = Run(ctx, r, Request{PruneIncomplete: true, Confirm: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if l := leftovers(done.Entries); l == nil || !l.Deleted || *l.Leftovers != (storage.Leftovers{TempFiles: 3, Bytes: 9}) {
		t.Errorf("pruning: leftovers entry %+v, want 3 temporary files of 9 bytes, deleted", l)
	}
	for _, id := range []string{killed, tempOnly} {
		if left := tree(t, filepath.Join(root, "backups", id)); len(left) != 0 {
			t.Errorf("left under backups/%s: %q", id, left)
		}
	}
	var wantKept []string
	for _, p := range keptTree {
		if !strings.HasSuffix(p, tmp) {
			wantKept = append(wantKept, p)
		}
	}
	// A directory that held the temporary file alone goes with it.
	if !slices.ContainsFunc(wantKept, func(p string) bool { return strings.HasPrefix(p, "meta/") && p != "meta/" }) {
		wantKept = slices.DeleteFunc(wantKept, func(p string) bool { return p == "meta/" })
	}
	if got := tree(t, filepath.Join(root, "backups", kept.ID)); !slices.Equal(got, wantKept) {
		t.Errorf("the kept backup's directory holds %q, want %q (its objects, without the temporary file)", got, wantKept)
	}
	if m, err := r.Resolve(ctx, kept.ID); err != nil || m.ID != kept.ID {
		t.Errorf("the kept backup after pruning: %v", err)
	}

	again, err := Run(ctx, r, Request{PruneIncomplete: true, Confirm: true, Now: now})
	if err != nil || leftovers(again.Entries) != nil {
		t.Errorf("pruning again: %+v, %v; want no leftovers entry", leftovers(again.Entries), err)
	}
}
