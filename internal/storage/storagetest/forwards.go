package storagetest

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/backstream/backstream/internal/storage"
)

// aborter is a backend that keeps incomplete uploads, as S3 does: it
// records the names AbortUploads is called with and counts one upload
// aborted per call.
type aborter struct {
	storage.Backend
	mu    sync.Mutex
	names []string
}

func (a *aborter) AbortUploads(ctx context.Context, name string) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.names = append(a.names, name)
	return 1, nil
}

// Forwards checks that a decorator hides none of the optional interfaces
// of what it wraps and adds none (today UploadAborter; see
// storage.Lookup): wrap(inner) must have none, since inner, a backend
// without optional interfaces, has none; wrapped around a backend that
// keeps uploads, the decorator must let its AbortUploads be found and
// reach it for the object named.
func Forwards(t *testing.T, inner storage.Backend, wrap func(storage.Backend) storage.Backend) {
	t.Helper()
	if _, ok := storage.Lookup[storage.UploadAborter](inner); ok {
		t.Fatalf("the backend given to wrap, %T, has an UploadAborter of its own", inner)
	}
	if _, ok := storage.Lookup[storage.UploadAborter](wrap(inner)); ok {
		t.Error("the decorator claims an UploadAborter that the backend it wraps does not have")
	}
	keeper := &aborter{Backend: inner}
	ab, ok := storage.Lookup[storage.UploadAborter](wrap(keeper))
	if !ok {
		t.Fatal("the decorator hides the UploadAborter of the backend it wraps")
	}
	const name = "dir/object"
	n, err := ab.AbortUploads(t.Context(), name)
	keeper.mu.Lock()
	defer keeper.mu.Unlock()
	if err != nil || n < 1 || !slices.Contains(keeper.names, name) {
		t.Errorf("AbortUploads(%q) through the decorator = %d, %v, reaching the wrapped backend with %q; want it to reach it for %q",
			name, n, err, keeper.names, name)
	}
}
