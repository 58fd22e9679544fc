package usecasetest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/backstream/backstream/internal/archive"
)

// ReadManifest reads a backup's manifest from a local repository.
func ReadManifest(t *testing.T, repoDir, id string) *archive.Manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoDir, "backups", id, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := archive.ParseManifest(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
