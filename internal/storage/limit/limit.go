// Package limit is a storage decorator that bounds how fast bytes move
// between backstream and a backend: one budget for the bytes Put sends,
// one for the bytes read from opened objects, each shared by every
// concurrent Put or reader (and by every Backend given the same
// throttle.Limiter), so that a backup or restore takes no more of a link
// than it is allowed.
//
// It counts the bytes that pass through it: wrapped directly around a
// store, the bytes stored (ciphertext, if crypt sits above it). The bound
// is on the average: a store that buffers (S3 reads a part before it
// sends it) sends in bursts, and re-sends a failed part from its buffer
// without passing through here again. The package knows bytes per second
// and objects, nothing of what they hold or of flags.
package limit

import (
	"context"
	"io"

	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/throttle"
)

// Backend bounds the bytes written to and read from the backend it wraps.
// Stat, List and Delete pass through, and so do the optional interfaces
// of the wrapped backend (see storage.Lookup).
type Backend struct {
	inner    storage.Backend
	up, down *throttle.Limiter
}

var (
	_ storage.Backend = (*Backend)(nil)
	_ storage.Wrapper = (*Backend)(nil)
)

// New wraps inner so that Puts take their input at most at up's rate and
// opened objects are read at most at down's; a nil limiter is no limit.
func New(inner storage.Backend, up, down *throttle.Limiter) *Backend {
	return &Backend{inner: inner, up: up, down: down}
}

// Unwrap returns the wrapped backend.
func (b *Backend) Unwrap() storage.Backend { return b.inner }

// Location names the wrapped backend.
func (b *Backend) Location() string { return b.inner.Location() }

// Put stores r under name, taking it no faster than the upload budget.
func (b *Backend) Put(ctx context.Context, name string, r io.Reader) (int64, error) {
	return b.inner.Put(ctx, name, throttle.NewReader(ctx, r, b.up))
}

// Open opens a range of name, to be read no faster than the download
// budget.
func (b *Backend) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	rc, err := b.inner.Open(ctx, name, off, length)
	if err != nil || b.down == nil {
		return rc, err
	}
	return struct {
		io.Reader
		io.Closer
	}{throttle.NewReader(ctx, rc, b.down), rc}, nil
}

// Stat describes name.
func (b *Backend) Stat(ctx context.Context, name string) (storage.Info, error) {
	return b.inner.Stat(ctx, name)
}

// List lists prefix.
func (b *Backend) List(ctx context.Context, prefix string) ([]storage.Info, error) {
	return b.inner.List(ctx, prefix)
}

// Delete removes name.
func (b *Backend) Delete(ctx context.Context, name string) error {
	return b.inner.Delete(ctx, name)
}
