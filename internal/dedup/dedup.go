// Package dedup stores the streams of backups as blocks kept once per
// repository (docs/architecture.md, "A deduplicating repository"). It is
// an archive.Output and an archive.Input: the archive writer hands it the
// frames of a stream written with codec none (whole xbstream chunks), it
// cuts each file's payload on the file's offset grid into blocks, names
// each by a keyed hash, stores the blocks no earlier backup stored (in
// zstd frames of consecutive new blocks, in pack objects), and keeps per
// stream a recipe from which it gives back the very same frames. It
// knows objects of a storage.Backend (its own under dedup/, the recipes
// under the backup's directory), nothing of MariaDB, flags or progress.
package dedup

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sync"

	"github.com/zeebo/blake3"

	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/storage"
)

// Objects of a deduplicating repository.
const (
	KeyObject = "dedup/key"
	packDir   = "dedup/packs/"
	indexDir  = "dedup/index/"
	recipeDir = "recipe/"
	keySize   = 32
	BlockSize = 64 << 10 // a multiple of every innodb_page_size
	// frameTarget is the raw bytes of new blocks compressed together: a
	// restore reads whole frames, so small ones waste little of a frame
	// it needs one block of; libzstd's fastest level compresses InnoDB
	// pages 13% faster in frames of 128 KiB than of 256 KiB (its
	// parameters for inputs up to 128 KiB; docs/benchmarks.md).
	frameTarget = 128 << 10
	// batchTarget is the raw bytes a backup's stream hands its pipeline
	// at once (see pipeline): a few frames, so that a goroutine wakes
	// another once for several frames (perf found the switches between
	// goroutines a tenth of a deduplicated backup's kernel time with one
	// frame a batch; docs/benchmarks.md).
	batchTarget = 4 * frameTarget
	// maxPackFrame bounds the raw bytes of a frame of a pack as readers
	// take them (the format's bound, which a smaller frameTarget keeps
	// readable): a frame is stored once it holds frameTarget, each block
	// adding BlockSize at most.
	maxPackFrame = 1<<20 + BlockSize
)

// packTarget is the bytes of a pack object, and indexPartBlocks the
// most new blocks a backup's stream holds the index of before it stores
// that as an index object of its own (once their packs are stored): some
// 16 GiB of new data, 12 MiB of index. Variables for the tests.
var (
	packTarget      int64 = 32 << 20
	indexPartBlocks       = 1 << 18
)

// Name names a block: the keyed BLAKE3 of its bytes, with the
// repository's key, so that names say nothing of the content to whoever
// lacks it.
type Name [32]byte

func (n Name) String() string { return fmt.Sprintf("%x", n[:8]) }

// Store is a repository's block store.
type Store struct {
	Backend storage.Backend
	// Budget bounds what a backup holds of the names of the blocks the
	// store holds and of those it stores (prefixSize bytes a block; 0: no
	// bound). Past it, the index objects of the oldest backups are left
	// out, and new blocks are no longer remembered: a block that only
	// those name is stored again when met, which takes room and loses
	// nothing. Notes is told when that happens.
	Budget  int64
	Notes   io.Writer
	key     []byte
	keyErr  error
	keyOnce sync.Once
	hashers sync.Pool // keyed with key
}

// Init makes a new store's key. It refuses a backend that has one: a
// second key would make every block stored under the first unknown.
func Init(ctx context.Context, b storage.Backend) error {
	if _, err := b.Stat(ctx, KeyObject); err == nil {
		return fmt.Errorf("%s: %s exists: the block store is already made", b.Location(), KeyObject)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	key := make([]byte, keySize)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	_, err := b.Put(ctx, KeyObject, bytesReader(key))
	return err
}

// New is the block store on b; its key is read when first needed (see
// ready).
func New(b storage.Backend) *Store { return &Store{Backend: b} }

// Open is New, with the key read at once.
func Open(ctx context.Context, b storage.Backend) (*Store, error) {
	s := New(b)
	return s, s.ready(ctx)
}

// ready reads the store's key once: what naming blocks needs (a backup,
// a restore checking what it reads, expire's repack).
func (s *Store) ready(ctx context.Context) error {
	s.keyOnce.Do(func() { s.key, s.keyErr = readKey(ctx, s.Backend) })
	return s.keyErr
}

func readKey(ctx context.Context, b storage.Backend) ([]byte, error) {
	rc, err := b.Open(ctx, KeyObject, 0, -1)
	if err != nil {
		return nil, fmt.Errorf("%s: the block store's key %s (in an encrypted repository, backups and restores need the secret key: --identity-file or --passphrase-file): %w", b.Location(), KeyObject, err)
	}
	defer rc.Close()
	key, err := io.ReadAll(io.LimitReader(rc, keySize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: read %s: %w", b.Location(), KeyObject, err)
	}
	if len(key) != keySize {
		return nil, fmt.Errorf("%s: %s holds %d bytes, want %d: the block store's key is damaged", b.Location(), KeyObject, len(key), keySize)
	}
	return key, nil
}

// name names the block b.
func (s *Store) name(b []byte) Name {
	h, ok := s.hashers.Get().(*blake3.Hasher)
	if !ok {
		var err error
		if h, err = blake3.NewKeyed(s.key); err != nil {
			panic(err) // the key is 32 bytes: readKey checked
		}
	}
	h.Reset() // keeps the key
	h.Write(b)
	var n Name
	h.Sum(n[:0])
	s.hashers.Put(h)
	return n
}

// prefix is what a backup keeps of a block's name: a collision of 128
// bits among the blocks of a repository is not to be met.
type prefix [16]byte

const prefixSize = int64(len(prefix{}))

// known is what one backup knows the store holds: the names its index
// objects list, read once when the backup's first stream opens (under
// the backup's lock: nothing collects meanwhile), sorted, and the blocks
// its streams claim.
type known struct {
	once    sync.Once
	err     error
	budget  int64
	held    []prefix // sorted
	mu      sync.Mutex
	claimed map[prefix]struct{}
}

// load reads the names of the store's index objects, once, within its
// budget.
func (k *known) load(ctx context.Context, s *Store) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	k.once.Do(func() {
		k.budget, k.claimed = s.Budget, map[prefix]struct{}{}
		k.held, k.err = s.held(ctx)
	})
	return k.err
}

// claim reports whether n is new to the store, and from then on counts it
// as held, while the budget lasts: of two streams that meet one new
// block, one stores it.
func (k *known) claim(n Name) bool {
	p := prefix(n[:16])
	if _, found := slices.BinarySearchFunc(k.held, p, comparePrefix); found {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.claimed[p]; ok {
		return false
	}
	// A claim in the map takes about twice what a held name does.
	if k.budget > 0 && (int64(len(k.held))+2*int64(len(k.claimed)))*prefixSize >= k.budget {
		return true
	}
	k.claimed[p] = struct{}{}
	return true
}

func comparePrefix(a, b prefix) int { return bytes.Compare(a[:], b[:]) }

// held reads the names the store's index objects list, newest backups
// first, until the budget is spent, sorted and each once.
func (s *Store) held(ctx context.Context) ([]prefix, error) {
	names, err := s.indexNames(ctx)
	if err != nil {
		return nil, err
	}
	var held []prefix
	for i, name := range names {
		if s.Budget > 0 && int64(len(held))*prefixSize >= s.Budget {
			if s.Notes != nil {
				fmt.Fprintf(s.Notes, "backstream: note: the block index names more blocks than this backup's share of --memory holds (%d bytes): %d of its %d index objects were read; a block only the older backups hold is stored again when met (more --memory avoids that)\n", s.Budget, i, len(names))
			}
			break
		}
		ix, err := s.readIndex(ctx, name)
		if err != nil {
			return nil, err
		}
		for _, k := range ix.Blocks {
			held = append(held, prefix(k.Name[:16]))
		}
	}
	slices.SortFunc(held, comparePrefix)
	return slices.Compact(held), nil
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// frameCodec compresses the frames of packs: zstd at its fastest level.
var frameCodec = func() codec.Codec {
	c, err := codec.Parse("zstd:1")
	if err != nil {
		panic(err) // a constant spec
	}
	return c
}()
