package s3

import (
	"context"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/storage/s3/s3test"
	"github.com/backstream/backstream/internal/testkit"
)

// minioServer is a real MinIO for one test (see s3test) plus the checks
// these tests make through the backend.
type minioServer struct{ *s3test.Server }

func minioForTest(t *testing.T) *minioServer { return &minioServer{s3test.Start(t)} }

// Start starts the server again after Stop.
func (m *minioServer) Start() { m.Restart() }

// newBackend opens a backend on a fresh prefix of the server's bucket.
func (m *minioServer) newBackend(t *testing.T, cfg Config) *Backend {
	t.Helper()
	cfg.Bucket = m.Bucket
	if cfg.Prefix == "" {
		cfg.Prefix = "t/" + testkit.RandomHex(4)
	}
	cfg.Endpoint = m.Endpoint
	cfg.Region = "us-east-1"
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	b, err := New(ctx, cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return b
}

// incompleteUploads lists the multipart uploads left under prefix.
func (m *minioServer) incompleteUploads(t *testing.T, prefix string) []string {
	t.Helper()
	var keys []string
	for u := range m.Client(t).ListIncompleteUploads(t.Context(), m.Bucket, prefix, true) {
		if u.Err != nil {
			t.Fatalf("listing incomplete uploads: %v", u.Err)
		}
		keys = append(keys, u.Key)
	}
	return keys
}
