package repo_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repo/repotest"
	"github.com/backstream/backstream/internal/storage/faulty"
)

func TestAcquire(t *testing.T) {
	ctx := context.Background()
	base := repotest.New(t)
	fb := faulty.New(base.Backend)
	r, err := repo.Open(ctx, fb)
	if err != nil {
		t.Fatal(err)
	}
	var told []string
	opt := func(op string, exclusive bool) repo.LockOptions {
		return repo.LockOptions{Operation: op, Exclusive: exclusive, Report: func(m string) { told = append(told, m) }}
	}

	// Without write access a reader goes on unlocked, and says so; a
	// writer fails.
	fb.Add(faulty.Fault{Op: faulty.OpPut, Name: repo.LocksDir + "/", Err: errors.New("access denied")})
	lctx, release, err := r.Acquire(ctx, opt(repo.OpRestore, false))
	if err != nil || lctx != ctx || len(told) != 1 || !strings.Contains(told[0], "cannot take a shared lock") {
		t.Fatalf("shared lock on a read-only repository: %v, told %q; want to go on unlocked and say so", err, told)
	}
	release()
	if _, _, err := r.Acquire(ctx, opt(repo.OpBackup, true)); err == nil || !strings.Contains(err.Error(), "access denied") {
		t.Fatalf("exclusive lock on a read-only repository: %v, want the failure", err)
	}
	fb.Clear()

	// A held exclusive lock stops a reader: that is no reason to go on.
	_, release, err = r.Acquire(ctx, opt(repo.OpExpire, true))
	if err != nil {
		t.Fatal(err)
	}
	var locked *repo.LockedError
	if _, _, err := r.Acquire(ctx, opt(repo.OpRestore, false)); !errors.As(err, &locked) {
		t.Fatalf("shared lock while expire holds the lock: %v, want a LockedError", err)
	}
	release()
	locks, err := repo.ReadLocks(ctx, base.Backend)
	if err != nil || len(locks) != 0 {
		t.Fatalf("after release: %d locks (%v), want none", len(locks), err)
	}
}

func TestResolveLocked(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	first := repotest.Store(t, r, repotest.Backup{ID: "20261121T030000Z-0001", Files: map[string]string{"f": "1"}})
	m, lctx, release, err := r.ResolveLocked(ctx, "latest", "", repo.LockOptions{Operation: repo.OpVerify})
	if err != nil || m.ID != first.ID {
		t.Fatalf("ResolveLocked(latest) = %v, %v; want %s", m, err, first.ID)
	}
	if locks, _ := repo.ReadLocks(lctx, r.Backend); len(locks) != 1 {
		t.Fatalf("%d locks held while resolved, want 1", len(locks))
	}
	release()
	if _, _, _, err := r.ResolveLocked(ctx, "20991231T000000Z-beef", "", repo.LockOptions{Operation: repo.OpVerify}); err == nil {
		t.Fatal("a missing backup resolved")
	}
	if locks, _ := repo.ReadLocks(ctx, r.Backend); len(locks) != 0 {
		t.Fatalf("%d locks left after a failed resolve, want none", len(locks))
	}
}
