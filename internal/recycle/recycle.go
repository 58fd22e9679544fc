// Package recycle keeps idle byte buffers for reuse, held weakly: a
// buffer given back is handed out again, to any goroutine, while it
// lives, and the first garbage collection that finds it idle frees it.
//
// It replaces sync.Pool for the large buffers of a budgeted pipeline
// (frames, pack frames, upload parts): a sync.Pool's buffers stay
// reachable through a whole collection (its victim cache), so the
// runtime's memory limit cannot free them, and a buffer in one
// processor's private slot is out of the others' reach, so a command
// held several buffers where its budget allowed one (verify under
// --memory 128MiB: peak RSS 213 MiB with the pool, 91-93 MiB with this).
package recycle

import (
	"slices"
	"sync"
	"weak"
)

// List is the idle buffers of one size class. Its zero value is empty
// and ready to use; it is safe for concurrent use.
type List struct {
	mu   sync.Mutex
	idle []weak.Pointer[[]byte]
	// prune is the length at which Put drops the pointers of buffers
	// already collected: a class given back more often than asked for
	// (for months, in binlog --follow) keeps at most twice its live ones
	prune int
}

// minPrune is the least length at which Put prunes.
const minPrune = 64

// Get returns an idle buffer that is still alive, as it was given back,
// or nil if there is none.
func (l *List) Get() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	for n := len(l.idle); n > 0; n-- {
		p := l.idle[n-1].Value()
		l.idle = l.idle[:n-1]
		if p != nil {
			return *p
		}
	}
	return nil
}

// Put gives b back for reuse. The caller must not touch it again.
func (l *List) Put(b []byte) {
	w := weak.Make(&b)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.idle) >= max(l.prune, minPrune) {
		l.idle = slices.DeleteFunc(l.idle, func(p weak.Pointer[[]byte]) bool { return p.Value() == nil })
		l.prune = 2 * len(l.idle)
	}
	l.idle = append(l.idle, w)
}
