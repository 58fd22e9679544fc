package local

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/testkit"
)

// Puts under a DeferSync context are visible when they return and left
// to Sync to make durable, in directories they created too: what Sync
// made durable is whole after a power cut.
func TestDeferredPutsAreDurableAfterSync(t *testing.T) {
	pc := testkit.NewPowerCut(t, 64<<20)
	b, err := New(pc.Dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, syncs := storage.DeferSync(context.Background())
	want := map[string][]byte{}
	for _, name := range []string{"a/b/c/one", "a/b/two", "three"} {
		data := make([]byte, 3<<20)
		rand.Read(data)
		if _, err := b.Put(ctx, name, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Stat(ctx, name); err != nil {
			t.Fatalf("%s once its deferred Put returned: %v", name, err)
		}
		want[name] = data
	}
	if err := syncs.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	pc.Cut()
	b.Close()
	pc.Recover()
	b = newBackend(t, pc.Dir)
	for name, data := range want {
		rc, err := b.Open(ctx, name, 0, -1)
		if err != nil {
			t.Fatalf("%s after the power cut: %v", name, err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s after the power cut: %d bytes (%v), want the %d synced", name, len(got), err, len(data))
		}
	}
}

// A deferred object that is gone when Sync comes fails the Sync, which
// names it: nothing that names it may be stored.
func TestSyncOfAVanishedObjectFails(t *testing.T) {
	b := newBackend(t, t.TempDir())
	ctx, syncs := storage.DeferSync(context.Background())
	for _, name := range []string{"p/kept", "p/gone"} {
		if _, err := b.Put(ctx, name, strings.NewReader(name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Delete(ctx, "p/gone"); err != nil {
		t.Fatal(err)
	}
	if err := syncs.Sync(ctx); err == nil || !strings.Contains(err.Error(), "p/gone") {
		t.Fatalf("Sync of a deleted object: %v; want an error naming it", err)
	}
	if err := syncs.Sync(ctx); err != nil {
		t.Fatalf("a second Sync, with nothing added since: %v", err)
	}
}
