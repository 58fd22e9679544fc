package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/storage/s3/s3test"
)

// s3Repo starts a MinIO for the test and returns a repository location in it.
func s3Repo(t *testing.T) (*s3test.Server, string) {
	t.Helper()
	srv := s3test.Start(t)
	t.Setenv("AWS_ENDPOINT_URL", srv.Endpoint)
	t.Setenv("AWS_REGION", "us-east-1")
	return srv, "s3://" + srv.Bucket + "/repo"
}

// midway waits until a throttled backup is well under way (mariabackup
// has been streaming for a few seconds; the whole takes about 20 s), and
// fails the test if it ended already, so that a fault hits it in the middle.
func midway(t *testing.T, done <-chan result) {
	t.Helper()
	select {
	case r := <-done:
		t.Fatalf("the backup ended before the fault: %v", r.err)
	case <-time.After(4 * time.Second):
	}
}

// throttledS3Backup starts a backup of about 20 s into a fresh MinIO with
// the given retry window, and returns once it is well under way.
func throttledS3Backup(t *testing.T, retryWindow string) (*s3test.Server, string, <-chan result) {
	t.Helper()
	src := sandbox.Testing(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1, BigTableMB: 60}); err != nil {
		t.Fatal(err)
	}
	srv, location := s3Repo(t)
	done := make(chan result, 1)
	go func() {
		done <- runQuiet(append([]string{"backup", "--repo", location, "--parallel", "2", "--s3-retry-window", retryWindow,
			"--mariabackup-option=--throttle=40"}, sandboxConn(src)...)...)
	}()
	midway(t, done)
	return srv, location, done
}

// MinIO stopped in the middle of a backup and started again within the
// retry window: the backup finishes and verifies.
func TestS3OutageWithinRetryWindow(t *testing.T) {
	srv, location, done := throttledS3Backup(t, "90s")
	srv.Stop()
	time.Sleep(3 * time.Second)
	srv.Restart()
	r := waitResult(t, "backup across an outage", done)
	if r.err != nil {
		t.Fatalf("backup across a 3 s outage: %v\n%s", r.err, r.stderr)
	}
	run(t, "verify", "--repo", location).mustSucceed(t)
}

// MinIO stopped for good: the backup fails clearly within its retry
// window, and once MinIO is back there is no manifest.
func TestS3OutageForGood(t *testing.T) {
	srv, location, done := throttledS3Backup(t, "5s")
	srv.Stop()
	r := waitResult(t, "backup with S3 gone", done)
	if r.code != ExitFailure || !strings.Contains(r.err.Error(), "nothing was committed") || !strings.Contains(r.err.Error(), "retry window") {
		t.Fatalf("exit %d, %v: want a failure naming the retry window and saying nothing was committed", r.code, r.err)
	}
	srv.Restart()
	if n := len(backupListing(t, location)); n != 0 {
		t.Errorf("%d backups listed after a failed backup", n)
	}
}

// Wrong credentials: a clear error at once, naming the bucket.
func TestS3AccessDeniedFailsFast(t *testing.T) {
	src := sandbox.Testing(t, sandbox.Options{})
	_, location := s3Repo(t)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
	start := time.Now()
	r := run(t, append([]string{"backup", "--repo", location}, sandboxConn(src)...)...)
	if r.code == ExitOK || !strings.Contains(r.err.Error(), "bs-test") {
		t.Fatalf("exit %d, %v: want a failure naming the bucket", r.code, r.err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v to fail on wrong credentials", d)
	}
}
