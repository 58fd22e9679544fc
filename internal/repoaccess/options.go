package repoaccess

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/storage/s3"
)

// The operations a command locks the repository for (see repo.LockInfo).
const (
	OpBackup  = repo.OpBackup
	OpExpire  = repo.OpExpire
	OpRestore = repo.OpRestore
	OpVerify  = repo.OpVerify
	OpCat     = repo.OpCat
	OpReceive = repo.OpReceive
	OpSend    = repo.OpSend
	OpMerge   = repo.OpMerge
)

// MinMemory is the smallest memory budget taken (see archive.NewMemory).
const MinMemory = archive.MinMemory

// Options are how a command reaches its repository, made once from the
// flags every command shares: where it is, the keys, whether what it
// stores is encrypted, how long a lock is waited for, and the memory
// budget every read of the command draws on.
type Options struct {
	Location Location
	Keys     KeyFiles
	Encrypt  bool // the command stores encrypted (--encrypt)
	Dedup    bool // init makes a deduplicating repository (--dedup)
	LockWait time.Duration
	// Notes hears what a lock has to say (stale locks ignored, waiting),
	// as "OP: note" lines; nil for nowhere.
	Notes io.Writer
	// Memory is the budget of the frames every read of the command holds
	// at once.
	Memory *archive.Memory
}

// NewMemory is the budget of size bytes, --memory (see archive.NewMemory).
func NewMemory(size int64) *archive.Memory { return archive.NewMemory(size) }

// runtimeHeadroom is what a command whose backup data the budget bounds
// may hold beyond it in the Go runtime's memory: the manifests and the
// state of each file read, the runtime's own. --memory + 64 MiB is the
// bound promised; the other 16 MiB are for what lies outside the
// runtime's count (zstd's contexts, allocated in C, and the program).
const runtimeHeadroom = 48 << 20

// memoryBound are the commands whose backup data --memory bounds.
var memoryBound = map[string]bool{"backup": true, "restore": true, "verify": true, "cat": true, "receive": true}

// ShareMemory divides the memory budget among what command holds, and
// returns the Go runtime's memory limit for its process and whether it
// has one (see RuntimeMemoryLimit). A backup into an object store holds
// two kinds of data at once: its frames being compressed, and the parts
// being uploaded (s3.Config.UploadMemory). Each gets half the budget, so
// that together they stay within it; each of its streams also fills one
// part (s3.DefaultPartSize, outside the budget, whose room the limit
// adds: a part waiting for its stream's input must not hold another
// stream's room). flags are the command's, with its --parallel.
func (o *Options) ShareMemory(command string, flags interface{ GetInt(string) (int, error) }) (int64, bool) {
	limit, ok := RuntimeMemoryLimit(command, o.Memory)
	streams, _ := flags.GetInt("parallel")
	if command == "backup" && strings.HasPrefix(o.Location.Repo, "s3://") {
		upload := o.Memory.Size() / 2
		o.Location.UploadMemory = upload
		o.Memory = archive.NewMemory(o.Memory.Size() - upload)
		limit += int64(max(streams, 1)) * s3.DefaultPartSize
	}
	return limit, ok
}

// RuntimeMemoryLimit is the Go runtime's memory limit (debug.SetMemoryLimit)
// for a process running command, and whether it has one: backup, restore,
// verify, cat and receive, whose backup data mem bounds, have. The budget
// bounds the data held at once; without a limit the garbage collector lets
// the heap grow to twice what is live before it collects, so a restore of
// 100,000 tables, whose manifest and file states are live beside the
// budget, held up to 791 MiB for 512 of budget, and an incremental backup
// of them 744 MiB. The limit makes it collect sooner, near the bound. A
// command whose data the budget does not bound has none: what it holds
// live may exceed any limit, and a limit below what is live makes the
// collector run without end.
func RuntimeMemoryLimit(command string, mem *archive.Memory) (int64, bool) {
	return mem.Size() + runtimeHeadroom, memoryBound[command]
}

// Open opens the existing repository.
func (o Options) Open(ctx context.Context) (*repo.Repo, error) {
	r, err := Open(ctx, o.Location, o.Keys, o.Encrypt, false, false)
	if err == nil && o.Memory != nil {
		r.BoundBlockIndex(o.Memory.Size()/blockIndexShare, o.Notes)
	}
	return r, err
}

// blockIndexShare: a backup into a deduplicating repository holds what
// it knows of the block store's index within 1/blockIndexShare of
// --memory (see dedup.Store.Budget): 16 bytes a block, so the default
// 512 MiB knows 8M blocks, 512 GiB of distinct 64 KiB blocks.
const blockIndexShare = 4

// Create makes a repository at an empty location (init alone does).
func (o Options) Create(ctx context.Context) (*repo.Repo, error) {
	return Open(ctx, o.Location, o.Keys, o.Encrypt, true, o.Dedup)
}

// Lock describes the lock op takes, waiting up to LockWait.
func (o Options) Lock(op string, exclusive bool) repo.LockOptions {
	return repo.LockOptions{Operation: op, Exclusive: exclusive, Wait: o.LockWait,
		Report: func(msg string) {
			if o.Notes != nil {
				fmt.Fprintf(o.Notes, "%s: %s\n", op, msg)
			}
		}}
}

// Acquire takes the lock op needs on r (see repo.Acquire); it returns the
// context to run under and the release.
func (o Options) Acquire(ctx context.Context, r *repo.Repo, op string, exclusive bool) (context.Context, func(), error) {
	return r.Acquire(ctx, o.Lock(op, exclusive))
}

// OpenLocked opens the existing repository and takes the lock op needs;
// it returns the repository, the context to run under and the release.
func (o Options) OpenLocked(ctx context.Context, op string, exclusive bool) (*repo.Repo, context.Context, func(), error) {
	r, err := o.Open(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	lctx, release, err := o.Acquire(ctx, r, op, exclusive)
	if err != nil {
		return nil, nil, nil, err
	}
	return r, lctx, release, nil
}

// ResolveLocked opens the repository and resolves ref under the shared
// lock of op (see repo.ResolveLocked); latest names the latest backup of
// kind ("" for any). With ref "" it resolves none and only takes the
// lock.
func (o Options) ResolveLocked(ctx context.Context, ref, kind, op string) (*repo.Repo, *archive.Manifest, context.Context, func(), error) {
	if ref == "" {
		r, lctx, release, err := o.OpenLocked(ctx, op, false)
		return r, nil, lctx, release, err
	}
	r, err := o.Open(ctx)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	m, lctx, release, err := r.ResolveLocked(ctx, ref, kind, o.Lock(op, false))
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return r, m, lctx, release, nil
}

// Encryption makes r encrypt what it stores from now on when Encrypt or
// the repository asks for it (see the function Encryption).
func (o Options) Encryption(ctx context.Context, r *repo.Repo) (*archive.Encryption, error) {
	return Encryption(ctx, r, o.Encrypt)
}

// CheckKind refuses a kind (--kind) that names no kind of backup.
func CheckKind(kind string) error {
	switch kind {
	case "", archive.KindPhysical, archive.KindLogical:
		return nil
	}
	return usagef("--kind %q: want physical or logical", kind)
}

// Corrupt reports whether err says stored data does not match its
// checksums or structure (see archive.IsCorrupt).
func Corrupt(err error) bool { return archive.IsCorrupt(err) }

// Unlock opens the repository and removes its stale locks, or with all
// every lock (see repo.Unlock); the result is nil when the repository
// could not be opened, else it says what was removed, also on failure.
func (o Options) Unlock(ctx context.Context, all bool) (*repo.Unlocked, error) {
	r, err := o.Open(ctx)
	if err != nil {
		return nil, err
	}
	removed, err := r.Unlock(ctx, all, repo.DefaultStaleAfter)
	res := r.Unlocked(removed, err)
	return &res, err
}
