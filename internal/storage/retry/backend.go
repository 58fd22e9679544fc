package retry

import (
	"context"
	"fmt"
	"io"

	"github.com/backstream/backstream/internal/storage"
)

// Backend retries, under its Policy, the transient failures of the Stat,
// List, Delete and Open calls of the backend it wraps, and of reads from
// what Open returned: a read that failed transiently is made again, and
// the wrapped reader resumes where it stopped (as storage.Backend asks of
// readers). Put passes straight through: its reader cannot be read twice,
// so a store retries the requests of a Put itself. Optional interfaces of
// the wrapped backend pass through too (see storage.Lookup).
type Backend struct {
	inner  storage.Backend
	policy Policy
}

var (
	_ storage.Backend = (*Backend)(nil)
	_ storage.Wrapper = (*Backend)(nil)
)

// New wraps inner with retries under p.
func New(inner storage.Backend, p Policy) *Backend {
	return &Backend{inner: inner, policy: p}
}

// Unwrap returns the wrapped backend.
func (b *Backend) Unwrap() storage.Backend { return b.inner }

// Location names the wrapped backend.
func (b *Backend) Location() string { return b.inner.Location() }

// do runs fn under the policy. A context that ended before fn could say
// so is reported naming the operation; fn's own errors name it already.
func (b *Backend) do(ctx context.Context, op, name string, fn func(ctx context.Context) error) error {
	err := b.policy.Do(ctx, fn)
	if err != nil && err == ctx.Err() {
		return fmt.Errorf("%s %s/%s: %w", op, b.inner.Location(), name, err)
	}
	return err
}

// Put stores r under name, without retrying.
func (b *Backend) Put(ctx context.Context, name string, r io.Reader) (int64, error) {
	return b.inner.Put(ctx, name, r)
}

// Stat describes name, retrying transient failures.
func (b *Backend) Stat(ctx context.Context, name string) (storage.Info, error) {
	var info storage.Info
	err := b.do(ctx, "stat", name, func(ctx context.Context) error {
		var err error
		info, err = b.inner.Stat(ctx, name)
		return err
	})
	return info, err
}

// List lists prefix, retrying transient failures.
func (b *Backend) List(ctx context.Context, prefix string) ([]storage.Info, error) {
	var infos []storage.Info
	err := b.do(ctx, "listing", prefix, func(ctx context.Context) error {
		var err error
		infos, err = b.inner.List(ctx, prefix)
		return err
	})
	return infos, err
}

// Delete removes name, retrying transient failures (deleting is
// idempotent).
func (b *Backend) Delete(ctx context.Context, name string) error {
	return b.do(ctx, "deleting", name, func(ctx context.Context) error {
		return b.inner.Delete(ctx, name)
	})
}

// Open opens a range of name, retrying transient failures, and returns a
// reader that retries transient read failures.
func (b *Backend) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	var rc io.ReadCloser
	err := b.do(ctx, "opening", name, func(ctx context.Context) error {
		var err error
		rc, err = b.inner.Open(ctx, name, off, length)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &reader{ctx: ctx, b: b, name: name, rc: rc}, nil
}

// reader reads again after a transient failure, the wrapped reader
// resuming at the same offset. Each Read has its own retry window: a
// read that brings bytes ends a run of failures.
type reader struct {
	ctx  context.Context
	b    *Backend
	name string
	rc   io.ReadCloser
}

func (r *reader) Read(p []byte) (int, error) {
	var n int
	err := r.b.do(r.ctx, "reading", r.name, func(context.Context) error {
		var err error
		n, err = r.rc.Read(p)
		if n > 0 && storage.IsTransient(err) {
			return nil // the bytes first; the next Read resumes after them
		}
		return err
	})
	return n, err
}

func (r *reader) Close() error { return r.rc.Close() }
