package repo

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/crypt"
	"github.com/backstream/backstream/internal/storage/local"
)

// The repository, not the crypt decorator, decides what is encrypted:
// the objects of backups and archived binary logs, but neither their
// manifests and begun markers nor the config and locks.
func TestEncryptedObjects(t *testing.T) {
	ctx := t.Context()
	inner, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	id, _ := age.GenerateX25519Identity()
	keys := crypt.Keys{Recipients: []age.Recipient{id.Recipient()}, Public: []string{id.Recipient().String()}}
	r, err := Init(ctx, inner, Options{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	// Until Encrypt, nothing is encrypted.
	before := Dir("20260101T000000Z-0000") + "/streams/00000.xbs"
	if _, err := r.Backend.Put(ctx, before, strings.NewReader("plain")); err != nil {
		t.Fatal(err)
	}
	if _, err := inner.Stat(ctx, before); err != nil {
		t.Errorf("written before Encrypt, %s is not stored plainly: %v", before, err)
	}
	enc, err := r.Encrypt(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if enc.Scheme != "age" || !slices.Equal(enc.Recipients, keys.Public) || enc.PassphraseKey != "" {
		t.Errorf("Encrypt records %+v, want age to %q", enc, keys.Public)
	}
	id2 := "20260102T000000Z-0001"
	names := map[string]bool{ // name: stored encrypted
		Dir(id2) + "/streams/00000.xbs.zst":                 true,
		Dir(id2) + "/streams/00000.idx":                     true,
		Dir(id2) + "/meta/xtrabackup_info":                  true,
		Dir(id2) + "/" + ManifestName:                       false,
		Dir(id2) + "/" + BegunName:                          false,
		BinlogDir("src", "bin.000001") + "/s":               true,
		BinlogDir("src", "bin.000001") + "/" + ManifestName: false,
		LocksDir + "/lock":                                  false,
		"other/object":                                      false,
	}
	for name := range names {
		if _, err := r.Backend.Put(ctx, name, strings.NewReader("rows of "+name)); err != nil {
			t.Fatal(err)
		}
	}
	stored, err := inner.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for name, encrypted := range names {
		got := slices.ContainsFunc(stored, func(i storage.Info) bool { return i.Name == name+crypt.Suffix })
		if got != encrypted || got != Encrypted(name) {
			t.Errorf("%s: stored encrypted %v, want %v (Encrypted says %v)", name, got, encrypted, Encrypted(name))
		}
	}
	if _, err := inner.Stat(ctx, ConfigName); err != nil {
		t.Errorf("config: %v", err)
	}

	// Reading needs the identity: without one the read fails naming the
	// sentinel the command line explains; with it the plain bytes return.
	name := Dir(id2) + "/streams/00000.xbs.zst"
	noKey, err := Open(ctx, inner)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noKey.Backend.Open(ctx, name, 0, -1); !errors.Is(err, crypt.ErrNoIdentity) {
		t.Errorf("read without a key: %v, want ErrNoIdentity", err)
	}
	withKey, err := OpenWith(ctx, inner, Options{Keys: crypt.Keys{Identities: []age.Identity{id}}})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := withKey.Backend.Open(ctx, name, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || string(data) != "rows of "+name {
		t.Errorf("read with the key: %q, %v", data, err)
	}
}

// A repository of a newer format is refused by name and version, before
// anything is read or written.
func TestNewerFormatIsRefused(t *testing.T) {
	ctx := t.Context()
	b, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Init(ctx, b, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, ConfigName, strings.NewReader(`{"format": 4, "id": "x"}`)); err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, b)
	if err == nil || !strings.Contains(err.Error(), "repository format 4 is not supported (this backstream reads versions 1 to 3)") {
		t.Fatalf("open of a format 4 repository: %v", err)
	}
	if _, err := Init(ctx, b, Options{}); err == nil {
		t.Fatal("init over a newer repository succeeded")
	}
	// Format 2 is a repository with its own encryption; without its
	// recipients (or format 1 with them) the config is damaged; format 3
	// is a deduplicating one, and needs its dedup (and recipients, if it
	// is encrypted).
	for _, cfg := range []string{`{"format": 2, "id": "x"}`, `{"format": 1, "id": "x", "encryption": {"recipients": ["age1x"]}}`,
		`{"format": 3, "id": "x"}`, `{"format": 1, "id": "x", "dedup": {"block": 65536}}`,
		`{"format": 3, "id": "x", "dedup": {"block": 65536}, "encryption": {"recipients": []}}`} {
		if _, err := b.Put(ctx, ConfigName, strings.NewReader(cfg)); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(ctx, b); err == nil || !strings.Contains(err.Error(), "damaged") {
			t.Errorf("open of %s: %v, want damage", cfg, err)
		}
	}
}
