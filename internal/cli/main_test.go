package cli

import (
	"os"
	"testing"

	"github.com/backstream/backstream/internal/scratch"
	"github.com/backstream/backstream/internal/storage/crypt"
	"github.com/backstream/backstream/internal/storage/s3/s3test"
)

// sharedS3 is the MinIO that the s3 repositories of this package's tests
// live in, one bucket each; the AWS environment points at it for the
// whole run, so tests need no t.Setenv and can run in parallel.
var sharedS3 *s3test.Server

func TestMain(m *testing.M) {
	// Passphrase keys cost a second each at age's work factor, and many
	// more under -race; what the tests check does not depend on it.
	crypt.SetScryptWorkFactor(12)
	srv := s3test.Main()
	sharedS3 = srv
	code := m.Run()
	scratch.Cleanup() // what the in-process runs made; main does this for the binary
	srv.Stop()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}
