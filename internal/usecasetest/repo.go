package usecasetest

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/local"
	"github.com/backstream/backstream/internal/storage/s3"
	"github.com/backstream/backstream/internal/storage/s3/s3test"
)

// Repo is an empty repository location on one kind of backend, and a
// backend on the same location for the test to inspect or damage objects.
type Repo struct {
	Location string // as --repo takes it
	Backend  storage.Backend
	S3       *s3test.Server // the MinIO behind an s3 repository (its incomplete uploads); nil for local
	Bucket   string         // the s3 repository's bucket
	// Requests counts the requests every use case run through Access
	// sends to an s3 repository's MinIO; nil for local.
	Requests *repoaccess.Requests
}

// Backends are the backends every repository test runs on. None may be
// skipped: a missing MinIO fails the test (scripts/test.sh installs it).
var Backends = []struct {
	Name string
	Make func(t *testing.T) Repo
}{
	{"local", NewLocalRepo},
	{"s3", newS3Repo},
}

// NewLocalRepo makes an empty repository in a new directory.
func NewLocalRepo(t *testing.T) Repo { return newLocalRepo(t, repo.Options{}) }

// NewDedupRepo makes an empty deduplicating repository (repo.Options.Dedup)
// in a temporary directory.
func NewDedupRepo(t *testing.T) Repo { return newLocalRepo(t, repo.Options{Dedup: true}) }

func newLocalRepo(t *testing.T, opts repo.Options) Repo {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Init(t.Context(), b, opts); err != nil {
		t.Fatal(err)
	}
	return Repo{Location: dir, Backend: b}
}

// newS3Repo makes an empty repository in a new bucket of the binary's MinIO.
func newS3Repo(t *testing.T) Repo { return newS3RepoWith(t, repo.Options{}) }

// NewDedupS3Repo makes an empty deduplicating repository in a new bucket
// of the binary's MinIO.
func NewDedupS3Repo(t *testing.T) Repo { return newS3RepoWith(t, repo.Options{Dedup: true}) }

func newS3RepoWith(t *testing.T, opts repo.Options) Repo {
	t.Helper()
	if shared == nil {
		t.Fatal("usecasetest: an s3 repository needs the test binary's TestMain to call usecasetest.Main")
	}
	bucket := shared.NewBucket(t)
	location := "s3://" + bucket + "/repo"
	cfg, err := s3.ConfigFromEnv(location)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s3.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Init(t.Context(), b, opts); err != nil {
		t.Fatal(err)
	}
	return Repo{Location: location, Backend: b, S3: shared, Bucket: bucket, Requests: new(repoaccess.Requests)}
}

// NewRepo makes an empty repository on the backend of that kind.
func NewRepo(t *testing.T, kind string) Repo {
	t.Helper()
	for _, k := range Backends {
		if k.Name == kind {
			return k.Make(t)
		}
	}
	t.Fatalf("unknown backend kind %q", kind)
	return Repo{}
}

// ForEachBackend runs fn as a subtest on every backend, each with a
// repository of its own.
func ForEachBackend(t *testing.T, fn func(t *testing.T, r Repo)) {
	for _, k := range Backends {
		t.Run(k.Name, func(t *testing.T) { fn(t, k.Make(t)) })
	}
}

// Access is how a command reaches the repository with `--repo Location`.
func (r Repo) Access() repoaccess.Options {
	return repoaccess.Options{Location: repoaccess.Location{Repo: r.Location, Requests: r.Requests}}
}

// Open opens the repository as a command does for its work (Access).
func (r Repo) Open(t testing.TB) *repo.Repo {
	t.Helper()
	rp, err := r.Access().Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rp
}

// Read is the content of the object name.
func (r Repo) Read(t testing.TB, name string) []byte {
	t.Helper()
	rc, err := r.Backend.Open(context.Background(), name, 0, -1)
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

// Write stores data as the object name.
func (r Repo) Write(t testing.TB, name string, data []byte) {
	t.Helper()
	if _, err := r.Backend.Put(context.Background(), name, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
}

// StreamObjects lists a backup's stream objects.
func (r Repo) StreamObjects(t testing.TB, id string) []string {
	t.Helper()
	return r.StreamObjectsUnder(t, "backups/"+id+"/streams/")
}

// StreamObjectsUnder lists the stream objects under prefix (not their
// frame indexes).
func (r Repo) StreamObjectsUnder(t testing.TB, prefix string) []string {
	t.Helper()
	infos, err := r.Backend.List(context.Background(), prefix)
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

// S3 is the test binary's MinIO (see Main), for a test that makes a
// bucket of its own.
func S3() *s3test.Server { return shared }
