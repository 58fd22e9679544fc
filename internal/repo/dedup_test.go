package repo_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repo/repotest"
	"github.com/backstream/backstream/internal/storage/local"
	"github.com/backstream/backstream/internal/xbstream"
)

// A backup racing an expire in a deduplicating repository loses nothing:
// both take the exclusive lock, as the commands do, so the blocks a
// backup is storing are never collected before its index names them.
// Whichever wins, the backup that stays restores exactly, and the one
// expired is gone. A few rounds, each starting the two in another order.
func TestDedupBackupRacingExpire(t *testing.T) {
	ctx := context.Background()
	for round := range 3 {
		b, err := local.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		r, err := repo.Init(ctx, b, repo.Options{Dedup: true})
		if err != nil {
			t.Fatal(err)
		}
		shared := randomText(2 << 20)
		old := repotest.Store(t, r, repotest.Backup{ID: "20261130T100000Z-0001", Files: map[string]string{"db/a.ibd": shared, "db/old.ibd": randomText(1 << 20)}})
		newFiles := map[string]string{"db/a.ibd": shared, "db/new.ibd": randomText(1 << 20)}
		lock := func(op string) func() {
			_, release, err := r.Acquire(ctx, repo.LockOptions{Operation: op, Exclusive: true, Wait: time.Minute, Settle: 100 * time.Millisecond})
			if err != nil {
				t.Error(err)
				return func() {}
			}
			return release
		}
		var wg sync.WaitGroup
		var made *archive.Manifest
		wg.Add(2)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(round) * 30 * time.Millisecond)
			defer lock("backup")()
			made = repotest.Store(t, r, repotest.Backup{ID: "20261130T110000Z-0002", Files: newFiles})
			t.Logf("round %d: backup stored", round)
		}()
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(2-round) * 30 * time.Millisecond)
			defer lock("expire")()
			if err := r.Remove(ctx, old.ID); err != nil {
				t.Error(err)
			}
			c, err := r.CollectBlocks(ctx)
			if err != nil {
				t.Error(err)
			}
			t.Logf("round %d: collected %+v", round, c)
		}()
		wg.Wait()
		if made == nil {
			t.Fatalf("round %d: the backup was not made", round)
		}
		got := readFiles(t, r, made)
		for p, want := range newFiles {
			if got[p] != want {
				t.Errorf("round %d: file %s of the backup that raced the expire differs (%d bytes, want %d)", round, p, len(got[p]), len(want))
			}
		}
		if m, err := r.Resolve(ctx, old.ID); err == nil {
			t.Errorf("round %d: the expired backup %s is still there", round, m.ID)
		}
	}
}

func randomText(n int) string {
	b := make([]byte, n/2)
	rand.Read(b)
	return hex.EncodeToString(b)
}

type filesSink struct {
	mu    sync.Mutex
	files map[string]string
}

func (s *filesSink) Chunk(c *xbstream.Chunk) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Type == xbstream.TypePayload {
		s.files[c.Path] += string(c.Payload)
	}
	return nil
}

// readFiles reads backup m of r, every check on, into its files.
func readFiles(t *testing.T, r *repo.Repo, m *archive.Manifest) map[string]string {
	t.Helper()
	sink := &filesSink{files: map[string]string{}}
	if err := archive.Read(context.Background(), archive.ReadOptions{Input: r.Input(m), Manifest: m, Sink: sink}); err != nil {
		t.Fatalf("read backup %s: %v", m.ID, err)
	}
	return sink.files
}
