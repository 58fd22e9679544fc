package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/local"
)

// openBackend maps a --repo location to a storage backend. A plain path or
// a file:// URL is a local directory, created only when create is set.
func openBackend(location string, create bool) (storage.Backend, error) {
	if location == "" {
		return nil, usagef("no repository: pass --repo or set BACKSTREAM_REPO")
	}
	if scheme, _, ok := strings.Cut(location, "://"); ok && scheme != "file" {
		return nil, usagef("repository %q: unsupported scheme %q (supported: a directory path or file://)", location, scheme)
	}
	dir := strings.TrimPrefix(location, "file://")
	if !create {
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("repository %s: %w", dir, err)
		}
	}
	return local.New(dir)
}

// openRepo opens the repository named by --repo; create makes it if the
// location is empty.
func (g *globals) openRepo(ctx context.Context, create bool) (*repo.Repo, error) {
	b, err := openBackend(g.repo, create)
	if err != nil {
		return nil, err
	}
	if create {
		return repo.OpenOrInit(ctx, b)
	}
	return repo.Open(ctx, b)
}
