// Package crypt encrypts a repository's data objects with age
// (filippo.io/age, the format of the age command): a storage.Backend
// wrapper that stores every object under backups/ and binlogs/, except the
// manifests and begun markers (which hold no row data and must be readable
// to list and plan), as <name>.age. Callers keep using plain names; `age -d
// | zstd -dc | mbstream -x` still restores a stream object by hand.
package crypt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"

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
	// Passphrase, if set, opens the repository's passphrase keys (see
	// KeysDir) at the first read of an encrypted object.
	Passphrase string

	unlock    sync.Once
	unlockErr error
}

// KeysDir holds the repository's passphrase keys: each an age X25519
// identity, stored as keys/<its public key>.age encrypted with a
// passphrase (scrypt). A backup "encrypted with a passphrase" is encrypted
// to such a key, so that the costly scrypt derivation runs once per
// command, not once per object in each direction. By hand:
//
//	age -d keys/age1....age > key.txt    # asks for the passphrase
//	age -d -i key.txt streams/00000.xbs.zst.age | zstd -dc | mbstream -x
const KeysDir = "keys/"

// scryptWorkFactor is age's default (about a second to open a key); tests
// lower it.
var scryptWorkFactor = 18

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
	var encErr error
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
		encErr = err
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
	// A Put that returned before the end of its data must not leave the
	// goroutine blocked writing into the pipe.
	pr.CloseWithError(errShortPut)
	<-done
	if encErr != nil {
		return 0, fmt.Errorf("%s: %w", name+Suffix, encErr)
	}
	return plain, nil
}

// errShortPut ends the pipe to a Put that returned before its data did.
var errShortPut = errors.New("backend stopped reading before the end of the object")

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
	if err := b.unlockKeys(ctx); err != nil {
		rc.Close()
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

// AbortUploads aborts the incomplete uploads of the object, encrypted or
// not, when the inner backend keeps such uploads. Without it the wrapper
// would hide the inner backend's AbortUploads from repo.Remove, and
// pruning a killed backup would leave its S3 multipart uploads behind.
func (b *Backend) AbortUploads(ctx context.Context, name string) (int, error) {
	ab, ok := b.Backend.(storage.UploadAborter)
	if !ok {
		return 0, nil
	}
	n, err := ab.AbortUploads(ctx, name)
	if err != nil || !Encrypted(name) {
		return n, err
	}
	m, err := ab.AbortUploads(ctx, name+Suffix)
	return n + m, err
}

// unlockKeys adds the passphrase keys the passphrase opens to Identities,
// once. Keys of other passphrases are passed over: a repository may hold
// backups made with several.
func (b *Backend) unlockKeys(ctx context.Context) error {
	if b.Passphrase == "" {
		return nil
	}
	b.unlock.Do(func() {
		ids, err := b.passphraseKeys(ctx)
		b.Identities = append(ids, b.Identities...)
		b.unlockErr = err
	})
	return b.unlockErr
}

// passphraseKeys reads every key under KeysDir that the passphrase opens.
func (b *Backend) passphraseKeys(ctx context.Context) ([]age.Identity, error) {
	scrypt, err := age.NewScryptIdentity(b.Passphrase)
	if err != nil {
		return nil, err
	}
	infos, err := b.Backend.List(ctx, KeysDir)
	if err != nil {
		return nil, fmt.Errorf("list the repository's keys: %w", err)
	}
	var ids []age.Identity
	for _, info := range infos {
		if !strings.HasSuffix(info.Name, Suffix) {
			continue
		}
		id, err := b.openKey(ctx, info.Name, scrypt)
		var wrong *age.NoIdentityMatchError
		if errors.As(err, &wrong) {
			continue // another passphrase's key
		}
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func (b *Backend) openKey(ctx context.Context, name string, scrypt age.Identity) (age.Identity, error) {
	rc, err := b.Backend.Open(ctx, name, 0, -1)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	dr, err := age.Decrypt(rc, scrypt)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(dr, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", name, err)
	}
	ids, err := age.ParseIdentities(bytes.NewReader(data))
	if err != nil || len(ids) != 1 {
		return nil, fmt.Errorf("key %s: not one age identity (%v)", name, err)
	}
	return ids[0], nil
}

// UsePassphraseKey makes what Put writes readable with the passphrase: it
// encrypts to the repository's key for the passphrase, made (and stored
// under KeysDir) if there is none yet, besides any Recipients. It returns
// the key's public key and object name, for the manifest.
func (b *Backend) UsePassphraseKey(ctx context.Context) (public, object string, err error) {
	if err := b.unlockKeys(ctx); err != nil {
		return "", "", err
	}
	for _, id := range b.Identities {
		if x, ok := id.(*age.X25519Identity); ok && b.isPassphraseKey(ctx, x) {
			b.Recipients = append(b.Recipients, x.Recipient())
			return x.Recipient().String(), keyObject(x), nil
		}
	}
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return "", "", err
	}
	scrypt, err := age.NewScryptRecipient(b.Passphrase)
	if err != nil {
		return "", "", err
	}
	scrypt.SetWorkFactor(scryptWorkFactor)
	var buf bytes.Buffer
	w, err := age.Encrypt(&buf, scrypt)
	if err != nil {
		return "", "", err
	}
	fmt.Fprintf(w, "# backstream repository key, opened with the repository's passphrase\n%s\n", id)
	if err := w.Close(); err != nil {
		return "", "", err
	}
	if _, err := b.Backend.Put(ctx, keyObject(id), &buf); err != nil {
		return "", "", fmt.Errorf("store the passphrase key: %w", err)
	}
	b.Identities = append([]age.Identity{id}, b.Identities...)
	b.Recipients = append(b.Recipients, id.Recipient())
	return id.Recipient().String(), keyObject(id), nil
}

// isPassphraseKey tells a key read from KeysDir from one of --identity-file.
func (b *Backend) isPassphraseKey(ctx context.Context, id *age.X25519Identity) bool {
	_, err := b.Backend.Stat(ctx, keyObject(id))
	return err == nil
}

func keyObject(id *age.X25519Identity) string {
	return KeysDir + id.Recipient().String() + Suffix
}

// Keys are what a command was given to encrypt or decrypt with.
type Keys struct {
	Recipients []age.Recipient
	Identities []age.Identity
	// Public lists the recipients' age public keys, for the manifest.
	Public []string
	// Passphrase opens the repository's passphrase keys (see KeysDir).
	Passphrase string
}

// PassphraseEnv holds a passphrase when no file is given.
const PassphraseEnv = "BACKSTREAM_PASSPHRASE"

// LoadKeys reads a recipients file (age public keys, one per line, # for
// comments), an identities file (age secret keys) and a passphrase (from
// a file, or the environment); any may be absent. A passphrase serves both
// ways.
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
		// Objects encrypted to the passphrase itself (by backstream
		// before passphrase keys) stay readable.
		id, err := age.NewScryptIdentity(pass)
		if err != nil {
			return k, err
		}
		k.Identities = append(k.Identities, id)
		k.Passphrase = pass
	}
	return k, nil
}
