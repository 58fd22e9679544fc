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
	if err := Backup(ctx, r, m, 2, nil); err != nil {
		t.Fatalf("an intact backup: %v", err)
	}
	flip := func(t *testing.T, name string) {
		t.Helper()
		p := filepath.Join(r.Backend.Location(), repo.Dir(m.ID), name)
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
	for _, name := range []string{m.Streams[0].Name, m.Streams[1].Name, meta.Name} {
		t.Run(name, func(t *testing.T) {
			flip(t, name)
			err := Backup(ctx, r, m, 2, nil)
			if !archive.IsCorrupt(err) || !strings.Contains(err.Error(), m.ID) {
				t.Fatalf("a byte flipped in %s: %v; want corruption naming the backup", name, err)
			}
		})
	}
}
