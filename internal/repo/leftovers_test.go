package repo_test

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repo/repotest"
	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/local"
)

// keeper is a local directory that keeps leftovers as S3 does and as MinIO
// finds them: it records what RemoveLeftovers is asked for and counts one
// upload per name.
type keeper struct {
	*local.Backend
	mu    sync.Mutex
	calls []call
}

type call struct {
	prefix string
	opts   storage.LeftoverOptions
}

func (k *keeper) RemoveLeftovers(_ context.Context, prefix string, opts storage.LeftoverOptions) (storage.Leftovers, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.calls = append(k.calls, call{prefix, opts})
	return storage.Leftovers{Uploads: len(opts.Names)}, nil
}

func (k *keeper) take() []call {
	k.mu.Lock()
	defer k.mu.Unlock()
	c := k.calls
	k.calls = nil
	return c
}

// Removing a backup removes the leftovers under its directory; for one
// that never committed also those of every object it wrote or announced
// by name (the streams its marker names, their indexes, what is stored),
// in both forms of an encrypted name, so that MinIO, which finds uploads
// by whole name only, finds them. The sweep of backups/ names those of
// the backups given.
func TestRemoveNamesLeftovers(t *testing.T) {
	ctx := context.Background()
	lb, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	k := &keeper{Backend: lb}
	r, err := repo.Init(ctx, k, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	complete := repotest.Store(t, r, repotest.Backup{ID: "20260101T000000Z-0001", Files: map[string]string{"f": "x"}})
	begin := func(id string) {
		header := &archive.Manifest{ID: id, Streams: []archive.Stream{
			{Object: archive.Object{Name: "streams/00000.xbs.zst"}}, {Object: archive.Object{Name: "streams/00001.xbs.zst"}}}}
		if err := r.Begin(ctx, header); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Backend.Put(ctx, repo.Dir(id)+"/meta/stored", bytes.NewReader([]byte("m"))); err != nil {
			t.Fatal(err)
		}
	}
	killed, other := "20260102T000000Z-0002", "20260103T000000Z-0003"
	begin(killed)
	begin(other)
	k.take()

	left, err := r.RemoveCounted(ctx, killed)
	if err != nil {
		t.Fatal(err)
	}
	calls := k.take()
	if len(calls) != 1 || calls[0].prefix != repo.Dir(killed)+"/" || calls[0].opts.DryRun {
		t.Fatalf("RemoveLeftovers calls %+v, want one for %s/", calls, repo.Dir(killed))
	}
	names := calls[0].opts.Names
	d := repo.Dir(killed) + "/"
	for _, want := range []string{d + repo.BegunName, d + repo.ManifestName, d + "streams/00000.xbs.zst", d + "streams/00000.xbs.zst.age",
		d + "streams/00001.xbs.zst", d + "streams/00000.idx", d + "streams/00001.idx.age", d + "meta/stored", d + "meta/stored.age"} {
		if !slices.Contains(names, want) {
			t.Errorf("names given for the killed backup lack %s: %q", want, names)
		}
	}
	if left.Uploads != len(names) {
		t.Errorf("RemoveCounted reports %+v, want the %d the backend removed", left, len(names))
	}
	if objs, err := r.Backend.List(ctx, d); err != nil || len(objs) != 0 {
		t.Errorf("objects left of the removed backup: %v, %v", objs, err)
	}

	if err := r.Remove(ctx, complete.ID); err != nil {
		t.Fatal(err)
	}
	if calls := k.take(); len(calls) != 1 || calls[0].prefix != repo.Dir(complete.ID)+"/" || len(calls[0].opts.Names) != 0 {
		t.Errorf("RemoveLeftovers calls for a complete backup %+v, want its directory and no names", calls)
	}

	if _, err := r.RemoveLeftovers(ctx, []string{other}, true); err != nil {
		t.Fatal(err)
	}
	calls = k.take()
	if len(calls) != 1 || calls[0].prefix != "backups/" || !calls[0].opts.DryRun || !slices.Contains(calls[0].opts.Names, repo.Dir(other)+"/streams/00001.idx") {
		t.Errorf("sweep calls %+v, want one dry run over backups/ naming %s's objects", calls, other)
	}
	if _, err := r.RemoveLeftovers(ctx, []string{"../x"}, true); err == nil {
		t.Error("RemoveLeftovers took a bad backup id")
	}
}
