package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/crypt"
	"github.com/backstream/backstream/internal/storage/limit"
	"github.com/backstream/backstream/internal/storage/local"
	"github.com/backstream/backstream/internal/storage/retry"
	"github.com/backstream/backstream/internal/storage/s3"
)

// openBackend opens the store of a --repo location (see openStore) under
// the decorators the global flags ask for: retries of transient failures
// (within --s3-retry-window) and the --limit-upload and --limit-download
// rates. The repository adds encryption above them (see repo.OpenWith), so
// the limits count the bytes stored.
func (g *globals) openBackend(ctx context.Context, location string, create bool) (storage.Backend, error) {
	b, err := g.openStore(ctx, location, create)
	if err != nil {
		return nil, err
	}
	b = retry.New(b, retry.Policy{Window: g.s3Retry})
	if g.uploadLimit != nil || g.downloadLimit != nil {
		b = limit.New(b, g.uploadLimit, g.downloadLimit)
	}
	return b, nil
}

// openStore maps a --repo location to a storage backend. A plain path or
// a file:// URL is a local directory, created only when create is set;
// s3://bucket/prefix is an S3-compatible bucket (credentials and endpoint
// from the usual AWS environment variables and files, or --s3-endpoint).
func (g *globals) openStore(ctx context.Context, location string, create bool) (storage.Backend, error) {
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
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return nil, noRepository(location, err)
		} else if err != nil {
			return nil, fmt.Errorf("repository %s: %w", dir, err)
		}
	}
	return local.New(dir)
}

// passphraseEnv holds a passphrase when no --passphrase-file is given.
const passphraseEnv = "BACKSTREAM_PASSPHRASE"

// keyHint is what a read of an encrypted object without a key is told.
const keyHint = "--identity-file, --passphrase-file or " + passphraseEnv

// loadKeys reads the key flags: a recipients file (age public keys, one
// per line, # for comments), an identities file (age secret keys) and a
// passphrase (from a file, or the environment); any may be absent. A
// passphrase serves both ways.
func (g *globals) loadKeys() (crypt.Keys, error) {
	var k crypt.Keys
	if err := readKeyFile("--recipient-file", g.recipientFile, k.AddRecipients); err != nil {
		return k, err
	}
	if err := readKeyFile("--identity-file", g.identityFile, k.AddIdentities); err != nil {
		return k, err
	}
	pass := os.Getenv(passphraseEnv)
	if g.passphraseFile != "" {
		data, err := os.ReadFile(g.passphraseFile)
		if err != nil {
			return k, fmt.Errorf("--passphrase-file: %w", err)
		}
		pass = strings.TrimRight(string(data), "\r\n")
	}
	return k, k.SetPassphrase(pass)
}

// readKeyFile parses the file a key flag names, if it names one.
func readKeyFile(flag, file string, parse func(io.Reader) error) error {
	if file == "" {
		return nil
	}
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	defer f.Close()
	if err := parse(f); err != nil {
		return fmt.Errorf("%s %s: %w", flag, file, err)
	}
	return nil
}

// openRepo opens the repository named by --repo; with create (init
// alone) it makes one at an empty location instead.
//
// The repository reads encrypted objects with the identities given (and
// plain ones as they are); it encrypts what it writes only for a backup
// with --encrypt (see encryption).
func (g *globals) openRepo(ctx context.Context, create bool) (*repo.Repo, error) {
	keys, err := g.loadKeys()
	if err != nil {
		return nil, usageError{err}
	}
	// Checked before the repository is opened, which may create it.
	switch {
	case g.encrypt && len(keys.Recipients) == 0 && keys.Passphrase == "":
		return nil, usagef("--encrypt needs --recipient-file, --passphrase-file or $%s", passphraseEnv)
	case !g.encrypt && g.recipientFile != "":
		return nil, usagef("--recipient-file needs --encrypt")
	}
	b, err := g.openBackend(ctx, g.repo, create)
	if err != nil {
		return nil, err
	}
	if create {
		r, err := repo.Init(ctx, b, repo.Options{Keys: keys, Encrypt: g.encrypt})
		if errors.Is(err, repo.ErrExists) || errors.Is(err, repo.ErrNotRepository) {
			return nil, usageError{err}
		}
		return r, err
	}
	r, err := repo.OpenWith(ctx, b, repo.Options{Keys: keys})
	if errors.Is(err, repo.ErrNotRepository) {
		return nil, noRepository(g.repo, err)
	}
	return r, err
}

// noRepository is the error of a command given a location that holds no
// repository: only init creates one.
func noRepository(location string, err error) error {
	return usagef("no repository at %s (%v); create one with: backstream init --repo %s", location, err, location)
}

// registerEncrypt adds the flags of the commands that store encrypted.
func (g *globals) registerEncrypt(f *pflag.FlagSet) {
	o := options.Bind(f)
	o.Bool("encrypt", &g.encrypt)
	o.String("recipient-file", &g.recipientFile)
}

// encryption makes r encrypt what it stores from now on, when --encrypt
// asks for it or the repository has its own encryption (init --encrypt),
// and returns what the manifests record of the keys. With a passphrase,
// objects are encrypted to the repository's key for that passphrase
// (made now if there is none; see repo.KeysDir).
func (g *globals) encryption(ctx context.Context, r *repo.Repo) (*archive.Encryption, error) {
	if !g.encrypt && !r.EncryptsByDefault() {
		return nil, nil
	}
	return r.Encrypt(ctx)
}

// withKeyHint tells a user who read an encrypted object without a key
// which flags give one.
func withKeyHint(err error) error {
	if errors.Is(err, crypt.ErrNoIdentity) {
		return fmt.Errorf("%w (%s)", err, keyHint)
	}
	return err
}
