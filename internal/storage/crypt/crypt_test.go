package crypt

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/faulty"
	"github.com/backstream/backstream/internal/storage/local/localtest"
	"github.com/backstream/backstream/internal/storage/s3"
	"github.com/backstream/backstream/internal/storage/s3/s3test"
	"github.com/backstream/backstream/internal/storage/storagetest"
)

// keysFor returns keys that encrypt to and decrypt with id.
func keysFor(id *age.X25519Identity) Keys {
	return Keys{Recipients: []age.Recipient{id.Recipient()}, Identities: []age.Identity{id}, Public: []string{id.Recipient().String()}}
}

// encrypting wraps inner so that it encrypts every object to id.
func encrypting(t *testing.T, inner storage.Backend, id *age.X25519Identity) *Backend {
	t.Helper()
	b := New(inner, keysFor(id), Options{})
	if _, _, err := b.Encrypt(t.Context()); err != nil {
		t.Fatal(err)
	}
	return b
}

// storedSize is the size of the age file of n plain bytes encrypted to
// one X25519 recipient: a header of fixed length, a 16-byte nonce, the
// plain bytes and a 16-byte tag per 64 KiB chunk (an empty input is one
// empty chunk).
func storedSize(t *testing.T) func(n int64) int64 {
	t.Helper()
	id, _ := age.GenerateX25519Identity()
	var buf bytes.Buffer
	w, err := age.Encrypt(&buf, id.Recipient())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	empty := int64(buf.Len()) // header + nonce + one tag
	return func(n int64) int64 {
		chunks := max(1, (n+64<<10-1)/(64<<10))
		return empty + n + 16*(chunks-1)
	}
}

// The suite holds the decorator to the storage contract on a local and on
// an S3 store, encrypting every object; Info.Size is the stored size.
func TestConformance(t *testing.T) {
	id, _ := age.GenerateX25519Identity()
	size := storedSize(t)
	t.Run("local", func(t *testing.T) {
		storagetest.RunWith(t, func(t *testing.T) storage.Backend {
			return encrypting(t, localtest.New(t), id)
		}, storagetest.Options{StoredSize: size})
	})
	t.Run("s3", func(t *testing.T) {
		srv := s3test.Start(t)
		n := 0
		storagetest.RunWith(t, func(t *testing.T) storage.Backend {
			n++
			inner, err := s3.New(t.Context(), s3.Config{Bucket: srv.Bucket, Prefix: fmt.Sprintf("crypt/%d", n), Endpoint: srv.Endpoint, Region: "us-east-1"})
			if err != nil {
				t.Fatal(err)
			}
			return encrypting(t, inner, id)
		}, storagetest.Options{StoredSize: size})
	})
	// Before Encrypt, and for what Covers leaves out, the decorator is
	// invisible.
	t.Run("plain", func(t *testing.T) {
		storagetest.Run(t, func(t *testing.T) storage.Backend {
			return New(localtest.New(t), keysFor(id), Options{})
		})
	})
	t.Run("uncovered", func(t *testing.T) {
		storagetest.Run(t, func(t *testing.T) storage.Backend {
			return encryptingCovered(t, localtest.New(t), id, func(string) bool { return false })
		})
	})
}

func encryptingCovered(t *testing.T, inner storage.Backend, id *age.X25519Identity, covers func(string) bool) *Backend {
	t.Helper()
	b := New(inner, keysFor(id), Options{Covers: covers})
	if _, _, err := b.Encrypt(t.Context()); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	inner := localtest.New(t)
	id, _ := age.GenerateX25519Identity()
	other, _ := age.GenerateX25519Identity()
	// The caller decides what is covered: here everything but .json.
	covers := func(name string) bool { return path.Ext(name) != ".json" }
	w := encryptingCovered(t, inner, id, covers)
	data := bytes.Repeat([]byte("0123456789"), 100000)
	n, err := w.Put(ctx, "backups/x/streams/00000.xbs.zst", bytes.NewReader(data))
	if err != nil || n != int64(len(data)) {
		t.Fatalf("Put = %d, %v; want the plain size %d", n, err, len(data))
	}
	if _, err := inner.Stat(ctx, "backups/x/streams/00000.xbs.zst.age"); err != nil {
		t.Fatalf("not stored as .age: %v", err)
	}
	stored, _ := inner.Open(ctx, "backups/x/streams/00000.xbs.zst.age", 0, -1)
	raw, _ := io.ReadAll(stored)
	stored.Close()
	if bytes.Contains(raw, data[:100]) {
		t.Fatal("the stored object holds the plain text")
	}
	// What the caller does not cover stays plain.
	if _, err := w.Put(ctx, "backups/x/manifest.json", strings.NewReader("{}")); err != nil {
		t.Fatal(err)
	}
	if _, err := inner.Stat(ctx, "backups/x/manifest.json"); err != nil {
		t.Errorf("uncovered object not stored plainly: %v", err)
	}

	r := New(inner, Keys{Identities: []age.Identity{id}}, Options{Covers: covers})
	rc, err := r.Open(ctx, "backups/x/streams/00000.xbs.zst", 12345, 100)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, data[12345:12445]) {
		t.Errorf("ranged read gave %q", got)
	}
	infos, _ := r.List(ctx, "backups/x/")
	if len(infos) != 2 || infos[1].Name != "backups/x/streams/00000.xbs.zst" {
		t.Errorf("List = %+v, want plain names", infos)
	}
	if _, err := New(inner, Keys{}, Options{Covers: covers}).Open(ctx, "backups/x/streams/00000.xbs.zst", 0, -1); err == nil || !strings.Contains(err.Error(), "no key was given") {
		t.Errorf("Open without a key: %v", err)
	}
	if _, err := New(inner, Keys{Identities: []age.Identity{other}}, Options{Covers: covers}).Open(ctx, "backups/x/streams/00000.xbs.zst", 0, -1); err == nil || !strings.Contains(err.Error(), "cannot decrypt") {
		t.Errorf("Open with another key: %v", err)
	}
	if err := r.Delete(ctx, "backups/x/streams/00000.xbs.zst"); err != nil {
		t.Fatal(err)
	}
	if infos, _ := inner.List(ctx, "backups/x/streams/"); len(infos) != 0 {
		t.Errorf("left after Delete: %+v", infos)
	}
}

// Cutting ".age" off stored names must leave List sorted by the plain
// names, and must not let a stored name that matches the prefix only
// through its suffix ("a.age" for the prefix "a.") through.
func TestListPlainNames(t *testing.T) {
	ctx := t.Context()
	id, _ := age.GenerateX25519Identity()
	b := encrypting(t, localtest.New(t), id)
	for _, name := range []string{"a", "a-z", "a.b", "b"} {
		if _, err := b.Put(ctx, name, strings.NewReader(name)); err != nil {
			t.Fatal(err)
		}
	}
	for prefix, want := range map[string][]string{
		"":    {"a", "a-z", "a.b", "b"},
		"a":   {"a", "a-z", "a.b"},
		"a.":  {"a.b"},
		"a.a": nil,
	} {
		infos, err := b.List(ctx, prefix)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, i := range infos {
			got = append(got, i.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("List(%q) = %q, want %q", prefix, got, want)
		}
	}
}

// Appending ".age" must not make an invalid name valid: "" would be
// stored as ".age", "a/" as "a/.age".
func TestInvalidNames(t *testing.T) {
	ctx := t.Context()
	id, _ := age.GenerateX25519Identity()
	inner := localtest.New(t)
	b := encrypting(t, inner, id)
	for _, name := range []string{"", "a/", "a/..", ".x.tmp"} {
		if _, err := b.Put(ctx, name, strings.NewReader("x")); err == nil {
			t.Errorf("Put(%q) succeeded", name)
		}
	}
	if infos, err := inner.List(ctx, ""); err != nil || len(infos) != 0 {
		t.Errorf("stored under invalid names: %+v, %v", infos, err)
	}
}

// A passphrase encrypts to the store's key for that passphrase: made
// once, found again by later commands, opened with one scrypt derivation;
// another passphrase gets a key of its own and cannot read the first's
// objects.
func TestPassphraseKeys(t *testing.T) {
	ctx := context.Background()
	defer func(f int) { scryptWorkFactor = f }(scryptWorkFactor)
	scryptWorkFactor = 10
	inner := localtest.New(t)
	const keyPrefix = "keys/"
	open := func(pass string) *Backend {
		t.Helper()
		var k Keys
		if err := k.SetPassphrase(pass); err != nil {
			t.Fatal(err)
		}
		return New(inner, k, Options{KeyPrefix: keyPrefix, Covers: func(name string) bool { return !strings.HasPrefix(name, keyPrefix) }})
	}
	put := func(pass, name string) (public, object string) {
		t.Helper()
		w := open(pass)
		recorded, object, err := w.Encrypt(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(recorded) != 1 {
			t.Fatalf("encrypting with only a passphrase records %q, want its key alone", recorded)
		}
		if _, err := w.Put(ctx, name, strings.NewReader("rows of "+name)); err != nil {
			t.Fatal(err)
		}
		return recorded[0], object
	}
	read := func(pass, name string) (string, error) {
		rc, err := open(pass).Open(ctx, name, 0, -1)
		if err != nil {
			return "", err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		return string(b), err
	}
	pub1, obj1 := put("first passphrase", "backups/a/streams/00000.xbs")
	if obj1 != keyPrefix+pub1+Suffix || !strings.HasPrefix(pub1, "age1") {
		t.Fatalf("key %s stored as %s", pub1, obj1)
	}
	again, obj := put("first passphrase", "backups/b/streams/00000.xbs")
	if again != pub1 || obj != obj1 {
		t.Fatalf("the same passphrase made a second key: %s, then %s", pub1, again)
	}
	pub2, _ := put("second passphrase", "backups/c/streams/00000.xbs")
	if pub2 == pub1 {
		t.Fatal("two passphrases share a key")
	}
	keys, err := inner.List(ctx, keyPrefix)
	if err != nil || len(keys) != 2 {
		t.Fatalf("keys: %v, %v; want 2", keys, err)
	}
	// The key is stored encrypted with the passphrase, not in the clear.
	stored, _ := inner.Open(ctx, obj1, 0, -1)
	raw, _ := io.ReadAll(stored)
	stored.Close()
	if bytes.Contains(raw, []byte("AGE-SECRET-KEY")) || !bytes.HasPrefix(raw, []byte("age-encryption.org/v1\n-> scrypt ")) {
		t.Fatalf("key object is not a passphrase-encrypted age file: %.80q", raw)
	}
	for _, c := range []struct{ pass, name, want string }{
		{"first passphrase", "backups/a/streams/00000.xbs", "rows of backups/a/streams/00000.xbs"},
		{"first passphrase", "backups/b/streams/00000.xbs", "rows of backups/b/streams/00000.xbs"},
		{"second passphrase", "backups/c/streams/00000.xbs", "rows of backups/c/streams/00000.xbs"},
	} {
		if got, err := read(c.pass, c.name); err != nil || got != c.want {
			t.Errorf("%s with %q: %q, %v", c.name, c.pass, got, err)
		}
	}
	for _, c := range []struct{ pass, name string }{
		{"second passphrase", "backups/a/streams/00000.xbs"},
		{"wrong passphrase", "backups/a/streams/00000.xbs"},
		{"", "backups/a/streams/00000.xbs"},
	} {
		if got, err := read(c.pass, c.name); err == nil {
			t.Errorf("%s read with %q: %q", c.name, c.pass, got)
		}
	}
}

// Encrypt without anything to encrypt to is refused.
func TestEncryptWithoutRecipient(t *testing.T) {
	id, _ := age.GenerateX25519Identity()
	b := New(localtest.New(t), Keys{Identities: []age.Identity{id}}, Options{})
	if _, _, err := b.Encrypt(t.Context()); err != ErrNoRecipient {
		t.Errorf("Encrypt with identities only = %v, want ErrNoRecipient", err)
	}
}

// A backend that stops reading before the end without an error (a write
// cut short) makes Put fail, not hang.
func TestPutCutShort(t *testing.T) {
	ctx := context.Background()
	cut := faulty.New(localtest.New(t))
	cut.Add(faulty.Fault{Op: faulty.OpPut, After: 4096, Truncate: true})
	id, _ := age.GenerateX25519Identity()
	w := encrypting(t, cut, id)
	done := make(chan error, 1)
	go func() {
		_, err := w.Put(ctx, "backups/x/streams/00000.xbs", bytes.NewReader(bytes.Repeat([]byte("x"), 1<<20)))
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "stopped reading before the end") {
			t.Fatalf("Put into a backend that stopped reading: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Put hangs when the backend stops reading early")
	}
}

// The decorator hides no optional interface of what it wraps; removing
// the leftovers of an object removes those of its encrypted form too.
func TestForwards(t *testing.T) {
	storagetest.Forwards(t, localtest.New(t), func(b storage.Backend) storage.Backend { return New(b, Keys{}, Options{}) })
}

// keeper keeps leftovers of unfinished writes as S3 does, recording
// the prefixes and names it is asked to remove them of.
type keeper struct {
	storage.Backend
	prefixes, names []string
}

func (k *keeper) RemoveLeftovers(_ context.Context, prefix string, opts storage.LeftoverOptions) (storage.Leftovers, error) {
	k.prefixes = append(k.prefixes, prefix)
	k.names = append(k.names, opts.Names...)
	return storage.Leftovers{Uploads: len(opts.Names)}, nil
}

// A killed backup may have left uploads under the plain name (written
// before Encrypt) or the encrypted one: both forms of a name go, and a
// prefix, which covers both, goes as it is.
func TestRemoveLeftoversBothForms(t *testing.T) {
	k := &keeper{Backend: localtest.New(t)}
	b := New(k, Keys{}, Options{Covers: func(name string) bool { return name != "d/plain" }})
	lr, ok := storage.Lookup[storage.LeftoverRemover](b)
	if !ok {
		t.Fatal("no LeftoverRemover over one that keeps leftovers")
	}
	got, err := lr.RemoveLeftovers(t.Context(), "d/", storage.LeftoverOptions{Names: []string{"d/obj", "d/plain"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"d/obj", "d/obj" + Suffix, "d/plain"}; !slices.Equal(k.names, want) || got.Uploads != 3 {
		t.Errorf("names %q (%d removed), want %q", k.names, got.Uploads, want)
	}
	if !slices.Equal(k.prefixes, []string{"d/"}) {
		t.Errorf("prefixes %q, want [d/]", k.prefixes)
	}
}
