// Package repoaccess opens the repository a command names: the storage
// backend of a location (a directory, file:// or s3://) under the
// decorators every command's repository gets (retries of transient
// failures, the upload and download rates), the keys given for
// encryption, and the repository on them; with Options, made once from
// a command's global flags, also the lock the command takes, the backup
// it names resolved under that lock, and the memory budget its reads
// share. It knows locations and key files, not flags; it must not know
// what any command does with the repository.
package repoaccess

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/crypt"
	"github.com/backstream/backstream/internal/storage/limit"
	"github.com/backstream/backstream/internal/storage/local"
	"github.com/backstream/backstream/internal/storage/retry"
	"github.com/backstream/backstream/internal/storage/s3"
	"github.com/backstream/backstream/internal/throttle"
)

// PassphraseEnv holds a passphrase when no passphrase file is given.
const PassphraseEnv = "BACKSTREAM_PASSPHRASE"

// KeyHint is what a read of an encrypted object without a key is told.
const KeyHint = "--identity-file, --passphrase-file or " + PassphraseEnv

// UsageError is a location or a choice of keys that cannot be right
// whatever the repository holds: the command was called wrongly.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Refused says the error refuses what was asked (exit 2).
func (e *UsageError) Refused() bool { return true }

func usagef(format string, a ...any) error {
	return &UsageError{fmt.Errorf(format, a...)}
}

// Location is where a repository is and how its store is reached.
type Location struct {
	Repo       string        // a directory path, file://path or s3://bucket/prefix
	S3Endpoint string        // replaces the endpoint the environment gives
	S3Retry    time.Duration // how long transient failures are retried
	Limits     Limits
	// Requests, if set, counts the requests sent to an object store by
	// every backend opened from this location (see s3.Requests); a
	// command makes one and shares it, so that the count is the
	// command's.
	Requests *Requests
	// UploadMemory bounds the bytes of parts being uploaded at once to an
	// object store (s3.Config.UploadMemory); 0 is the backend's default.
	UploadMemory int64
}

// Requests counts a command's object-store requests by billing class.
type Requests = s3.Requests

// Limits bound the bytes stored (Upload) and read (Download) per second;
// nil is no bound. A command makes one pair with NewLimits and shares it
// across every repository it opens, so that the bound is the command's.
type Limits struct {
	Upload, Download *throttle.Limiter
}

// NewLimits makes the limiters of the rates given in bytes per second
// (0: no limit).
func NewLimits(upload, download int64) Limits {
	return Limits{Upload: throttle.NewLimiter(upload), Download: throttle.NewLimiter(download)}
}

// KeyFiles name the keys of an encrypted repository; any may be empty.
type KeyFiles struct {
	RecipientFile  string // age recipients (public keys, one per line)
	IdentityFile   string // age identities (secret keys)
	PassphraseFile string // else PassphraseEnv
}

// Backend opens the store of loc (see store) under the decorators every
// repository gets: retries of transient failures (within S3Retry) and the
// upload and download rates. The repository adds encryption above them
// (see repo.OpenWith), so the limits count the bytes stored.
func Backend(ctx context.Context, loc Location, create bool) (storage.Backend, error) {
	b, err := store(ctx, loc, create)
	if err != nil {
		return nil, err
	}
	b = retry.New(b, retry.Policy{Window: loc.S3Retry})
	if l := loc.Limits; l.Upload != nil || l.Download != nil {
		b = limit.New(b, l.Upload, l.Download)
	}
	return b, nil
}

// store maps a location to a storage backend. A plain path or a file://
// URL is a local directory, created only when create is set;
// s3://bucket/prefix is an S3-compatible bucket (credentials and endpoint
// from the usual AWS environment variables and files, or S3Endpoint).
func store(ctx context.Context, loc Location, create bool) (storage.Backend, error) {
	location := loc.Repo
	if location == "" {
		return nil, usagef("no repository: pass --repo or set BACKSTREAM_REPO")
	}
	scheme, _, hasScheme := strings.Cut(location, "://")
	switch {
	case scheme == "s3":
		cfg, err := s3.ConfigFromEnv(location)
		if err != nil {
			return nil, &UsageError{err}
		}
		if loc.S3Endpoint != "" {
			cfg.Endpoint = loc.S3Endpoint
			if strings.HasPrefix(cfg.Endpoint, "http://") {
				cfg.CAFile = ""
			}
		}
		cfg.RetryWindow, cfg.Requests, cfg.UploadMemory = loc.S3Retry, loc.Requests, loc.UploadMemory
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

// LoadKeys reads the key files: a recipients file (# for comments), an
// identities file and a passphrase (from a file, or the environment); any
// may be absent. A passphrase serves both ways.
func LoadKeys(kf KeyFiles) (crypt.Keys, error) {
	var k crypt.Keys
	if err := readKeyFile("--recipient-file", kf.RecipientFile, k.AddRecipients); err != nil {
		return k, err
	}
	if err := readKeyFile("--identity-file", kf.IdentityFile, k.AddIdentities); err != nil {
		return k, err
	}
	pass := os.Getenv(PassphraseEnv)
	if kf.PassphraseFile != "" {
		data, err := os.ReadFile(kf.PassphraseFile)
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

// Open opens the repository at loc; with create (init alone) it makes
// one at an empty location instead, deduplicating with dedup. encrypt
// says the command stores encrypted (--encrypt): it needs a recipient or
// a passphrase.
//
// The repository reads encrypted objects with the identities given (and
// plain ones as they are); it encrypts what it writes only when asked
// (see Encryption).
func Open(ctx context.Context, loc Location, kf KeyFiles, encrypt, create, dedup bool) (*repo.Repo, error) {
	keys, err := LoadKeys(kf)
	if err != nil {
		return nil, &UsageError{err}
	}
	// Checked before the repository is opened, which may create it.
	switch {
	case encrypt && len(keys.Recipients) == 0 && keys.Passphrase == "":
		return nil, usagef("--encrypt needs --recipient-file, --passphrase-file or $%s", PassphraseEnv)
	case !encrypt && kf.RecipientFile != "":
		return nil, usagef("--recipient-file needs --encrypt")
	}
	b, err := Backend(ctx, loc, create)
	if err != nil {
		return nil, err
	}
	if create {
		r, err := repo.Init(ctx, b, repo.Options{Keys: keys, Encrypt: encrypt, Dedup: dedup})
		if errors.Is(err, repo.ErrExists) || errors.Is(err, repo.ErrNotRepository) {
			return nil, &UsageError{err}
		}
		return r, err
	}
	r, err := repo.OpenWith(ctx, b, repo.Options{Keys: keys})
	if errors.Is(err, repo.ErrNotRepository) {
		return nil, noRepository(loc.Repo, err)
	}
	return r, err
}

// noRepository is the error of a command given a location that holds no
// repository: only init creates one.
func noRepository(location string, err error) error {
	return usagef("no repository at %s (%v); create one with: backstream init --repo %s", location, err, location)
}

// Encryption makes r encrypt what it stores from now on, when the
// command asks for it (encrypt) or the repository has its own encryption
// (init --encrypt), and returns what the manifests record of the keys.
// With a passphrase, objects are encrypted to the repository's key for
// that passphrase (made now if there is none; see repo.KeysDir).
func Encryption(ctx context.Context, r *repo.Repo, encrypt bool) (*archive.Encryption, error) {
	if !encrypt && !r.EncryptsByDefault() {
		return nil, nil
	}
	if r.Dedup() && !r.EncryptsByDefault() {
		// Blocks are shared: one a plain backup stored would stay plain
		// under an encrypted one.
		return nil, usagef("--encrypt: the repository deduplicates and is not encrypted; a deduplicating repository is encrypted whole (init --dedup --encrypt) or not at all")
	}
	return r.Encrypt(ctx)
}

// WithKeyHint tells a user who read an encrypted object without a key
// which flags give one.
func WithKeyHint(err error) error {
	if errors.Is(err, crypt.ErrNoIdentity) {
		return fmt.Errorf("%w (%s)", err, KeyHint)
	}
	return err
}
