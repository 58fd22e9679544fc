package cli

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

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
