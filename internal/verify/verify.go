// Package verify checks a stored backup without writing anything: every
// metadata object against its digest, a logical backup's catalog against
// its data files, and every stream object frame by frame, chunk by chunk
// and file by file against the manifest. Damage is reported as corruption
// (archive.IsCorrupt) naming the backup and the object. The package knows
// backups through the repository's API; it knows nothing of flags or of
// how a result is shown.
package verify

import (
	"context"
	"fmt"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/logical"
	"github.com/backstream/backstream/internal/repo"
)

// Backup checks every object of backup m of r: its metadata (Meta), then
// every stream, decoded by workers goroutines (0 means GOMAXPROCS) and
// counted on counter (may be nil).
func Backup(ctx context.Context, r *repo.Repo, m *archive.Manifest, workers int, counter archive.Counter) error {
	if err := Meta(ctx, r, m); err != nil {
		return err
	}
	if err := archive.Read(ctx, archive.ReadOptions{Input: r.Input(m.ID), Manifest: m, Workers: workers, Counter: counter}); err != nil {
		return fmt.Errorf("backup %s: %w", m.ID, err)
	}
	return nil
}

// Meta checks every metadata object of m against its digest, and a
// logical backup's catalog against its files.
func Meta(ctx context.Context, r *repo.Repo, m *archive.Manifest) error {
	for _, o := range m.Meta {
		data, err := r.ReadMeta(ctx, m, o.Name)
		if err != nil {
			return err
		}
		if o.Name == logical.CatalogName {
			c, err := logical.ParseCatalog(data)
			if err == nil {
				err = c.Check(m)
			}
			if err != nil {
				return archive.Corruptf("backup %s: %v", m.ID, err)
			}
		}
	}
	return nil
}
