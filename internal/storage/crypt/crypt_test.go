package crypt

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"filippo.io/age"

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
