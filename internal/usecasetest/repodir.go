package usecasetest

import (
	"context"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/storage/local"
)

// ReadManifest reads a backup's manifest from a local repository, its
// contents loaded (repo.Repo.Resolve).
func ReadManifest(t *testing.T, repoDir, id string) *archive.Manifest {
	t.Helper()
	b, err := local.New(repoDir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := repo.Open(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.Resolve(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
