package s3test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/backstream/backstream/internal/testkit"
)

// Every MinIO a test binary starts uses the same credentials, so that the
// AWS environment can be set once, before any test runs: tests that talk
// to different servers then need no t.Setenv and can run in parallel.
var (
	credOnce           sync.Once
	credUser, credPass string
)

func processCredentials() (user, pass string) {
	credOnce.Do(func() {
		credUser, credPass = "bs"+testkit.RandomHex(6), testkit.RandomHex(20)
	})
	return credUser, credPass
}

// Main returns the one MinIO of a whole test binary, started on the
// first NewBucket. The AWS environment's region and credentials (every
// server of the binary has them; the machine's own AWS files hidden) are
// set at once, its endpoint when the server starts, before any test uses
// it. Call it from TestMain before m.Run, and Stop the server after.
// Tests make their own buckets on it with NewBucket. The start waits
// for the first use so that the package's other tests run while
// scripts/test.sh still builds MinIO on a fresh machine (findMinio waits
// for that build).
func Main() *Server {
	m := &Server{removeDir: true, lazy: &lazyStart{}}
	m.user, m.pass = processCredentials()
	// The credentials now, not at the start: a test's private server
	// (StartPrivate) has them too, and may be the first S3 a test uses.
	for k, v := range map[string]string{
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": m.user, "AWS_SECRET_ACCESS_KEY": m.pass, "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_SHARED_CREDENTIALS_FILE": noAWSFile, "AWS_CONFIG_FILE": noAWSFile, "AWS_CA_BUNDLE": "",
	} {
		if err := os.Setenv(k, v); err != nil {
			panic(err)
		}
	}
	return m
}

// noAWSFile stands for the machine's AWS credentials and config files,
// which the tests never read.
const noAWSFile = "/nonexistent/backstream-tests-read-no-aws-files"

// lazyStart is the start of Main's server: once, on first use.
type lazyStart struct {
	once sync.Once
	err  error
}

// startShared starts Main's server and points the AWS environment at it.
func (m *Server) startShared() error {
	bin, err := findMinio()
	if err != nil {
		return err
	}
	if m.dir, err = os.MkdirTemp("", "backstream-minio-*"); err != nil {
		return err
	}
	if m.port, err = freePortErr(); err != nil {
		return err
	}
	if m.console, err = freePortErr(); err != nil {
		return err
	}
	m.bin = bin
	m.Endpoint = "http://127.0.0.1:" + strconv.Itoa(m.port)
	if err := m.TryRestart(); err != nil {
		return err
	}
	return os.Setenv("AWS_ENDPOINT_URL", m.Endpoint)
}

var buckets atomic.Int64

// NewBucket makes an empty bucket for the test and returns its name.
func (m *Server) NewBucket(t *testing.T) string {
	t.Helper()
	if m.lazy != nil {
		m.lazy.once.Do(func() { m.lazy.err = m.startShared() })
		if m.lazy.err != nil {
			// Every repository test needs it: a missing MinIO is a
			// failure, never a skip (scripts/test.sh installs it).
			t.Fatalf("starting the test binary's MinIO: %v", m.lazy.err)
		}
	}
	name := fmt.Sprintf("bs-%d-%s", buckets.Add(1), strings.ToLower(testkit.RandomHex(3)))
	if err := m.Client(t).MakeBucket(context.Background(), name, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("creating bucket %s: %v", name, err)
	}
	return name
}

// StartPrivate starts a MinIO for one test, with one empty bucket, and
// stops it when the test ends. Unlike Start it leaves the environment
// alone: it has the credentials every server of this test binary has (see
// Main), and the test names its Endpoint explicitly (--s3-endpoint), so
// that a test that stops and restarts its server can run in parallel with
// others.
func StartPrivate(t *testing.T) *Server {
	t.Helper()
	bin, err := findMinio()
	if err != nil {
		t.Fatal(err)
	}
	m := &Server{t: t, bin: bin, dir: t.TempDir(), port: freePort(t), console: freePort(t), Bucket: "bs-test"}
	m.user, m.pass = processCredentials()
	m.Endpoint = "http://127.0.0.1:" + strconv.Itoa(m.port)
	t.Cleanup(m.Stop)
	m.Restart()
	if err := m.Client(t).MakeBucket(t.Context(), m.Bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("creating bucket %s: %v", m.Bucket, err)
	}
	return m
}
