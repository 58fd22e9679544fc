package repo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/user"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/storage"
)

// LocksDir holds the lock objects of a repository, one per running
// operation: locks/<random id>.json.
const LocksDir = "locks"

// DefaultStaleAfter is how long a lock may go unrefreshed before other
// operations ignore it. Holders refresh every third of it.
const DefaultStaleAfter = 5 * time.Minute

// Operations that take locks.
const (
	OpBackup  = "backup"
	OpExpire  = "expire"
	OpRestore = "restore"
	OpVerify  = "verify"
	OpCat     = "cat"
	OpReceive = "receive"
	OpSend    = "send"
	OpMerge   = "merge"
)

// LockInfo is the content of a lock object.
type LockInfo struct {
	Owner     string    `json:"owner"`
	Host      string    `json:"host"`
	PID       int       `json:"pid"`
	Operation string    `json:"operation"`
	Exclusive bool      `json:"exclusive"`
	Created   time.Time `json:"created"`
	Refreshed time.Time `json:"refreshed"`
}

// StoredLock is a lock object found in a repository.
type StoredLock struct {
	Name string // object name, locks/<id>.json
	LockInfo
}

// Stale reports whether the lock went unrefreshed for longer than staleAfter
// at now, or was taken on this host by a process that no longer exists (a
// holder that was killed, or whose release failed because the backend was
// unreachable).
func (l StoredLock) Stale(now time.Time, staleAfter time.Duration) bool {
	return now.Sub(l.Refreshed) > staleAfter || l.goneHere()
}

// goneHere reports whether the lock was taken on this host by a process
// that is not running. A reused pid keeps the lock live until it goes
// stale by age: the safe direction.
func (l StoredLock) goneHere() bool {
	if l.Host != hostname() || l.PID <= 0 || l.PID == os.Getpid() {
		return false
	}
	return syscall.Kill(l.PID, 0) == syscall.ESRCH
}

// staleWhy says why a stale lock is stale, for messages.
func (l StoredLock) staleWhy(now time.Time, staleAfter time.Duration) string {
	if l.goneHere() {
		return fmt.Sprintf("its process %d on this host is gone", l.PID)
	}
	return fmt.Sprintf("not refreshed for %s (more than %s)", now.Sub(l.Refreshed).Round(time.Second), staleAfter)
}

// Describe names the holder for messages: "backup (pid 123 on host h, since 10:15:02 UTC, refreshed 10:16:30 UTC)".
func (l LockInfo) Describe() string {
	kind := "shared"
	if l.Exclusive {
		kind = "exclusive"
	}
	return fmt.Sprintf("%s (%s lock, pid %d on host %s, user %s, since %s, refreshed %s)", l.Operation, kind, l.PID, l.Host,
		l.Owner, clock(l.Created), clock(l.Refreshed))
}

// clock shows a time of day, with the date only when it is not today: lock
// holders are usually minutes old.
func clock(t time.Time) string {
	t = t.UTC()
	if t.Format("20060102") == time.Now().UTC().Format("20060102") {
		return t.Format("15:04:05 UTC")
	}
	return t.Format("2006-01-02 15:04:05 UTC")
}

// precedes orders locks for breaking ties between candidates: the older
// created time wins, then the smaller object name.
func precedes(a, b StoredLock) bool {
	if !a.Created.Equal(b.Created) {
		return a.Created.Before(b.Created)
	}
	return a.Name < b.Name
}

// conflicts reports whether two locks exclude each other: a shared lock
// excludes only exclusive ones.
func conflicts(a, b LockInfo) bool { return a.Exclusive || b.Exclusive }

// LockedError reports that another operation holds a conflicting lock.
type LockedError struct {
	Location string
	Holder   StoredLock
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("repository locked by %s; wait for it (--lock-wait), or if that process is gone, backstream unlock --repo %s",
		e.Holder.Describe(), e.Location)
}

// ErrLockLost is the cause of a held lock's context when the lock could
// not be refreshed or was removed by someone else.
var ErrLockLost = errors.New("repository lock lost")

// LockOptions describe the lock an operation needs.
type LockOptions struct {
	Operation string
	Exclusive bool
	// Wait is how long to keep trying while a conflicting lock is held;
	// 0 fails at once.
	Wait time.Duration
	// StaleAfter defaults to DefaultStaleAfter.
	StaleAfter time.Duration
	// Settle is how long a winner of a tie waits for the loser's object to
	// go; default 2 s, or StaleAfter/10 when that is smaller.
	Settle time.Duration
	// Report, if set, hears of stale locks ignored and of waiting.
	Report func(msg string)
}

// Lock is a lock this process holds; Release it when the operation ends.
type Lock struct {
	backend storage.Backend
	name    string
	info    LockInfo

	mu       sync.Mutex
	cancel   context.CancelCauseFunc
	stop     chan struct{}
	done     chan struct{}
	released bool
}

// Name is the lock's object name.
func (l *Lock) Name() string { return l.name }

// Info is the lock's content as last written.
func (l *Lock) Info() LockInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.info
}

// ReadLocks lists and parses every lock object. A lock deleted while being
// read is left out; one that cannot be parsed is an error naming it.
func ReadLocks(ctx context.Context, b storage.Backend) ([]StoredLock, error) {
	objs, err := b.List(ctx, LocksDir+"/")
	if err != nil {
		return nil, fmt.Errorf("%s: list locks: %w", b.Location(), err)
	}
	var out []StoredLock
	for _, o := range objs {
		if !strings.HasSuffix(o.Name, ".json") {
			continue
		}
		info, err := readLock(ctx, b, o.Name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, StoredLock{Name: o.Name, LockInfo: info})
	}
	return out, nil
}

func readLock(ctx context.Context, b storage.Backend, name string) (LockInfo, error) {
	rc, err := b.Open(ctx, name, 0, -1)
	if err != nil {
		return LockInfo{}, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, 64<<10))
	if err != nil {
		return LockInfo{}, fmt.Errorf("%s: read lock %s: %w", b.Location(), name, err)
	}
	info, err := ParseLock(data)
	if err != nil {
		return LockInfo{}, fmt.Errorf("%s: lock %s: %w (remove it with backstream unlock --all if no operation is running)", b.Location(), name, err)
	}
	return info, nil
}

// ParseLock decodes and checks a lock object.
func ParseLock(data []byte) (LockInfo, error) {
	var info LockInfo
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&info); err != nil {
		return LockInfo{}, fmt.Errorf("not a lock object: %w", err)
	}
	switch {
	case info.Operation == "":
		return LockInfo{}, errors.New("lock names no operation")
	case info.Created.IsZero() || info.Refreshed.IsZero():
		return LockInfo{}, errors.New("lock has no created or refreshed time")
	}
	return info, nil
}

// Lock takes a lock on the repository for an operation and keeps it fresh
// until Release. The returned context derives from ctx and is cancelled,
// with ErrLockLost as its cause, if the lock cannot be refreshed or is
// removed by someone else, so that the operation stops rather than runs
// unlocked. A conflict fails with a *LockedError after opt.Wait.
//
// Backends offer no conditional writes, so the lock is taken optimistically:
//
//  1. write our lock object locks/<random>.json;
//  2. list locks/ and read every other lock, ignoring (and reporting) stale
//     ones, whose refreshed time is older than StaleAfter;
//  3. if a conflicting lock precedes ours (older created time, then smaller
//     name), delete ours and fail or retry: that one is a holder or a
//     candidate that wins the tie;
//  4. if conflicting locks exist that ours precedes, they are candidates that
//     will back off in their step 3, or holders that did not see ours when
//     they listed: wait Settle for them to disappear and re-list; any still
//     there are holders, and we back off.
//
// Two candidates A and B cannot both hold: each wrote before it listed, so at
// least one sees the other; whichever sees a lock it does not precede backs
// off, and whichever sees one it precedes waits until that one is gone. The
// windows left are a candidate that takes longer than Settle between its
// write and its delete (both may then back off: safe), a holder that cannot
// refresh within StaleAfter, for instance a suspended process (its context
// is cancelled as soon as it notices), and clocks of hosts that differ by a
// sizeable part of StaleAfter.
func (r *Repo) Lock(ctx context.Context, opt LockOptions) (*Lock, context.Context, error) {
	if opt.StaleAfter <= 0 {
		opt.StaleAfter = DefaultStaleAfter
	}
	if opt.Settle <= 0 {
		opt.Settle = min(2*time.Second, opt.StaleAfter/10)
	}
	deadline := time.Now().Add(opt.Wait)
	reportedWait := false
	for {
		l, err := r.tryLock(ctx, opt)
		if err == nil {
			lctx, cancel := context.WithCancelCause(ctx)
			l.cancel, l.stop, l.done = cancel, make(chan struct{}), make(chan struct{})
			go l.refresh(opt.StaleAfter)
			return l, lctx, nil
		}
		var le *LockedError
		if !errors.As(err, &le) || !time.Now().Before(deadline) {
			return nil, nil, err
		}
		if !reportedWait && opt.Report != nil {
			opt.Report(fmt.Sprintf("waiting up to %s for the repository lock held by %s", time.Until(deadline).Round(time.Second), le.Holder.Describe()))
			reportedWait = true
		}
		pause := min(time.Until(deadline), time.Second+rand.N(time.Second))
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("waiting for the repository lock: %w", context.Cause(ctx))
		case <-time.After(pause):
		}
	}
}

func (r *Repo) tryLock(ctx context.Context, opt LockOptions) (*Lock, error) {
	now := time.Now().UTC()
	info := LockInfo{Owner: currentUser(), Host: hostname(), PID: os.Getpid(), Operation: opt.Operation,
		Exclusive: opt.Exclusive, Created: now, Refreshed: now}
	l := &Lock{backend: r.Backend, name: LocksDir + "/" + randomHex(8) + ".json", info: info}
	if err := l.write(ctx); err != nil {
		return nil, err
	}
	ours := StoredLock{Name: l.name, LockInfo: info}
	backOff := func(err error) (*Lock, error) {
		cleanup, stop := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer stop()
		if derr := r.Backend.Delete(cleanup, l.name); derr != nil {
			return nil, fmt.Errorf("%w (and removing our own lock %s failed: %v)", err, l.name, derr)
		}
		return nil, err
	}
	reported := map[string]bool{}
	waited := false
	for {
		locks, err := ReadLocks(ctx, r.Backend)
		if err != nil {
			return backOff(err)
		}
		now := time.Now()
		var later []StoredLock
		for _, o := range locks {
			if o.Name == l.name || !conflicts(o.LockInfo, info) {
				continue
			}
			if o.Stale(now, opt.StaleAfter) {
				if opt.Report != nil && !reported[o.Name] {
					opt.Report(fmt.Sprintf("ignoring a stale lock %s from %s: %s; backstream unlock removes it",
						o.Name, o.Describe(), o.staleWhy(now, opt.StaleAfter)))
				}
				reported[o.Name] = true
				continue
			}
			if precedes(o, ours) || waited {
				return backOff(&LockedError{Location: r.Backend.Location(), Holder: o})
			}
			later = append(later, o)
		}
		if len(later) == 0 {
			return l, nil
		}
		select {
		case <-ctx.Done():
			return backOff(context.Cause(ctx))
		case <-time.After(opt.Settle):
		}
		waited = true
	}
}

func (l *Lock) write(ctx context.Context) error {
	l.mu.Lock()
	data, err := json.MarshalIndent(l.info, "", "  ")
	l.mu.Unlock()
	if err != nil {
		return fmt.Errorf("encode lock %s: %w", l.name, err)
	}
	if _, err := l.backend.Put(ctx, l.name, bytes.NewReader(data)); err != nil {
		return fmt.Errorf("%s: write lock %s: %w", l.backend.Location(), l.name, err)
	}
	return nil
}

// refresh rewrites the lock every third of staleAfter. A failed refresh is
// retried at the next tick; once two thirds of staleAfter pass without a
// successful one, or the object is gone (unlock --all), the lock is lost:
// the holder's context is cancelled before others may take the lock as stale.
func (l *Lock) refresh(staleAfter time.Duration) {
	defer close(l.done)
	tick := time.NewTicker(staleAfter / 3)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), staleAfter/3)
		err := l.refreshOnce(ctx)
		cancel()
		if errors.Is(err, fs.ErrNotExist) {
			l.cancel(fmt.Errorf("%w: lock %s was removed by someone else (backstream unlock?)", ErrLockLost, l.name))
			return
		}
		if err == nil {
			last = time.Now()
			continue
		}
		if time.Since(last) >= staleAfter*2/3 {
			l.cancel(fmt.Errorf("%w: could not refresh %s for %s: %w", ErrLockLost, l.name, time.Since(last).Round(time.Second), err))
			return
		}
	}
}

// refreshOnce checks that the lock object is still there and writes it
// with a new refresh time. A removal that falls between the check and the
// write is undone by the write (object stores offer no portable "write
// only if present"): the holder then keeps a lock it still holds, which
// errs on the safe side, and unlock --all has to be run again.
func (l *Lock) refreshOnce(ctx context.Context) error {
	if _, err := l.backend.Stat(ctx, l.name); err != nil {
		return err
	}
	l.mu.Lock()
	l.info.Refreshed = time.Now().UTC()
	l.mu.Unlock()
	return l.write(ctx)
}

// Release stops refreshing and deletes the lock object. It is safe to call
// more than once.
func (l *Lock) Release(ctx context.Context) error {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return nil
	}
	l.released = true
	l.mu.Unlock()
	close(l.stop)
	<-l.done
	l.cancel(errors.New("repository lock released"))
	if err := l.backend.Delete(ctx, l.name); err != nil {
		return fmt.Errorf("%s: release lock %s: %w", l.backend.Location(), l.name, err)
	}
	return nil
}

// Unlock removes stale locks, or every lock when all is set (for holders
// known to be dead), and returns those removed.
func (r *Repo) Unlock(ctx context.Context, all bool, staleAfter time.Duration) ([]StoredLock, error) {
	if staleAfter <= 0 {
		staleAfter = DefaultStaleAfter
	}
	var locks []StoredLock
	if all {
		// Unparsable lock objects go too: --all is for a repository nobody uses.
		objs, err := r.Backend.List(ctx, LocksDir+"/")
		if err != nil {
			return nil, fmt.Errorf("%s: list locks: %w", r.Backend.Location(), err)
		}
		for _, o := range objs {
			info, _ := readLock(ctx, r.Backend, o.Name)
			locks = append(locks, StoredLock{Name: o.Name, LockInfo: info})
		}
	} else {
		var err error
		if locks, err = ReadLocks(ctx, r.Backend); err != nil {
			return nil, err
		}
	}
	now := time.Now()
	var removed []StoredLock
	for _, l := range locks {
		if !all && !l.Stale(now, staleAfter) {
			continue
		}
		if err := r.Backend.Delete(ctx, l.Name); err != nil {
			return removed, fmt.Errorf("%s: remove lock %s: %w", r.Backend.Location(), l.Name, err)
		}
		removed = append(removed, l)
	}
	return removed, nil
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return fmt.Sprint(os.Getuid())
}

// Acquire takes the lock opt describes and returns the context the
// operation must run under (it ends if the lock is lost) and the function
// that releases the lock; a release that fails is told to opt.Report.
//
// Reading must work with read-only access (a restore from a bucket with
// read-only credentials): when a shared lock cannot be taken for any
// reason but a conflicting lock, Acquire says so through opt.Report and
// goes on without one, since a shared lock only protects against a
// concurrent expire.
func (r *Repo) Acquire(ctx context.Context, opt LockOptions) (context.Context, func(), error) {
	report := func(msg string) {
		if opt.Report != nil {
			opt.Report(msg)
		}
	}
	l, lctx, err := r.Lock(ctx, opt)
	var locked *LockedError
	if err != nil && !opt.Exclusive && !errors.As(err, &locked) && ctx.Err() == nil {
		report(fmt.Sprintf("cannot take a shared lock (%v); going on without one: a concurrent expire could remove this backup meanwhile", err))
		return ctx, func() {}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	release := func() {
		cleanup, stop := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer stop()
		if err := l.Release(cleanup); err != nil {
			report(fmt.Sprintf("%v (backstream unlock removes it once it is stale)", err))
		}
	}
	return lctx, release, nil
}

// ResolveLocked resolves ref (see Resolve) under the shared lock opt
// describes: the backup is looked up again once the lock is held, so that
// an expire that ran in between cannot leave the caller reading a deleted
// backup.
//
// "latest" names the latest backup of kind ("" for any, see Latest).
func (r *Repo) ResolveLocked(ctx context.Context, ref, kind string, opt LockOptions) (*archive.Manifest, context.Context, func(), error) {
	m, err := r.ResolveKind(ctx, ref, kind)
	if err != nil {
		return nil, nil, nil, err
	}
	lctx, release, err := r.Acquire(ctx, opt)
	if err != nil {
		return nil, nil, nil, err
	}
	m, err = r.Resolve(lctx, m.ID)
	if err != nil {
		release()
		return nil, nil, nil, err
	}
	return m, lctx, release, nil
}
