package crypt

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/local/localtest"
	"github.com/backstream/backstream/internal/testkit"
)

// A flipped byte in an encrypted object's header or payload, or a cut,
// is damage naming the object (storage.ErrDamaged); only a key that does
// not open the header is "wrong key".
func TestDamageIsNotWrongKey(t *testing.T) {
	ctx := t.Context()
	inner := localtest.New(t)
	id, _ := age.GenerateX25519Identity()
	b := encrypting(t, inner, id)
	plain := make([]byte, 200<<10)
	rand.Read(plain)
	if _, err := b.Put(ctx, "obj", bytes.NewReader(plain)); err != nil {
		t.Fatal(err)
	}
	rc, err := inner.Open(ctx, "obj"+Suffix, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := io.ReadAll(rc)
	rc.Close()
	headerEnd := bytes.Index(stored, []byte("\n---"))
	read := func(b *Backend) error {
		rc, err := b.Open(ctx, "obj", 0, -1)
		if err != nil {
			return err
		}
		defer rc.Close()
		_, err = io.ReadAll(rc)
		return err
	}
	for _, tc := range []struct {
		name   string
		damage func([]byte) []byte
	}{
		{"payload byte", func(s []byte) []byte { s[len(s)/2] ^= 1; return s }},
		{"header MAC byte", func(s []byte) []byte { s[headerEnd+6] ^= 1; return s }},
		{"truncated", func(s []byte) []byte { return s[:len(s)-100] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := inner.Put(ctx, "obj"+Suffix, bytes.NewReader(tc.damage(bytes.Clone(stored)))); err != nil {
				t.Fatal(err)
			}
			err := read(b)
			if !errors.Is(err, storage.ErrDamaged) || !strings.Contains(err.Error(), "obj"+Suffix) || strings.Contains(err.Error(), "wrong key") {
				t.Fatalf("read: %v; want damage naming obj%s, not a wrong key", err, Suffix)
			}
		})
	}
	if _, err := inner.Put(ctx, "obj"+Suffix, bytes.NewReader(stored)); err != nil {
		t.Fatal(err)
	}
	other, _ := age.GenerateX25519Identity()
	err = read(New(inner, keysFor(other), Options{}))
	if errors.Is(err, storage.ErrDamaged) || err == nil || !strings.Contains(err.Error(), "wrong key") {
		t.Fatalf("another key: %v; want wrong key, not damage", err)
	}
	if err := read(b); err != nil {
		t.Fatal(err)
	}
}

// A flipped byte in the recipient stanza makes age find no stanza that
// the key opens, as a wrong key would. Read through EncryptedTo naming
// the key's recipient, it is damage naming the object; a key that is not
// among the recipients is still a wrong key, and so is any key when the
// recipients are not known.
func TestDamagedRecipientStanza(t *testing.T) {
	ctx := t.Context()
	inner := localtest.New(t)
	id, _ := age.GenerateX25519Identity()
	b := encrypting(t, inner, id)
	if _, err := b.Put(ctx, "obj", strings.NewReader("some rows")); err != nil {
		t.Fatal(err)
	}
	rc, err := inner.Open(ctx, "obj"+Suffix, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := io.ReadAll(rc)
	rc.Close()
	damaged := testkit.FlipInAgeStanza(t, stored)
	if _, err := inner.Put(ctx, "obj"+Suffix, bytes.NewReader(damaged)); err != nil {
		t.Fatal(err)
	}
	read := func(b storage.Backend) error {
		rc, err := b.Open(ctx, "obj", 0, -1)
		if err != nil {
			return err
		}
		defer rc.Close()
		_, err = io.ReadAll(rc)
		return err
	}
	recipients := []string{"age1qyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqs3290gq", id.Recipient().String()}
	err = read(b.EncryptedTo(recipients))
	if !errors.Is(err, storage.ErrDamaged) || !strings.Contains(err.Error(), "obj"+Suffix) || strings.Contains(err.Error(), "wrong key") {
		t.Fatalf("our key among the recipients: %v; want damage naming obj%s, not a wrong key", err, Suffix)
	}
	other, _ := age.GenerateX25519Identity()
	for what, b := range map[string]storage.Backend{
		"another key":            New(inner, keysFor(other), Options{}).EncryptedTo(recipients),
		"recipients not known":   b,
		"no recipients recorded": b.EncryptedTo(nil),
	} {
		if err := read(b); errors.Is(err, storage.ErrDamaged) || err == nil || !strings.Contains(err.Error(), "wrong key") {
			t.Errorf("%s: %v; want wrong key, not damage", what, err)
		}
	}
}
