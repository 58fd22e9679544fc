package repo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/local"
)

func testRepo(t *testing.T) *Repo {
	t.Helper()
	b, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r, err := Init(context.Background(), b, Options{})
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
	// Refreshes come every StaleAfter/3 = 1 s.
	l, lctx, err := r.Lock(ctx, LockOptions{Operation: OpBackup, Exclusive: true, StaleAfter: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	created := lockObjects(t, r)[0].Refreshed
	deadline := time.Now().Add(10 * time.Second)
	for {
		ls := lockObjects(t, r)
		if len(ls) != 1 {
			t.Fatalf("%d lock objects, want 1: %+v", len(ls), ls)
		}
		if ls[0].Refreshed.After(created) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lock not refreshed in 10 s: %+v (created refreshed %v)", ls, created)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Someone removes it, right after a refresh (a refresh that has
	// already checked the object would write it again: see the note on
	// refreshOnce): the holder's context ends at the next refresh.
	if err := r.Backend.Delete(ctx, l.Name()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lctx.Done():
		if !errors.Is(context.Cause(lctx), ErrLockLost) {
			t.Errorf("cause %v, want ErrLockLost", context.Cause(lctx))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("holder's context still live after its lock was removed")
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("release of a lost lock: %v", err)
	}
}

// rendezvousBackend stages the closest race the lock must settle among n
// candidates: it holds back the first n writers of lock objects until all n
// have written, and every removal of a lock object until each candidate has
// read all n, so every candidate sees every other when it first looks.
type rendezvousBackend struct {
	storage.Backend
	n int

	mu            sync.Mutex
	written, read int
	allWritten    chan struct{}
	allRead       chan struct{}
}

func newRendezvous(b storage.Backend, n int) *rendezvousBackend {
	return &rendezvousBackend{Backend: b, n: n, allWritten: make(chan struct{}), allRead: make(chan struct{})}
}

// note counts one more event and closes all at the want-th.
func (b *rendezvousBackend) note(count *int, want int, all chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	*count++
	if *count == want {
		close(all)
	}
}

// await waits for all to close. The timeout lets a test whose candidates
// did not all get this far fail on its assertions rather than hang.
func await(all chan struct{}) {
	select {
	case <-all:
	case <-time.After(10 * time.Second):
	}
}

func (b *rendezvousBackend) Put(ctx context.Context, name string, r io.Reader) (int64, error) {
	n, err := b.Backend.Put(ctx, name, r)
	if err == nil && strings.HasPrefix(name, LocksDir+"/") {
		b.note(&b.written, b.n, b.allWritten)
		await(b.allWritten)
	}
	return n, err
}

func (b *rendezvousBackend) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	rc, err := b.Backend.Open(ctx, name, off, length)
	if err == nil && strings.HasPrefix(name, LocksDir+"/") {
		b.note(&b.read, b.n*b.n, b.allRead)
	}
	return rc, err
}

func (b *rendezvousBackend) Delete(ctx context.Context, name string) error {
	if strings.HasPrefix(name, LocksDir+"/") {
		await(b.allRead)
	}
	return b.Backend.Delete(ctx, name)
}

// lateBackend makes the first n lock objects visible in the reverse order
// of their created times, 150 ms apart: the earliest candidate's object
// appears last, after later candidates have looked and one of them took
// the lock, which the earlier ones must not take from it.
type lateBackend struct {
	storage.Backend
	n       int
	mu      sync.Mutex
	pending []*lateWrite
}

type lateWrite struct {
	info    LockInfo
	name    string
	release chan struct{}
}

func (b *lateBackend) Put(ctx context.Context, name string, r io.Reader) (int64, error) {
	if !strings.HasPrefix(name, LocksDir+"/") {
		return b.Backend.Put(ctx, name, r)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return 0, err
	}
	info, err := ParseLock(data)
	if err != nil {
		return 0, err
	}
	w := &lateWrite{info: info, name: name, release: make(chan struct{})}
	b.mu.Lock()
	if len(b.pending) < b.n {
		b.pending = append(b.pending, w)
		if len(b.pending) == b.n {
			ws := slices.Clone(b.pending)
			slices.SortFunc(ws, func(x, y *lateWrite) int {
				if precedes(StoredLock{Name: x.name, LockInfo: x.info}, StoredLock{Name: y.name, LockInfo: y.info}) {
					return 1
				}
				return -1
			})
			go func() {
				for _, w := range ws {
					close(w.release)
					time.Sleep(150 * time.Millisecond)
				}
			}()
		}
	} else {
		close(w.release)
	}
	b.mu.Unlock()
	select {
	case <-w.release:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return b.Backend.Put(ctx, name, bytes.NewReader(data))
}

// Many candidates for an exclusive lock at once: exactly one wins, and the
// others fail with a LockedError. A winner holds its lock until every
// candidate has given up, so a second winner can only be a broken lock.
func TestLockRace(t *testing.T) {
	const candidates = 6
	for _, tt := range []struct {
		name string
		// wrap stages an interleaving; without it the candidates only
		// start at once.
		wrap func(storage.Backend) storage.Backend
		// wait lets losers retry, so a round that every candidate backs off
		// from (allowed by the algorithm) is followed by another.
		wait time.Duration
	}{
		{name: "each sees all", wrap: func(b storage.Backend) storage.Backend { return newRendezvous(b, candidates) }},
		{name: "earliest seen last", wrap: func(b storage.Backend) storage.Backend { return &lateBackend{Backend: b, n: candidates} }},
		{name: "candidates that wait", wait: 3 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// A candidate that waits for a holder forever fails here.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r := testRepo(t)
			if tt.wrap != nil {
				r = &Repo{Backend: tt.wrap(r.Backend), Config: r.Config}
			}
			var wins, holders, maxHolders, lost atomic.Int32
			var tried, done sync.WaitGroup
			tried.Add(candidates)
			start := make(chan struct{})
			for range candidates {
				done.Go(func() {
					<-start
					l, _, err := r.Lock(ctx, LockOptions{Operation: OpBackup, Exclusive: true, Wait: tt.wait})
					tried.Done()
					if err != nil {
						if le := (*LockedError)(nil); errors.As(err, &le) {
							lost.Add(1)
						} else {
							t.Errorf("unexpected error %v", err)
						}
						return
					}
					wins.Add(1)
					n := holders.Add(1)
					for m := maxHolders.Load(); n > m && !maxHolders.CompareAndSwap(m, n); m = maxHolders.Load() {
					}
					tried.Wait()
					holders.Add(-1)
					if err := l.Release(ctx); err != nil {
						t.Errorf("release: %v", err)
					}
				})
			}
			close(start)
			done.Wait()
			if w := wins.Load(); w != 1 {
				t.Errorf("%d of %d candidates won the exclusive lock, want exactly 1", w, candidates)
			}
			if m := maxHolders.Load(); m > 1 {
				t.Errorf("%d exclusive holders at once", m)
			}
			if l := lost.Load(); l != candidates-1 {
				t.Errorf("%d candidates lost, want %d", l, candidates-1)
			}
			if n := len(lockObjects(t, r)); n != 0 {
				t.Errorf("%d lock objects left", n)
			}
		})
	}
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
