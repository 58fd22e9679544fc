package cli

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/backupid"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// Dry run, confirmed expire, and pruning a crashed backup's leftovers.
func TestExpire(t *testing.T) {
	t.Parallel()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1}); err != nil {
		t.Fatal(err)
	}
	forEachBackend(t, func(t *testing.T, tr testRepo) {
		for range 3 {
			run(t, append([]string{"backup", "--repo", tr.Location, "--parallel", "2"}, sandboxConn(src)...)...).mustSucceed(t)
			time.Sleep(1100 * time.Millisecond) // distinct ids and start times
		}
		ids := listIDs(t, tr.Location)
		if len(ids) != 3 {
			t.Fatalf("%d backups, want 3", len(ids))
		}
		// A crashed backup from long ago, and one that may still be running.
		crashed := "20200101T000000Z-dead"
		fresh := backupid.New(time.Now())
		tr.Write(t, "backups/"+crashed+"/streams/00000.xbs.zst", []byte("partial"))
		tr.Write(t, "backups/"+fresh+"/streams/00000.xbs.zst", []byte("partial"))

		if r := run(t, "expire", "--repo", tr.Location); r.code != ExitUsage {
			t.Errorf("expire without a rule: exit %d, want %d", r.code, ExitUsage)
		}

		dry := run(t, "expire", "--repo", tr.Location, "--keep-last", "1").mustSucceed(t)
		for _, want := range []string{ids[0], ids[1], ids[2], "DELETE", "KEEP", "keep-last 1", "would delete 2 backups", crashed + " "} {
			if !strings.Contains(dry.stdout, want) {
				t.Errorf("dry run output lacks %q:\n%s", want, dry.stdout)
			}
		}
		if got := listIDs(t, tr.Location); len(got) != 3 {
			t.Fatalf("dry run deleted something: %v", got)
		}

		plan := expirePlan(t, run(t, "expire", "--repo", tr.Location, "--keep-last", "1", "--keep-within", "1h", "--json").mustSucceed(t))
		for _, id := range ids {
			if e := plan[id]; !e.Keep || e.Deleted {
				t.Errorf("keep-within 1h: %s planned %+v, want kept", id, e)
			}
		}

		conf := expirePlan(t, run(t, "expire", "--repo", tr.Location, "--keep-last", "1", "--confirm", "--json").mustSucceed(t))
		for i, id := range ids {
			e := conf[id]
			if want := i == 2; e.Keep != want || e.Deleted == want {
				t.Errorf("%s: %+v, want keep=%v", id, e, want)
			}
		}
		if e := conf[crashed]; !e.Keep || e.Complete {
			t.Errorf("incomplete backup without --prune-incomplete: %+v", e)
		}
		if got := listIDs(t, tr.Location); len(got) != 1 || got[0] != ids[2] {
			t.Fatalf("after expire: %v, want [%s]", got, ids[2])
		}
		if objs := tr.StreamObjects(t, ids[0]); len(objs) != 0 {
			t.Errorf("expired backup still has objects %v", objs)
		}
		run(t, "verify", ids[2], "--repo", tr.Location).mustSucceed(t)

		pruned := expirePlan(t, run(t, "expire", "--repo", tr.Location, "--keep-last", "1", "--prune-incomplete", "--confirm", "--json").mustSucceed(t))
		if e := pruned[crashed]; !e.Deleted {
			t.Errorf("crashed backup not pruned: %+v", e)
		}
		// No writer can be running while expire holds the exclusive lock,
		// so a fresh incomplete backup is as dead as an old one.
		if e := pruned[fresh]; !e.Deleted {
			t.Errorf("fresh incomplete backup not pruned: %+v", e)
		}
		if objs := tr.StreamObjects(t, crashed); len(objs) != 0 {
			t.Errorf("crashed backup's objects left: %v", objs)
		}
		if objs := tr.StreamObjects(t, fresh); len(objs) != 0 {
			t.Errorf("fresh incomplete backup's objects left: %v", objs)
		}
		if locks, _ := tr.Backend.List(context.Background(), "locks/"); len(locks) != 0 {
			t.Errorf("locks left: %v", locks)
		}
	})
}

// A backup holds the exclusive lock: a second backup, an expire and a
// verify fail at once naming it; a verify with --lock-wait waits; all
// succeed afterwards. A stale lock is reported, ignored and unlocked.
func TestConcurrentOperations(t *testing.T) {
	t.Parallel()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1}); err != nil {
		t.Fatal(err)
	}
	forEachBackend(t, func(t *testing.T, tr testRepo) {
		backup := append([]string{"backup", "--repo", tr.Location, "--parallel", "2"}, sandboxConn(src)...)
		run(t, backup...).mustSucceed(t)
		older := listIDs(t, tr.Location)[0]

		gated, open := usecasetest.GatedMariabackup(t, "--backup")
		var wg sync.WaitGroup
		var slow result
		wg.Add(1)
		go func() {
			defer wg.Done()
			slow = run(t, append(backup, "--mariabackup", gated)...)
		}()
		deadline := time.Now().Add(60 * time.Second)
		for {
			if ls, _ := repo.ReadLocks(context.Background(), tr.Backend); len(ls) == 1 && ls[0].Operation == "backup" {
				break
			}
			if time.Now().After(deadline) {
				open()
				t.Fatal("the held backup took no lock within 60 s")
			}
			time.Sleep(20 * time.Millisecond)
		}
		holder := "repository locked by backup (exclusive lock, pid"
		for _, args := range [][]string{backup, {"expire", "--repo", tr.Location, "--keep-last", "1"}, {"verify", older, "--repo", tr.Location}} {
			start := time.Now()
			r := run(t, args...)
			if r.err == nil || !strings.Contains(r.err.Error(), holder) || !strings.Contains(r.err.Error(), "backstream unlock --repo "+tr.Location) {
				t.Errorf("%s while a backup runs: %v, want the lock message", args[0], r.err)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("%s took %v to fail, want at once", args[0], d)
			}
		}
		// The backup goes on a few seconds after the waiting verify has
		// met its lock.
		time.AfterFunc(3*time.Second, open)
		waited := run(t, "verify", older, "--repo", tr.Location, "--lock-wait", "5m")
		wg.Wait()
		slow.mustSucceed(t)
		waited.mustSucceed(t)
		if !strings.Contains(waited.stderr, "waiting up to") {
			t.Errorf("waiting verify did not say so: %s", waited.stderr)
		}
		run(t, "expire", "--repo", tr.Location, "--keep-last", "1", "--confirm").mustSucceed(t)
		if ids := listIDs(t, tr.Location); len(ids) != 1 || ids[0] == older {
			t.Errorf("after expire: %v", ids)
		}

		// A killed process's lock: old refreshed time, dead pid.
		old := time.Now().Add(-time.Hour).UTC()
		data, _ := json.Marshal(repo.LockInfo{Owner: "root", Host: "deadhost", PID: 999999, Operation: "backup", Exclusive: true, Created: old, Refreshed: old})
		tr.Write(t, "locks/0123456789abcdef.json", data)
		v := run(t, "verify", "--repo", tr.Location).mustSucceed(t)
		if !strings.Contains(v.stderr, "stale lock locks/0123456789abcdef.json") || !strings.Contains(v.stderr, "pid 999999 on host deadhost") {
			t.Errorf("stale lock not reported: %s", v.stderr)
		}
		u := run(t, "unlock", "--repo", tr.Location).mustSucceed(t)
		if !strings.Contains(u.stdout, "removed lock locks/0123456789abcdef.json") {
			t.Errorf("unlock printed %q", u.stdout)
		}
		if ls, _ := tr.Backend.List(context.Background(), "locks/"); len(ls) != 0 {
			t.Errorf("locks left after unlock: %v", ls)
		}
		// unlock --json: the same as one object.
		tr.Write(t, "locks/fedcba9876543210.json", data)
		var unlocked struct {
			Repository string `json:"repository"`
			Removed    []struct {
				Name        string `json:"name"`
				Description string `json:"description"`
				Host        string `json:"host"`
				PID         int    `json:"pid"`
				Operation   string `json:"operation"`
			} `json:"removed"`
			Error *string `json:"error"`
		}
		decodeOne(t, "unlock --json", run(t, "unlock", "--repo", tr.Location, "--json").mustSucceed(t).stdout, &unlocked)
		if rm := unlocked.Removed; unlocked.Repository != tr.Location || len(rm) != 1 || rm[0].Name != "locks/fedcba9876543210.json" ||
			rm[0].Host != "deadhost" || rm[0].PID != 999999 || rm[0].Operation != "backup" ||
			!strings.Contains(rm[0].Description, "pid 999999 on host deadhost") || unlocked.Error != nil {
			t.Errorf("unlock --json: %+v", unlocked)
		}
		decodeOne(t, "unlock --json", run(t, "unlock", "--repo", tr.Location, "--json").mustSucceed(t).stdout, &unlocked)
		if unlocked.Removed == nil || len(unlocked.Removed) != 0 {
			t.Errorf("unlock --json with no lock to remove: %+v, want an empty list", unlocked)
		}
	})
}
