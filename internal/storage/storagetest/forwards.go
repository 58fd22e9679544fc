package storagetest

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/backstream/backstream/internal/storage"
)

// remover is a backend that keeps leftovers of unfinished writes, as S3
// and local directories do: it records the prefixes and names
// RemoveLeftovers is called with and counts one leftover per call.
type remover struct {
	storage.Backend
	mu       sync.Mutex
	prefixes []string
	names    []string
}

func (r *remover) RemoveLeftovers(ctx context.Context, prefix string, opts storage.LeftoverOptions) (storage.Leftovers, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prefixes = append(r.prefixes, prefix)
	r.names = append(r.names, opts.Names...)
	return storage.Leftovers{Uploads: 1}, nil
}

// plain hides every optional interface of the backend it holds: only the
// methods of storage.Backend are promoted.
type plain struct{ storage.Backend }

// Forwards checks that a decorator hides none of the optional interfaces
// of what it wraps and adds none (today LeftoverRemover; see
// storage.Lookup): wrapped around a backend without optional interfaces
// (inner, with its own hidden) it must have none; wrapped around a backend
// that keeps leftovers, it must let its RemoveLeftovers be found and reach
// it with the prefix and the names given.
func Forwards(t *testing.T, inner storage.Backend, wrap func(storage.Backend) storage.Backend) {
	t.Helper()
	bare := plain{inner}
	if _, ok := storage.Lookup[storage.LeftoverRemover](wrap(bare)); ok {
		t.Error("the decorator claims a LeftoverRemover that the backend it wraps does not have")
	}
	keeper := &remover{Backend: bare}
	lr, ok := storage.Lookup[storage.LeftoverRemover](wrap(keeper))
	if !ok {
		t.Fatal("the decorator hides the LeftoverRemover of the backend it wraps")
	}
	const prefix, name = "dir/", "dir/object"
	got, err := lr.RemoveLeftovers(t.Context(), prefix, storage.LeftoverOptions{Names: []string{name}})
	keeper.mu.Lock()
	defer keeper.mu.Unlock()
	if err != nil || got.Count() < 1 || !slices.Equal(keeper.prefixes, []string{prefix}) || !slices.Contains(keeper.names, name) {
		t.Errorf("RemoveLeftovers(%q, names %q) through the decorator = %v, %v, reaching the wrapped backend with prefixes %q, names %q; want it to reach it once with %q and %q",
			prefix, name, got, err, keeper.prefixes, keeper.names, prefix, name)
	}
}
