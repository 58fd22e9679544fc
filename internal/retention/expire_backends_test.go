package retention_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/backupid"
	"github.com/backstream/backstream/internal/retention"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// expireByID runs expire with req on r (usecasetest.Expire), failing the
// test if it fails, and returns its plan by id.
func expireByID(t *testing.T, r usecasetest.Repo, req retention.Request) map[string]retention.Entry {
	t.Helper()
	res, err := usecasetest.Expire(t, r, req)
	if err != nil {
		t.Fatalf("expire %+v: %v", req, err)
	}
	out := map[string]retention.Entry{}
	for _, e := range res.Entries {
		out[e.ID] = e
	}
	return out
}

// listedIDs are the ids of r's backups as list shows them, oldest first.
func listedIDs(t *testing.T, r usecasetest.Repo) []string {
	t.Helper()
	var ids []string
	for _, e := range usecasetest.List(t, r) {
		ids = append(ids, e.ID)
	}
	return ids
}

// Dry run, confirmed expire, and pruning a crashed backup's leftovers.
func TestExpire(t *testing.T) {
	t.Parallel()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1}); err != nil {
		t.Fatal(err)
	}
	usecasetest.ForEachBackend(t, func(t *testing.T, r usecasetest.Repo) {
		for range 3 {
			usecasetest.Backup(t, usecasetest.BackupOf(t, r, src))
			time.Sleep(1100 * time.Millisecond) // distinct ids and start times
		}
		ids := listedIDs(t, r)
		if len(ids) != 3 {
			t.Fatalf("%d backups, want 3", len(ids))
		}
		// A crashed backup from long ago, and one that may still be running.
		crashed := "20200101T000000Z-dead"
		fresh := backupid.New(time.Now())
		r.Write(t, "backups/"+crashed+"/streams/00000.xbs.zst", []byte("partial"))
		r.Write(t, "backups/"+fresh+"/streams/00000.xbs.zst", []byte("partial"))

		if _, err := usecasetest.Expire(t, r, retention.Request{}); !usecasetest.Refused(err) {
			t.Errorf("expire without a rule: %v, want a refusal", err)
		}

		// The dry run plans what the text shows: the three backups, the
		// older two to DELETE (not kept by --keep-last 1), the newest KEPT
		// by keep-last 1, two backups it would delete, and the crashed one
		// listed.
		dry := expireByID(t, r, retention.Request{Policy: retention.Policy{KeepLast: 1}})
		for i, id := range ids {
			e, ok := dry[id]
			switch want := i == 2; {
			case !ok:
				t.Errorf("dry run: %s is not in the plan", id)
			case e.Keep != want || e.Deleted || !e.Complete:
				t.Errorf("dry run: %s planned %+v, want keep=%v and nothing deleted", id, e, want)
			case want && !slices.Contains(e.Reasons, "keep-last 1"):
				t.Errorf("dry run: %s kept for %q, want keep-last 1", id, e.Reasons)
			}
		}
		var deletes int
		for _, e := range dry {
			if !e.Keep && e.Complete {
				deletes++
			}
		}
		if deletes != 2 {
			t.Errorf("dry run would delete %d backups, want 2: %+v", deletes, dry)
		}
		if e, ok := dry[crashed]; !ok || e.Complete || !e.Keep {
			t.Errorf("dry run: the crashed backup is planned %+v (listed %v), want listed, incomplete and kept", e, ok)
		}
		if got := listedIDs(t, r); len(got) != 3 {
			t.Fatalf("dry run deleted something: %v", got)
		}

		plan := expireByID(t, r, retention.Request{Policy: retention.Policy{KeepLast: 1, KeepWithin: time.Hour}})
		for _, id := range ids {
			if e := plan[id]; !e.Keep || e.Deleted {
				t.Errorf("keep-within 1h: %s planned %+v, want kept", id, e)
			}
		}

		conf := expireByID(t, r, retention.Request{Policy: retention.Policy{KeepLast: 1}, Confirm: true})
		for i, id := range ids {
			e := conf[id]
			if want := i == 2; e.Keep != want || e.Deleted == want {
				t.Errorf("%s: %+v, want keep=%v", id, e, want)
			}
		}
		if e := conf[crashed]; !e.Keep || e.Complete {
			t.Errorf("incomplete backup without --prune-incomplete: %+v", e)
		}
		if got := listedIDs(t, r); len(got) != 1 || got[0] != ids[2] {
			t.Fatalf("after expire: %v, want [%s]", got, ids[2])
		}
		if objs := r.StreamObjects(t, ids[0]); len(objs) != 0 {
			t.Errorf("expired backup still has objects %v", objs)
		}
		if err := usecasetest.Verify(t, r, ids[2]); err != nil {
			t.Errorf("verify of the backup kept: %v", err)
		}

		pruned := expireByID(t, r, retention.Request{Policy: retention.Policy{KeepLast: 1}, PruneIncomplete: true, Confirm: true})
		if e := pruned[crashed]; !e.Deleted {
			t.Errorf("crashed backup not pruned: %+v", e)
		}
		// No writer can be running while expire holds the exclusive lock,
		// so a fresh incomplete backup is as dead as an old one.
		if e := pruned[fresh]; !e.Deleted {
			t.Errorf("fresh incomplete backup not pruned: %+v", e)
		}
		if objs := r.StreamObjects(t, crashed); len(objs) != 0 {
			t.Errorf("crashed backup's objects left: %v", objs)
		}
		if objs := r.StreamObjects(t, fresh); len(objs) != 0 {
			t.Errorf("fresh incomplete backup's objects left: %v", objs)
		}
		if locks, _ := r.Backend.List(context.Background(), "locks/"); len(locks) != 0 {
			t.Errorf("locks left: %v", locks)
		}
	})
}
