package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/local"
	"github.com/backstream/backstream/internal/storage/s3"
	"github.com/backstream/backstream/internal/storage/s3/s3test"
)

// testRepo is an empty repository location on one kind of backend, and a
// backend on the same location for the test to inspect or damage objects.
type testRepo struct {
	location string
	backend  storage.Backend
	s3       *s3test.Server // the MinIO behind an s3 repository (its incomplete uploads); nil for local
	bucket   string         // the s3 repository's bucket
}

// backendKinds are the backends every repository test runs on. None may
// be skipped: a missing MinIO fails the test (scripts/test.sh installs it).
var backendKinds = []struct {
	name string
	make func(t *testing.T) testRepo
}{
	{"local", func(t *testing.T) testRepo {
		dir := filepath.Join(t.TempDir(), "repo")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		b, err := local.New(dir)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := repo.Init(t.Context(), b, repo.Options{}); err != nil {
			t.Fatal(err)
		}
		return testRepo{location: dir, backend: b}
	}},
	{"s3", func(t *testing.T) testRepo {
		bucket := sharedS3.NewBucket(t)
		location := "s3://" + bucket + "/repo"
		cfg, err := s3.ConfigFromEnv(location)
		if err != nil {
			t.Fatal(err)
		}
		b, err := s3.New(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := repo.Init(t.Context(), b, repo.Options{}); err != nil {
			t.Fatal(err)
		}
		return testRepo{location: location, backend: b, s3: sharedS3, bucket: bucket}
	}},
}

// newTestRepo makes an empty repository on the backend of that kind.
func newTestRepo(t *testing.T, kind string) testRepo {
	t.Helper()
	for _, k := range backendKinds {
		if k.name == kind {
			return k.make(t)
		}
	}
	t.Fatalf("unknown backend kind %q", kind)
	return testRepo{}
}

// forEachBackend runs fn as a subtest on every backend.
func forEachBackend(t *testing.T, fn func(t *testing.T, r testRepo)) {
	for _, k := range backendKinds {
		t.Run(k.name, func(t *testing.T) { fn(t, k.make(t)) })
	}
}

func (r testRepo) read(t *testing.T, name string) []byte {
	t.Helper()
	rc, err := r.backend.Open(context.Background(), name, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func (r testRepo) write(t *testing.T, name string, data []byte) {
	t.Helper()
	if _, err := r.backend.Put(context.Background(), name, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
}

// streamObjects lists a backup's stream objects.
func (r testRepo) streamObjects(t *testing.T, id string) []string {
	t.Helper()
	return r.streamObjectsUnder(t, "backups/"+id+"/streams/")
}

// streamObjectsUnder lists the stream objects under prefix.
func (r testRepo) streamObjectsUnder(t *testing.T, prefix string) []string {
	t.Helper()
	infos, err := r.backend.List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, i := range infos {
		if filepath.Ext(i.Name) != ".idx" {
			out = append(out, i.Name)
		}
	}
	return out
}
