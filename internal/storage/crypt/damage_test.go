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
