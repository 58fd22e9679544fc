package crypt

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/local/localtest"
	"github.com/backstream/backstream/internal/testkit"
)

// wholeAndRanged are reads of a whole object, the streaming one and
// ranges that cover it (off, length).
var wholeAndRanged = [][2]int64{{0, -1}, {0, 1 << 40}, {1, -1}}

// readAll reads every range of wholeAndRanged of obj and returns the
// first error, naming the range.
func readAll(b storage.Backend) error {
	for _, r := range wholeAndRanged {
		if _, err := readRange(b, r[0], r[1]); err != nil {
			return fmt.Errorf("Open(%d, %d): %w", r[0], r[1], err)
		}
	}
	return nil
}

// A flipped byte in an encrypted object's header or payload, or a cut,
// is damage naming the object (storage.ErrDamaged); only a key that does
// not open the header is "wrong key". A read of a range is told apart
// the same way.
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
	// Each read must fail alike, so each is checked on its own.
	read := func(b *Backend, r [2]int64) error {
		_, err := readRange(b, r[0], r[1])
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
			for _, r := range wholeAndRanged {
				err := read(b, r)
				if !errors.Is(err, storage.ErrDamaged) || !strings.Contains(err.Error(), "obj"+Suffix) || strings.Contains(err.Error(), "wrong key") {
					t.Errorf("Open(%d, %d): %v; want damage naming obj%s, not a wrong key", r[0], r[1], err, Suffix)
				}
			}
		})
	}
	if _, err := inner.Put(ctx, "obj"+Suffix, bytes.NewReader(stored)); err != nil {
		t.Fatal(err)
	}
	other, _ := age.GenerateX25519Identity()
	for _, r := range wholeAndRanged {
		err := read(New(inner, keysFor(other), Options{}), r)
		if errors.Is(err, storage.ErrDamaged) || err == nil || !strings.Contains(err.Error(), "wrong key") {
			t.Errorf("another key, Open(%d, %d): %v; want wrong key, not damage", r[0], r[1], err)
		}
	}
	if err := readAll(b); err != nil {
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
	recipients := []string{"age1qyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqs3290gq", id.Recipient().String()}
	for _, r := range wholeAndRanged {
		_, err := readRange(b.EncryptedTo(recipients), r[0], r[1])
		if !errors.Is(err, storage.ErrDamaged) || !strings.Contains(err.Error(), "obj"+Suffix) || strings.Contains(err.Error(), "wrong key") {
			t.Errorf("our key among the recipients, Open(%d, %d): %v; want damage naming obj%s, not a wrong key", r[0], r[1], err, Suffix)
		}
	}
	other, _ := age.GenerateX25519Identity()
	for what, b := range map[string]storage.Backend{
		"another key":            New(inner, keysFor(other), Options{}).EncryptedTo(recipients),
		"recipients not known":   b,
		"no recipients recorded": b.EncryptedTo(nil),
	} {
		for _, r := range wholeAndRanged {
			if _, err := readRange(b, r[0], r[1]); errors.Is(err, storage.ErrDamaged) || err == nil || !strings.Contains(err.Error(), "wrong key") {
				t.Errorf("%s, Open(%d, %d): %v; want wrong key, not damage", what, r[0], r[1], err)
			}
		}
	}
}
