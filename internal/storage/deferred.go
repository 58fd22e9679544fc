package storage

import (
	"context"
	"errors"
	"sync"
)

// Deferred durability. A Put makes its object durable before it returns:
// a local backend fsyncs the file and its directory, which makes the disk
// commit its journal and flush its cache there and then. A writer that
// stores many objects nothing names until a later object does (a
// deduplicating backup's packs, which its index objects name) needs them
// durable only before that later object is stored: it Puts them with the
// context DeferSync returns and calls Sync before storing what names
// them, so that the disk flushes once instead of once an object.
//
// Under such a context a backend may make an object visible before it is
// durable: until Sync returns, a crash (of the machine, not of the
// process) may leave the object torn or missing, and the object it
// replaced lost, so a writer defers only objects of new names. A backend
// that cannot defer (an object store, whose Put is durable when it
// returns) ignores the context. Decorators pass the context on with their
// Puts, and Sync reaches the store at the bottom of the chain directly,
// so no decorator needs to know of it.

// ObjectSyncer is a backend whose Puts under a DeferSync context left
// objects to be made durable: SyncObjects makes the named ones durable.
type ObjectSyncer interface {
	SyncObjects(ctx context.Context, names []string) error
}

// Syncs are the objects Puts under a DeferSync context left to be made
// durable. It is safe for concurrent use.
type Syncs struct {
	mu      sync.Mutex
	pending map[ObjectSyncer][]string
}

type syncsKey struct{}

// DeferSync returns a context under which Puts may leave their objects'
// durability to the Syncs returned.
func DeferSync(ctx context.Context) (context.Context, *Syncs) {
	s := &Syncs{pending: map[ObjectSyncer][]string{}}
	return context.WithValue(ctx, syncsKey{}, s), s
}

// DeferredSyncs returns the Syncs of ctx, which a backend's Put adds what
// it did not make durable to: nil when every Put must be durable when it
// returns.
func DeferredSyncs(ctx context.Context) *Syncs {
	s, _ := ctx.Value(syncsKey{}).(*Syncs)
	return s
}

// Add records that o's object name is not durable yet.
func (s *Syncs) Add(o ObjectSyncer, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending[o] = append(s.pending[o], name)
}

// Sync makes every object added so far durable; those added while it runs
// are left to the next Sync. After an error, none of them is known to be
// durable: the caller must not store what names them.
func (s *Syncs) Sync(ctx context.Context) error {
	s.mu.Lock()
	pending := s.pending
	s.pending = map[ObjectSyncer][]string{}
	s.mu.Unlock()
	var errs []error
	for o, names := range pending {
		if err := o.SyncObjects(ctx, names); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
