package restore

import (
	"context"
	"fmt"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/logical"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/repo"
)

// Links returns what restoring backup m of r writes: m alone for a full
// backup, or m's chain, base first, for an incremental. Each link's
// positions are checked against its stored meta objects and its parent
// before anything is written: a disagreement is damage naming the backup
// and both values.
func Links(ctx context.Context, r *repo.Repo, m *archive.Manifest) ([]Link, error) {
	chain := []*archive.Manifest{m}
	if m.Parent != "" {
		below, err := r.Chain(ctx, m)
		if err != nil {
			return nil, err
		}
		chain = append(below, m)
	}
	links := make([]Link, len(chain))
	for i, c := range chain {
		var parent *archive.Manifest
		if i > 0 {
			parent = chain[i-1]
		}
		if err := physical.CheckStored(ctx, r.ReadMeta, c, parent); err != nil {
			return nil, err
		}
		links[i] = Link{Manifest: c, Input: r.Input(c)}
	}
	return links, nil
}

// Load loads logical backup m of r into the server job.Conn names: its
// catalog is read and checked first, then the data as job describes.
func Load(ctx context.Context, r *repo.Repo, m *archive.Manifest, job logical.LoadJob) (*logical.LoadResult, error) {
	data, err := r.ReadMeta(ctx, m, logical.CatalogName)
	if err != nil {
		return nil, err
	}
	job.Catalog, err = logical.ParseCatalog(data)
	if err != nil {
		return nil, fmt.Errorf("backup %s: %w", m.ID, err)
	}
	job.Input, job.Manifest = r.Input(m), m
	return logical.Load(ctx, job)
}
