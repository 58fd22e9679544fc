// Package crypt encrypts a repository's data objects with age
// (filippo.io/age, the format of the age command): a storage.Backend
// wrapper that stores every object under backups/ and binlogs/, except the
// manifests and begun markers (which hold no row data and must be readable
// to list and plan), as <name>.age. Callers keep using plain names; `age -d
// | zstd -dc | mbstream -x` still restores a stream object by hand.
package crypt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"filippo.io/age"

	"github.com/backstream/backstream/internal/storage"
)

// Suffix ends the name of every encrypted object.
const Suffix = ".age"

// Backend encrypts on Put when it has Recipients (otherwise it stores
// plainly), and on Open reads name.age, decrypting it with Identities, when
// that is what the backend holds, else name: one repository can hold
// encrypted and plain backups.
type Backend struct {
	storage.Backend
	Recipients []age.Recipient
	Identities []age.Identity
}

// Encrypted reports whether an object of that name is stored encrypted.
func Encrypted(name string) bool {
	switch path.Base(name) {
	case "manifest.json", "begun.json":
		return false
	}
	return strings.HasPrefix(name, "backups/") || strings.HasPrefix(name, "binlogs/")
}

// ErrNoIdentity reports a read of an encrypted object without a key.
var ErrNoIdentity = errors.New("the object is encrypted and no key was given (--identity-file, --passphrase-file or BACKSTREAM_PASSPHRASE)")

// Put encrypts r into name.age and returns the plain bytes it took.
func (b *Backend) Put(ctx context.Context, name string, r io.Reader) (int64, error) {
	if !Encrypted(name) || len(b.Recipients) == 0 {
		return b.Backend.Put(ctx, name, r)
	}
	pr, pw := io.Pipe()
	var plain int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		w, err := age.Encrypt(pw, b.Recipients...)
		if err == nil {
			plain, err = io.Copy(w, r)
			if cerr := w.Close(); err == nil {
				err = cerr
			}
		}
		pw.CloseWithError(err)
	}()
	_, err := b.Backend.Put(ctx, name+Suffix, pr)
	if err != nil {
		// Stops the encrypting goroutine at its next write. It is not
		// waited for: it may be blocked reading r, whose writer learns of
		// the failure only once Put has returned.
		pr.CloseWithError(err)
		return 0, err
	}
	<-done // Put read to the end, so the goroutine has finished
	return plain, nil
}

// Open decrypts name.age and returns length plain bytes from off.
func (b *Backend) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	if !Encrypted(name) {
		return b.Backend.Open(ctx, name, off, length)
	}
	rc, err := b.Backend.Open(ctx, name+Suffix, 0, -1)
	if errors.Is(err, fs.ErrNotExist) {
		return b.Backend.Open(ctx, name, off, length)
	}
	if err != nil {
		return nil, err
	}
	if len(b.Identities) == 0 {
		rc.Close()
		return nil, fmt.Errorf("%s: %w", b.Location()+"/"+name+Suffix, ErrNoIdentity)
	}
	dr, err := age.Decrypt(rc, b.Identities...)
	if err != nil {
		rc.Close()
		return nil, fmt.Errorf("%s: cannot decrypt: %w (wrong key?)", b.Location()+"/"+name+Suffix, err)
	}
	if off > 0 {
		if _, err := io.CopyN(io.Discard, dr, off); err != nil && err != io.EOF {
			rc.Close()
			return nil, fmt.Errorf("%s: %w", name+Suffix, err)
		}
	}
	var r io.Reader = dr
	if length >= 0 {
		r = io.LimitReader(dr, length)
	}
	return readCloser{r, rc}, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// Stat describes name, or name.age under the plain name (its size is the
// stored one).
func (b *Backend) Stat(ctx context.Context, name string) (storage.Info, error) {
	if !Encrypted(name) {
		return b.Backend.Stat(ctx, name)
	}
	info, err := b.Backend.Stat(ctx, name+Suffix)
	if errors.Is(err, fs.ErrNotExist) {
		return b.Backend.Stat(ctx, name)
	}
	info.Name = name
	return info, err
}

// List names encrypted objects by their plain names.
func (b *Backend) List(ctx context.Context, prefix string) ([]storage.Info, error) {
	infos, err := b.Backend.List(ctx, prefix)
	for i := range infos {
		if n, ok := strings.CutSuffix(infos[i].Name, Suffix); ok && Encrypted(n) {
			infos[i].Name = n
		}
	}
	return infos, err
}

// Delete removes the object, encrypted or not.
func (b *Backend) Delete(ctx context.Context, name string) error {
	if Encrypted(name) {
		if err := b.Backend.Delete(ctx, name+Suffix); err != nil {
			return err
		}
	}
	return b.Backend.Delete(ctx, name)
}

// Keys are what a command was given to encrypt or decrypt with.
type Keys struct {
	Recipients []age.Recipient
	Identities []age.Identity
	// Public lists the recipients for the manifest: age public keys, or
	// "scrypt passphrase".
	Public []string
}

// PassphraseEnv holds a passphrase when no file is given.
const PassphraseEnv = "BACKSTREAM_PASSPHRASE"

// LoadKeys reads a recipients file (age public keys, one per line, # for
// comments), an identities file (age secret keys) and a passphrase (from
// a file, or the environment); any may be absent. A passphrase serves both
// ways and cannot be mixed with public keys (age's rule).
func LoadKeys(recipientFile, identityFile, passphraseFile string) (Keys, error) {
	var k Keys
	if recipientFile != "" {
		f, err := os.Open(recipientFile)
		if err != nil {
			return k, fmt.Errorf("--recipient-file: %w", err)
		}
		defer f.Close()
		if k.Recipients, err = age.ParseRecipients(f); err != nil {
			return k, fmt.Errorf("--recipient-file %s: %w", recipientFile, err)
		}
		for _, r := range k.Recipients {
			if x, ok := r.(*age.X25519Recipient); ok {
				k.Public = append(k.Public, x.String())
			}
		}
	}
	if identityFile != "" {
		f, err := os.Open(identityFile)
		if err != nil {
			return k, fmt.Errorf("--identity-file: %w", err)
		}
		defer f.Close()
		if k.Identities, err = age.ParseIdentities(f); err != nil {
			return k, fmt.Errorf("--identity-file %s: %w", identityFile, err)
		}
	}
	pass := os.Getenv(PassphraseEnv)
	if passphraseFile != "" {
		data, err := os.ReadFile(passphraseFile)
		if err != nil {
			return k, fmt.Errorf("--passphrase-file: %w", err)
		}
		pass = strings.TrimRight(string(data), "\r\n")
	}
	if pass != "" {
		if len(k.Recipients) > 0 {
			return k, errors.New("a passphrase cannot be combined with --recipient-file (age encrypts to one or the other)")
		}
		r, err := age.NewScryptRecipient(pass)
		if err != nil {
			return k, err
		}
		id, err := age.NewScryptIdentity(pass)
		if err != nil {
			return k, err
		}
		k.Recipients, k.Public = []age.Recipient{r}, []string{"scrypt passphrase"}
		k.Identities = append(k.Identities, id)
	}
	return k, nil
}
