package cli

import (
	"context"
	"strings"

	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/local"
)

// openBackend maps a --repo location to a storage backend. A plain path or
// a file:// URL is a local directory.
func openBackend(location string) (storage.Backend, error) {
	if location == "" {
		return nil, usagef("no repository: pass --repo or set BACKSTREAM_REPO")
	}
	if scheme, _, ok := strings.Cut(location, "://"); ok && scheme != "file" {
		return nil, usagef("repository %q: unsupported scheme %q (supported: a directory path or file://)", location, scheme)
	}
	return local.New(strings.TrimPrefix(location, "file://"))
}

// openRepo opens the repository named by --repo; create makes it if the
// location is empty.
func (g *globals) openRepo(ctx context.Context, create bool) (*repo.Repo, error) {
	b, err := openBackend(g.repo)
	if err != nil {
		return nil, err
	}
	if create {
		return repo.OpenOrInit(ctx, b)
	}
	return repo.Open(ctx, b)
}
