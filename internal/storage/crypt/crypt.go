// Package crypt is a storage decorator that encrypts objects with age
// (filippo.io/age, the format of the age command): an object the caller's
// Covers predicate names is stored as <name>.age, encrypted, and read back
// decrypted under its plain name; every other object passes through. So
// `age -d | zstd -dc | mbstream -x` still restores a stream object by hand.
//
// age encrypts in chunks of 64 KiB that authenticate on their own, so a
// ranged Open fetches only the header, the final chunk (which
// authenticates the size) and the chunks that hold the range, with ranged
// Opens of the inner backend: a few requests and about the range's bytes
// however large the object, never the whole of it.
//
// The package knows objects and keys, nothing else: which objects are
// encrypted and where passphrase keys are kept are the caller's choice
// (the repository layer's), and no message names a command-line flag.
package crypt

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"sync"

	"filippo.io/age"

	"github.com/backstream/backstream/internal/storage"
)

// Suffix ends the stored name of every encrypted object.
const Suffix = ".age"

// Options say what a Backend encrypts and where it keeps passphrase keys.
type Options struct {
	// Covers reports whether the object name is stored encrypted; nil
	// covers every name. It must not cover both a name and that name
	// with Suffix appended, or List could not tell them apart.
	Covers func(name string) bool
	// KeyPrefix is where passphrase keys are stored (see
	// Backend.Encrypt): KeyPrefix + <public key> + Suffix.
	KeyPrefix string
}

// Backend encrypts the objects its options cover once Encrypt was called
// (until then it stores them plainly), and reads a covered object from
// name.age, decrypting it with the keys' identities, when that is what the
// inner backend holds, else from name: one store can hold encrypted and
// plain objects.
//
// Info.Size from Stat and List is the size stored, which for an
// encrypted object is age's ciphertext (header, nonce, a tag per 64 KiB);
// Put returns the plain bytes it took.
type Backend struct {
	inner      storage.Backend
	opts       Options
	keys       Keys
	encrypting bool

	unlock    sync.Once
	unlockErr error
}

var (
	_ storage.Backend         = (*Backend)(nil)
	_ storage.Wrapper         = (*Backend)(nil)
	_ storage.LeftoverRemover = (*Backend)(nil)
)

// New wraps inner. It reads encrypted objects with keys' identities and
// passphrase; it writes plainly until Encrypt is called.
func New(inner storage.Backend, keys Keys, opts Options) *Backend {
	keys.Identities = slices.Clone(keys.Identities)
	keys.Recipients = slices.Clone(keys.Recipients)
	return &Backend{inner: inner, keys: keys, opts: opts}
}

// scryptWorkFactor is age's default (about a second to open a key); tests
// lower it.
var scryptWorkFactor = 18

// SetScryptWorkFactor sets the scrypt work factor (log2 of N) of the
// passphrase keys made from now on, for tests only: age's default, 18,
// costs about a second per key opened, and many times that under the race
// detector. Call it before any key is made; a key records its own factor,
// so keys made either way open either way.
func SetScryptWorkFactor(logN int) { scryptWorkFactor = logN }

// covers reports whether name is stored encrypted.
func (b *Backend) covers(name string) bool {
	return b.opts.Covers == nil || b.opts.Covers(name)
}

// ErrNoIdentity reports a read of an encrypted object without a key.
var ErrNoIdentity = errors.New("the object is encrypted and no key was given")

// ErrNoRecipient reports an Encrypt without a recipient or passphrase.
var ErrNoRecipient = errors.New("no recipient or passphrase to encrypt to")

// Location names the inner backend.
func (b *Backend) Location() string { return b.inner.Location() }

// Unwrap returns the inner backend.
func (b *Backend) Unwrap() storage.Backend { return b.inner }

// Put encrypts r into name.age, if name is covered and Encrypt was
// called, and returns the plain bytes it took.
func (b *Backend) Put(ctx context.Context, name string, r io.Reader) (int64, error) {
	if err := storage.CheckName(name); err != nil {
		return 0, err
	}
	if !b.encrypting || !b.covers(name) {
		return b.inner.Put(ctx, name, r)
	}
	pr, pw := io.Pipe()
	var plain int64
	var encErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		w, err := age.Encrypt(pw, b.keys.Recipients...)
		if err == nil {
			plain, err = io.Copy(w, r)
			if cerr := w.Close(); err == nil {
				err = cerr
			}
		}
		encErr = err
		pw.CloseWithError(err)
	}()
	_, err := b.inner.Put(ctx, name+Suffix, pr)
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

// Open decrypts name.age and returns length plain bytes from off; a
// range is read without fetching the rest of the object.
func (b *Backend) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	return b.open(ctx, name, off, length, nil)
}

// EncryptedTo is a view of b for objects known to be encrypted to the
// recipients, age public keys (what Encrypt returned when they were
// written). age's recipient stanzas do not say whom they are for, so a
// header that no key opens reads as a wrong key; but when one of the
// keys b holds is among these recipients, its stanza is in the header
// and did not open: the header is damaged (storage.ErrDamaged).
func (b *Backend) EncryptedTo(recipients []string) storage.Backend {
	return encryptedTo{b, recipients}
}

type encryptedTo struct {
	*Backend
	recipients []string
}

func (e encryptedTo) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	return e.Backend.open(ctx, name, off, length, e.recipients)
}

// open is Open for an object encrypted to recipients (nil: not known).
func (b *Backend) open(ctx context.Context, name string, off, length int64, recipients []string) (io.ReadCloser, error) {
	if err := storage.CheckName(name); err != nil {
		return nil, err
	}
	if !b.covers(name) {
		return b.inner.Open(ctx, name, off, length)
	}
	if off < 0 {
		return nil, fmt.Errorf("opening %s/%s: negative offset %d", b.Location(), name, off)
	}
	if off > 0 || length >= 0 {
		return b.openRange(ctx, name, off, length, recipients)
	}
	rc, err := b.inner.Open(ctx, name+Suffix, 0, -1)
	if errors.Is(err, fs.ErrNotExist) {
		return b.inner.Open(ctx, name, off, length)
	}
	if err != nil {
		return nil, err
	}
	if err := b.haveIdentities(ctx, name); err != nil {
		rc.Close()
		return nil, err
	}
	object := b.Location() + "/" + name + Suffix
	src := &sourceReader{r: rc}
	dr, err := age.Decrypt(src, b.keys.Identities...)
	if err != nil {
		rc.Close()
		return nil, b.headerError(object, src, err, recipients)
	}
	return readCloser{&damageReader{r: dr, src: src, object: object}, rc}, nil
}

// openRange reads length plain bytes from off (length < 0: to the end)
// of name.age, or of name if that is what the store holds, fetching
// only the stored bytes they need: the header, the final chunk (age
// authenticates the plain size with it) and the chunks that hold the
// range.
func (b *Backend) openRange(ctx context.Context, name string, off, length int64, recipients []string) (io.ReadCloser, error) {
	info, err := b.inner.Stat(ctx, name+Suffix)
	if errors.Is(err, fs.ErrNotExist) {
		return b.inner.Open(ctx, name, off, length)
	}
	if err != nil {
		return nil, err
	}
	if err := b.haveIdentities(ctx, name); err != nil {
		return nil, err
	}
	object := b.Location() + "/" + name + Suffix
	src := &rangeSource{ctx: ctx, inner: b.inner, name: name + Suffix}
	ra, size, err := age.DecryptReaderAt(src, info.Size, b.keys.Identities...)
	if err != nil {
		src.Close()
		return nil, b.headerError(object, src, err, recipients)
	}
	start, end := min(off, size), size
	if length >= 0 && length < end-start {
		end = start + length
	}
	if start < end {
		// The chunks end the object, so the plain size tells where they
		// start, and where the last one holding the range ends.
		chunks := max(1, (size+plainChunk-1)/plainChunk)
		first := info.Size - size - chunks*chunkTag
		last := (end - 1) / plainChunk
		src.spanEnd = min(info.Size, first+(last+1)*(plainChunk+chunkTag))
	}
	// Reading age's ReaderAt through a buffer of a few chunks keeps
	// small reads from each costing a ReadAt, which allocates a chunk.
	r := bufio.NewReaderSize(io.NewSectionReader(ra, start, end-start), 4*plainChunk)
	return readCloser{&damageReader{r: r, src: src, object: object}, src}, nil
}

// age's payload, after the header and a nonce, is chunks of 64 KiB of
// plain text, each followed by its tag; the final chunk may be shorter
// (empty only if the whole plain text is).
const (
	plainChunk = 64 << 10
	chunkTag   = 16
)

// haveIdentities unlocks the passphrase keys and reports reading the
// encrypted name without any key.
func (b *Backend) haveIdentities(ctx context.Context, name string) error {
	if err := b.unlockKeys(ctx); err != nil {
		return err
	}
	if len(b.keys.Identities) == 0 {
		return fmt.Errorf("%s: %w", b.Location()+"/"+name+Suffix, ErrNoIdentity)
	}
	return nil
}

// headerError is the error of age failing to open the object: a wrong
// key, unless one of the recipients it was encrypted to is a key b
// holds; damage; or a failure to read the stored bytes.
func (b *Backend) headerError(object string, src source, err error, recipients []string) error {
	var wrong *age.NoIdentityMatchError
	if !errors.As(err, &wrong) {
		return damage(object, src, err)
	}
	if key := b.recipientHeld(recipients); key != "" && src.failure() == nil {
		return fmt.Errorf("%s: %w: the header does not open with the key for %s, one of the recipients it was encrypted to: %v", object, storage.ErrDamaged, key, err)
	}
	return fmt.Errorf("%s: cannot decrypt: %w (wrong key?)", object, err)
}

// recipientHeld returns the first of recipients whose X25519 identity b
// holds (a given identity, or a passphrase key it unlocked), or "".
func (b *Backend) recipientHeld(recipients []string) string {
	for _, id := range b.keys.Identities {
		if x, ok := id.(*age.X25519Identity); ok && slices.Contains(recipients, x.Recipient().String()) {
			return x.Recipient().String()
		}
	}
	return ""
}

// A source gives age the stored bytes of an object and remembers its
// last failure to read them, so that such a failure is not taken for
// damage.
type source interface {
	failure() error
}

// sourceReader is the source of a whole read.
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}

func (s *sourceReader) failure() error { return s.err }

// rangeSource is the source of a ranged read: an io.ReaderAt over the
// stored object that reads it with ranged Opens of the inner backend.
// age reads the header, then the final chunk, then the range's chunks in
// order, each where the one before ended; such a read continues the
// request of the one before, and one request reads on to spanEnd, so a
// range costs a request for the header, one for the final chunk and one
// for its chunks however long it is, and nothing is buffered here. It
// serves one reader at a time.
type rangeSource struct {
	ctx   context.Context
	inner storage.Backend
	name  string
	// spanEnd ends the stored bytes of the range's chunks: a read before
	// it asks for all of them at once. Until it is set (0), a request
	// ends with the read that made it.
	spanEnd int64

	rc       io.ReadCloser // the current request, nil if none
	pos, end int64         // where rc's next byte is and where it ends
	err      error         // of the last read, nil if it succeeded
}

func (s *rangeSource) ReadAt(p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	end := off + int64(len(p))
	if s.rc == nil || off != s.pos || end > s.end {
		s.Close()
		if off < s.spanEnd {
			end = max(end, s.spanEnd)
		}
		rc, err := s.inner.Open(s.ctx, s.name, off, end-off)
		if err != nil {
			s.err = err
			return 0, err
		}
		s.rc, s.pos, s.end = rc, off, end
	}
	n, err := io.ReadFull(s.rc, p)
	s.pos += int64(n)
	if s.pos == s.end {
		s.Close()
	}
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		// Shorter than Stat said: age reports that the object is cut.
		s.err = nil
		return n, io.EOF
	case err != nil:
		s.err = err
		return n, err
	}
	s.err = nil
	return n, nil
}

func (s *rangeSource) failure() error { return s.err }

// Close ends the current request.
func (s *rangeSource) Close() error {
	if s.rc == nil {
		return nil
	}
	err := s.rc.Close()
	s.rc = nil
	return err
}

// damage is the error of age decrypting an object whose stored bytes it
// read: storage.ErrDamaged, unless reading them failed (then that error).
func damage(object string, src source, err error) error {
	if src.failure() != nil {
		return fmt.Errorf("%s: %w", object, err)
	}
	return fmt.Errorf("%s: %w: %v", object, storage.ErrDamaged, err)
}

// damageReader reads the plaintext of object; age's failures to
// authenticate or parse the bytes it read are damage.
type damageReader struct {
	r      io.Reader
	src    source
	object string
}

func (d *damageReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err != nil && err != io.EOF {
		err = damage(d.object, d.src, err)
	}
	return n, err
}

type readCloser struct {
	io.Reader
	io.Closer
}

// Stat describes name, or name.age under the plain name (its size is the
// stored one).
func (b *Backend) Stat(ctx context.Context, name string) (storage.Info, error) {
	if err := storage.CheckName(name); err != nil {
		return storage.Info{}, err
	}
	if !b.covers(name) {
		return b.inner.Stat(ctx, name)
	}
	info, err := b.inner.Stat(ctx, name+Suffix)
	if errors.Is(err, fs.ErrNotExist) {
		return b.inner.Stat(ctx, name)
	}
	info.Name = name
	return info, err
}

// List names encrypted objects by their plain names, sorted by them, and
// leaves out those whose plain name does not start with prefix (name.age
// matches the prefix "name." but name does not).
func (b *Backend) List(ctx context.Context, prefix string) ([]storage.Info, error) {
	infos, err := b.inner.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	out := infos[:0]
	for _, info := range infos {
		if n, ok := strings.CutSuffix(info.Name, Suffix); ok && b.covers(n) {
			info.Name = n
		}
		if strings.HasPrefix(info.Name, prefix) {
			out = append(out, info)
		}
	}
	// Cutting the suffix can change the order: "a.age" sorts after
	// "a-z.age", but "a" before "a-z".
	slices.SortFunc(out, func(x, y storage.Info) int { return strings.Compare(x.Name, y.Name) })
	return out, nil
}

// Delete removes the object, encrypted or not.
func (b *Backend) Delete(ctx context.Context, name string) error {
	if err := storage.CheckName(name); err != nil {
		return err
	}
	if b.covers(name) {
		if err := b.inner.Delete(ctx, name+Suffix); err != nil {
			return err
		}
	}
	return b.inner.Delete(ctx, name)
}

// RemoveLeftovers removes the leftovers of unfinished writes of the
// objects under prefix and of opts.Names, encrypted or not, when the
// inner backend keeps such leftovers (storage.Lookup finds it only then).
// A prefix covers both forms of every name under it; a name is forwarded
// in both forms, since a plain forward would miss name.age and pruning a
// killed encrypted backup on MinIO would leave its uploads behind.
func (b *Backend) RemoveLeftovers(ctx context.Context, prefix string, opts storage.LeftoverOptions) (storage.Leftovers, error) {
	lr, ok := storage.Lookup[storage.LeftoverRemover](b.inner)
	if !ok {
		return storage.Leftovers{}, nil
	}
	var names []string
	for _, name := range opts.Names {
		names = append(names, name)
		if b.covers(name) {
			names = append(names, name+Suffix)
		}
	}
	opts.Names = names
	return lr.RemoveLeftovers(ctx, prefix, opts)
}

// unlockKeys adds the passphrase keys the passphrase opens to the
// identities, once. Keys of other passphrases are passed over: a store
// may hold objects encrypted with several.
func (b *Backend) unlockKeys(ctx context.Context) error {
	if b.keys.Passphrase == "" {
		return nil
	}
	b.unlock.Do(func() {
		ids, err := b.passphraseKeys(ctx)
		b.keys.Identities = append(ids, b.keys.Identities...)
		b.unlockErr = err
	})
	return b.unlockErr
}

// passphraseKeys reads every key under KeyPrefix that the passphrase opens.
func (b *Backend) passphraseKeys(ctx context.Context) ([]age.Identity, error) {
	scrypt, err := age.NewScryptIdentity(b.keys.Passphrase)
	if err != nil {
		return nil, err
	}
	infos, err := b.inner.List(ctx, b.opts.KeyPrefix)
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
	rc, err := b.inner.Open(ctx, name, 0, -1)
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

// Encrypt makes Put encrypt the covered objects from now on, to the keys'
// recipients and, with a passphrase, to the passphrase key: an age X25519
// identity stored under KeyPrefix encrypted with the passphrase (scrypt),
// made now if the store holds none for this passphrase. Encrypting to
// such a key rather than to the passphrase itself makes the costly scrypt
// derivation run once per command, not once per object in each direction.
// By hand:
//
//	age -d keys/age1....age > key.txt    # asks for the passphrase
//	age -d -i key.txt streams/00000.xbs.zst.age | zstd -dc | mbstream -x
//
// It returns the X25519 public keys encrypted to and the name of the
// passphrase key ("" without a passphrase), for the caller's records. Call
// it before the Backend is used concurrently.
func (b *Backend) Encrypt(ctx context.Context) (public []string, passphraseKey string, err error) {
	if len(b.keys.Recipients) == 0 && b.keys.Passphrase == "" {
		return nil, "", ErrNoRecipient
	}
	public = slices.Clone(b.keys.Public)
	if b.keys.Passphrase != "" {
		key, object, err := b.usePassphraseKey(ctx)
		if err != nil {
			return nil, "", err
		}
		public, passphraseKey = append(public, key), object
	}
	b.encrypting = true
	return public, passphraseKey, nil
}

// usePassphraseKey adds the passphrase key to the recipients, making and
// storing it first if there is none yet, and returns its public key and
// object name.
func (b *Backend) usePassphraseKey(ctx context.Context) (public, object string, err error) {
	if err := b.unlockKeys(ctx); err != nil {
		return "", "", err
	}
	for _, id := range b.keys.Identities {
		if x, ok := id.(*age.X25519Identity); ok && b.isPassphraseKey(ctx, x) {
			b.keys.Recipients = append(b.keys.Recipients, x.Recipient())
			return x.Recipient().String(), b.keyObject(x), nil
		}
	}
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return "", "", err
	}
	scrypt, err := age.NewScryptRecipient(b.keys.Passphrase)
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
	if _, err := b.inner.Put(ctx, b.keyObject(id), &buf); err != nil {
		return "", "", fmt.Errorf("store the passphrase key: %w", err)
	}
	b.keys.Identities = append([]age.Identity{id}, b.keys.Identities...)
	b.keys.Recipients = append(b.keys.Recipients, id.Recipient())
	return id.Recipient().String(), b.keyObject(id), nil
}

// isPassphraseKey tells a key read from KeyPrefix from one given as an
// identity.
func (b *Backend) isPassphraseKey(ctx context.Context, id *age.X25519Identity) bool {
	_, err := b.inner.Stat(ctx, b.keyObject(id))
	return err == nil
}

func (b *Backend) keyObject(id *age.X25519Identity) string {
	return b.opts.KeyPrefix + id.Recipient().String() + Suffix
}
