package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

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
	// Checked before the repository is opened, which may create it.
	switch {
	case g.encrypt && len(keys.Recipients) == 0 && keys.Passphrase == "":
		return nil, usagef("--encrypt needs --recipient-file, --passphrase-file or $%s", crypt.PassphraseEnv)
	case !g.encrypt && g.recipientFile != "":
		return nil, usagef("--recipient-file needs --encrypt")
	}
	g.keys = keys
	inner, err := g.openBackend(ctx, g.repo, create)
	if err != nil {
		return nil, err
	}
	b := &crypt.Backend{Backend: inner, Identities: keys.Identities, Passphrase: keys.Passphrase}
	if create {
		return repo.OpenOrInit(ctx, b)
	}
	return repo.Open(ctx, b)
}

// registerEncrypt adds the flags of the commands that store encrypted.
func (g *globals) registerEncrypt(f *pflag.FlagSet) {
	f.BoolVar(&g.encrypt, "encrypt", false, "encrypt every stored data object with age, to --recipient-file or a passphrase (--passphrase-file or $"+crypt.PassphraseEnv+")")
	f.StringVar(&g.recipientFile, "recipient-file", "", "age recipients (public keys, one per line) to encrypt to")
}

// encryption makes r encrypt what it stores from now on, when --encrypt
// asks for it, and returns what the manifests record of the keys. With a
// passphrase, objects are encrypted to the repository's key for that
// passphrase (made now if there is none; see crypt.KeysDir).
func (g *globals) encryption(ctx context.Context, r *repo.Repo) (*archive.Encryption, error) {
	if !g.encrypt {
		return nil, nil
	}
	b, ok := r.Backend.(*crypt.Backend)
	if !ok {
		return nil, fmt.Errorf("repository %s was not opened for encryption", r.Backend.Location())
	}
	keys := g.keys
	b.Recipients = keys.Recipients
	enc := &archive.Encryption{Scheme: "age", Recipients: keys.Public}
	if keys.Passphrase != "" {
		public, object, err := b.UsePassphraseKey(ctx)
		if err != nil {
			return nil, err
		}
		enc.Recipients = append(enc.Recipients, public)
		enc.PassphraseKey = object
	}
	return enc, nil
}
