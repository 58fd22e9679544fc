package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/crypt"
	"github.com/backstream/backstream/internal/storage/local"
	"github.com/backstream/backstream/internal/storage/s3"
)

// openBackend maps a --repo location to a storage backend. A plain path or
// a file:// URL is a local directory, created only when create is set;
// s3://bucket/prefix is an S3-compatible bucket (credentials and endpoint
// from the usual AWS environment variables and files, or --s3-endpoint).
func (g *globals) openBackend(ctx context.Context, location string, create bool) (storage.Backend, error) {
	if location == "" {
		return nil, usagef("no repository: pass --repo or set BACKSTREAM_REPO")
	}
	scheme, _, hasScheme := strings.Cut(location, "://")
	switch {
	case scheme == "s3":
		cfg, err := s3.ConfigFromEnv(location)
		if err != nil {
			return nil, usageError{err}
		}
		if g.s3Endpoint != "" {
			cfg.Endpoint = g.s3Endpoint
			if strings.HasPrefix(cfg.Endpoint, "http://") {
				cfg.CAFile = ""
			}
		}
		cfg.RetryWindow = g.s3Retry
		return s3.New(ctx, cfg)
	case hasScheme && scheme != "file":
		return nil, usagef("repository %q: unsupported scheme %q (supported: a directory path, file://, s3://)", location, scheme)
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
//
// The backend reads encrypted objects with the identities given (and
// plain ones as they are); it encrypts what it writes only for a backup
// with --encrypt.
func (g *globals) openRepo(ctx context.Context, create bool) (*repo.Repo, error) {
	keys, err := crypt.LoadKeys(g.recipientFile, g.identityFile, g.passphraseFile)
	if err != nil {
		return nil, usageError{err}
	}
	inner, err := g.openBackend(ctx, g.repo, create)
	if err != nil {
		return nil, err
	}
	b := &crypt.Backend{Backend: inner, Identities: keys.Identities}
	if g.encrypt {
		b.Recipients = keys.Recipients
	}
	if create {
		return repo.OpenOrInit(ctx, b)
	}
	return repo.Open(ctx, b)
}

// encryption is what a backup's manifest records of its keys.
func (g *globals) encryption() (*archive.Encryption, error) {
	if !g.encrypt {
		return nil, nil
	}
	keys, err := crypt.LoadKeys(g.recipientFile, g.identityFile, g.passphraseFile)
	if err != nil {
		return nil, usageError{err}
	}
	if len(keys.Recipients) == 0 {
		return nil, usagef("--encrypt needs --recipient-file, --passphrase-file or $%s", crypt.PassphraseEnv)
	}
	return &archive.Encryption{Scheme: "age", Recipients: keys.Public}, nil
}
