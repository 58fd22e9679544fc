package repo

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/storage/local"
)

func testRepo(t *testing.T) *Repo {
	t.Helper()
	b, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r, err := OpenOrInit(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func lockObjects(t *testing.T, r *Repo) []StoredLock {
	t.Helper()
	ls, err := ReadLocks(context.Background(), r.Backend)
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

func TestLockConflicts(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		first, second bool // exclusive?
		conflict      bool
	}{
		{true, true, true},
		{true, false, true},
		{false, true, true},
		{false, false, false},
	}
	for _, tt := range tests {
		r := testRepo(t)
		a, _, err := r.Lock(ctx, LockOptions{Operation: OpBackup, Exclusive: tt.first})
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := r.Lock(ctx, LockOptions{Operation: OpVerify, Exclusive: tt.second})
		var le *LockedError
		if tt.conflict {
			if !errors.As(err, &le) {
				t.Fatalf("exclusive %v then %v: err %v, want a LockedError", tt.first, tt.second, err)
			}
			if le.Holder.Name != a.Name() || le.Holder.Operation != OpBackup {
				t.Errorf("holder %+v, want %s", le.Holder, a.Name())
			}
			msg := err.Error()
			for _, want := range []string{"repository locked by backup", "pid ", "on host ", "since ", "refreshed ", "backstream unlock --repo " + r.Backend.Location()} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}
			if n := len(lockObjects(t, r)); n != 1 {
				t.Errorf("%d lock objects after a failed attempt, want 1 (the loser removes its own)", n)
			}
		} else {
			if err != nil {
				t.Fatalf("two shared locks: %v", err)
			}
			b.Release(ctx)
		}
		if err := a.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if n := len(lockObjects(t, r)); n != 0 {
			t.Errorf("%d lock objects left after release", n)
		}
	}
}

func TestLockWaitsForRelease(t *testing.T) {
	ctx := context.Background()
	r := testRepo(t)
	a, _, err := r.Lock(ctx, LockOptions{Operation: OpBackup, Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(500*time.Millisecond, func() { a.Release(ctx) })
	var reports []string
	start := time.Now()
	b, _, err := r.Lock(ctx, LockOptions{Operation: OpExpire, Exclusive: true, Wait: 10 * time.Second,
		Report: func(s string) { reports = append(reports, s) }})
	if err != nil {
		t.Fatalf("waiting lock: %v", err)
	}
	defer b.Release(ctx)
	if time.Since(start) < 400*time.Millisecond {
		t.Errorf("took the lock after %v, before the holder released it", time.Since(start))
	}
	if len(reports) != 1 || !strings.Contains(reports[0], "waiting up to") {
		t.Errorf("reports %q", reports)
	}

	// A wait that runs out fails with the holder's name.
	start = time.Now()
	_, _, err = r.Lock(ctx, LockOptions{Operation: OpBackup, Exclusive: true, Wait: 800 * time.Millisecond})
	var le *LockedError
	if !errors.As(err, &le) || le.Holder.Operation != OpExpire {
		t.Fatalf("err %v, want locked by expire", err)
	}
	if d := time.Since(start); d < 800*time.Millisecond || d > 5*time.Second {
		t.Errorf("gave up after %v, want about 800ms", d)
	}
}

func writeLock(t *testing.T, r *Repo, name string, info LockInfo) {
	t.Helper()
	data, _ := json.Marshal(info)
	if _, err := r.Backend.Put(context.Background(), name, strings.NewReader(string(data))); err != nil {
		t.Fatal(err)
	}
}

func TestStaleLockIgnoredAndUnlocked(t *testing.T) {
	ctx := context.Background()
	r := testRepo(t)
	old := time.Now().Add(-time.Hour).UTC()
	writeLock(t, r, "locks/dead.json", LockInfo{Owner: "root", Host: "gone", PID: 999999, Operation: OpBackup, Exclusive: true, Created: old, Refreshed: old})
	var reports []string
	l, _, err := r.Lock(ctx, LockOptions{Operation: OpBackup, Exclusive: true, Report: func(s string) { reports = append(reports, s) }})
	if err != nil {
		t.Fatalf("a stale lock blocked: %v", err)
	}
	if len(reports) != 1 || !strings.Contains(reports[0], "stale lock locks/dead.json") || !strings.Contains(reports[0], "pid 999999 on host gone") {
		t.Errorf("reports %q", reports)
	}
	removed, err := r.Unlock(ctx, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0].Name != "locks/dead.json" {
		t.Errorf("unlock removed %+v, want only the stale lock", removed)
	}
	if ls := lockObjects(t, r); len(ls) != 1 || ls[0].Name != l.Name() {
		t.Errorf("locks left %+v, want ours", ls)
	}
	// --all removes live locks too; the holder notices at its next refresh.
	if removed, err := r.Unlock(ctx, true, 0); err != nil || len(removed) != 1 {
		t.Errorf("unlock --all: %v, %+v", err, removed)
	}
	l.Release(ctx)
}

func TestLockRefreshAndLoss(t *testing.T) {
	ctx := context.Background()
	r := testRepo(t)
	l, lctx, err := r.Lock(ctx, LockOptions{Operation: OpBackup, Exclusive: true, StaleAfter: 600 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	created := lockObjects(t, r)[0].Refreshed
	time.Sleep(450 * time.Millisecond)
	if ls := lockObjects(t, r); len(ls) != 1 || !ls[0].Refreshed.After(created) {
		t.Fatalf("lock not refreshed: %+v (created refreshed %v)", ls, created)
	}
	// Someone removes it: the holder's context ends.
	if err := r.Backend.Delete(ctx, l.Name()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lctx.Done():
		if !errors.Is(context.Cause(lctx), ErrLockLost) {
			t.Errorf("cause %v, want ErrLockLost", context.Cause(lctx))
		}
	case <-time.After(3 * time.Second):
		t.Fatal("holder's context still live after its lock was removed")
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("release of a lost lock: %v", err)
	}
}

// Many candidates at once: never two exclusive holders at a time.
func TestLockRace(t *testing.T) {
	ctx := context.Background()
	r := testRepo(t)
	var holders, maxHolders, wins atomic.Int32
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, _, err := r.Lock(ctx, LockOptions{Operation: OpBackup, Exclusive: true, Settle: 100 * time.Millisecond})
			if err != nil {
				var le *LockedError
				if !errors.As(err, &le) {
					t.Errorf("unexpected error %v", err)
				}
				return
			}
			wins.Add(1)
			n := holders.Add(1)
			for m := maxHolders.Load(); n > m && !maxHolders.CompareAndSwap(m, n); m = maxHolders.Load() {
			}
			time.Sleep(300 * time.Millisecond)
			holders.Add(-1)
			l.Release(ctx)
		}()
	}
	wg.Wait()
	if maxHolders.Load() > 1 {
		t.Errorf("%d exclusive holders at once", maxHolders.Load())
	}
	if n := len(lockObjects(t, r)); n != 0 {
		t.Errorf("%d lock objects left", n)
	}
	t.Logf("%d of 6 candidates won", wins.Load())
}

func FuzzParseLock(f *testing.F) {
	f.Add([]byte(`{"owner":"root","host":"h","pid":1,"operation":"backup","exclusive":true,"created":"2026-11-21T10:00:00Z","refreshed":"2026-11-21T10:01:00Z"}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := ParseLock(data)
		if err != nil {
			return
		}
		if info.Operation == "" || info.Created.IsZero() || info.Refreshed.IsZero() {
			t.Fatalf("accepted an incomplete lock %+v", info)
		}
		again, err := json.Marshal(info)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseLock(again)
		if err != nil || back.Operation != info.Operation || !back.Created.Equal(info.Created) || back.PID != info.PID {
			t.Fatalf("round trip: %+v -> %+v, %v", info, back, err)
		}
	})
}

// A fresh lock taken on this host by a process that is gone (killed, or
// unable to delete its lock) is stale at once; one from a live process is not.
func TestLockOfDeadProcessOnThisHost(t *testing.T) {
	ctx := context.Background()
	r := testRepo(t)
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	writeLock(t, r, "locks/child.json", LockInfo{Owner: "root", Host: hostname(), PID: cmd.Process.Pid, Operation: OpBackup, Exclusive: true, Created: now, Refreshed: now})
	if _, _, err := r.Lock(ctx, LockOptions{Operation: OpExpire, Exclusive: true}); err == nil {
		t.Fatal("the lock of a live process on this host did not block")
	}
	cmd.Process.Kill()
	cmd.Wait()
	var reports []string
	l, _, err := r.Lock(ctx, LockOptions{Operation: OpExpire, Exclusive: true, Report: func(s string) { reports = append(reports, s) }})
	if err != nil {
		t.Fatalf("the lock of a killed process blocked: %v", err)
	}
	defer l.Release(ctx)
	if len(reports) != 1 || !strings.Contains(reports[0], "is gone") {
		t.Errorf("reports %q, want one naming the gone process", reports)
	}
}
