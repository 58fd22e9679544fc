package crypt

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/backstream/backstream/internal/storage/faulty"
	"github.com/backstream/backstream/internal/storage/local"
)

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	inner, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	id, _ := age.GenerateX25519Identity()
	other, _ := age.GenerateX25519Identity()
	w := &Backend{Backend: inner, Recipients: []age.Recipient{id.Recipient()}}
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
	// A manifest stays plain.
	if _, err := w.Put(ctx, "backups/x/manifest.json", strings.NewReader("{}")); err != nil {
		t.Fatal(err)
	}
	if _, err := inner.Stat(ctx, "backups/x/manifest.json"); err != nil {
		t.Errorf("manifest not stored plainly: %v", err)
	}

	r := &Backend{Backend: inner, Identities: []age.Identity{id}}
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
	if _, err := (&Backend{Backend: inner}).Open(ctx, "backups/x/streams/00000.xbs.zst", 0, -1); err == nil || !strings.Contains(err.Error(), "no key was given") {
		t.Errorf("Open without a key: %v", err)
	}
	if _, err := (&Backend{Backend: inner, Identities: []age.Identity{other}}).Open(ctx, "backups/x/streams/00000.xbs.zst", 0, -1); err == nil || !strings.Contains(err.Error(), "cannot decrypt") {
		t.Errorf("Open with another key: %v", err)
	}
	if err := r.Delete(ctx, "backups/x/streams/00000.xbs.zst"); err != nil {
		t.Fatal(err)
	}
	if infos, _ := inner.List(ctx, "backups/x/streams/"); len(infos) != 0 {
		t.Errorf("left after Delete: %+v", infos)
	}
}

// A passphrase encrypts to the repository's key for that passphrase: made
// once, found again by later commands, opened with one scrypt derivation;
// another passphrase gets a key of its own and cannot read the first's
// objects.
func TestPassphraseKeys(t *testing.T) {
	ctx := context.Background()
	defer func(f int) { scryptWorkFactor = f }(scryptWorkFactor)
	scryptWorkFactor = 10
	inner, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	put := func(pass, name string) (public, object string) {
		t.Helper()
		w := &Backend{Backend: inner, Passphrase: pass}
		public, object, err := w.UsePassphraseKey(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Put(ctx, name, strings.NewReader("rows of "+name)); err != nil {
			t.Fatal(err)
		}
		return public, object
	}
	read := func(pass, name string) (string, error) {
		r := &Backend{Backend: inner, Passphrase: pass}
		rc, err := r.Open(ctx, name, 0, -1)
		if err != nil {
			return "", err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		return string(b), err
	}
	pub1, obj1 := put("first passphrase", "backups/a/streams/00000.xbs")
	if obj1 != KeysDir+pub1+Suffix || !strings.HasPrefix(pub1, "age1") {
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
	keys, err := inner.List(ctx, KeysDir)
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

// A backend that stops reading before the end without an error (a write
// cut short) makes Put fail, not hang.
func TestPutCutShort(t *testing.T) {
	ctx := context.Background()
	inner, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cut := faulty.New(inner)
	cut.Add(faulty.Fault{Op: faulty.OpPut, After: 4096, Truncate: true})
	id, _ := age.GenerateX25519Identity()
	w := &Backend{Backend: cut, Recipients: []age.Recipient{id.Recipient()}}
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
