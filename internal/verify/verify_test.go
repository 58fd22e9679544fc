package verify

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repo/repotest"
)

func TestBackupFindsEveryDamage(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	m := repotest.Store(t, r, repotest.Backup{ID: "20261121T030000Z-0001", Files: map[string]string{
		"ibdata1": strings.Repeat("data ", 20000), "db/t.ibd": "t", "db/u.ibd": strings.Repeat("u", 5000)}})
	meta, err := r.PutMeta(ctx, m.ID, "meta/backup-my.cnf", []byte("[mysqld]\n"), m.Hash)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta = append(m.Meta, meta)
	if err := r.Commit(ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := Backup(ctx, r, m, Reading{Read: archive.ReadOptions{Workers: 2}}); err != nil {
		t.Fatalf("an intact backup: %v", err)
	}
	for _, name := range []string{m.Streams[0].Name, m.Streams[1].Name, meta.Name, archive.ContentsName} {
		t.Run(name, func(t *testing.T) {
			flip(t, r, m.ID, name)
			err := Backup(ctx, r, m, Reading{Read: archive.ReadOptions{Workers: 2}})
			if !archive.IsCorrupt(err) || !strings.Contains(err.Error(), m.ID) {
				t.Fatalf("a byte flipped in %s: %v; want corruption naming the backup", name, err)
			}
		})
	}
}

// flip flips a byte in the middle of object name of backup id, until the
// test ends.
func flip(t *testing.T, r *repo.Repo, id, name string) {
	t.Helper()
	p := filepath.Join(r.Backend.Location(), repo.Dir(id), name)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		data[len(data)/2] ^= 1
		os.WriteFile(p, data, 0o600)
	})
}

// A stored physical backup whose redo log ends before its last_lsn (one
// committed before backstream checked it at backup time) cannot be
// prepared: verify calls it damage, with both LSNs, and a merged
// (prepared) backup's log is not judged.
func TestShortRedoCopyIsDamage(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	const first = 100_000 // the log ends at 100008
	files := map[string]string{"ibdata1": "data", "ib_logfile0": repotest.RedoLog(first)}
	whole := repotest.Store(t, r, repotest.Backup{ID: "20261130T030000Z-0001", Files: files, LastLSN: first + 8})
	if err := Backup(ctx, r, whole, Reading{Read: archive.ReadOptions{Workers: 2}}); err != nil {
		t.Errorf("a log that reaches last_lsn: %v", err)
	}
	short := repotest.Store(t, r, repotest.Backup{ID: "20261130T040000Z-0001", Files: files, LastLSN: first + 24})
	err := Backup(ctx, r, short, Reading{Read: archive.ReadOptions{Workers: 2}})
	if !archive.IsCorrupt(err) || !strings.Contains(err.Error(), short.ID) || !strings.Contains(err.Error(), "ends at LSN 100008") || !strings.Contains(err.Error(), "short of LSN 100024") {
		t.Errorf("a log 16 bytes short: %v, want damage naming the backup and both LSNs", err)
	}
	short.MergedFrom = []string{whole.ID}
	if err := Backup(ctx, r, short, Reading{Read: archive.ReadOptions{Workers: 2}}); err != nil {
		t.Errorf("a merged backup's log: %v, want it not judged", err)
	}
}
