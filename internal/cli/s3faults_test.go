package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/storage/s3/s3test"
)

// s3Repo starts a MinIO of the test's own, which it may stop and restart,
// and returns a repository location in it and the flags that reach it.
func s3Repo(t *testing.T) (srv *s3test.Server, location string, flags []string) {
	t.Helper()
	srv = s3test.StartPrivate(t)
	location, flags = "s3://"+srv.Bucket+"/repo", []string{"--s3-endpoint", srv.Endpoint}
	run(t, append([]string{"init", "--repo", location}, flags...)...).mustSucceed(t)
	return srv, location, flags
}

// midway waits until a throttled backup is streaming into srv (a multipart
// upload of one of its stream objects has begun), and fails the test if
// the backup ended first, so that a fault hits it in the middle however
// slow the machine.
func midway(t *testing.T, srv *s3test.Server, done <-chan result) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for incompleteUploads(t, srv, srv.Bucket, begunStreamKeys(t, srv)) == 0 {
		select {
		case r := <-done:
			t.Fatalf("the backup ended before the fault: %v", r.err)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the backup began no upload in 2 minutes")
		}
	}
}

// throttledS3Backup starts a backup of about 20 s into a fresh MinIO with
// the given retry window, and returns once it is streaming.
func throttledS3Backup(t *testing.T, retryWindow string) (*s3test.Server, string, []string, <-chan result) {
	t.Helper()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1, BigTableMB: 60}); err != nil {
		t.Fatal(err)
	}
	srv, location, flags := s3Repo(t)
	done := make(chan result, 1)
	go func() {
		done <- runQuiet(append(append([]string{"backup", "--repo", location, "--parallel", "2", "--s3-retry-window", retryWindow,
			"--max-io", "40"}, flags...), sandboxConn(src)...)...)
	}()
	midway(t, srv, done)
	return srv, location, flags, done
}

// MinIO stopped in the middle of a backup and started again within the
// retry window: the backup finishes and verifies.
func TestS3OutageWithinRetryWindow(t *testing.T) {
	t.Parallel()
	srv, location, flags, done := throttledS3Backup(t, "90s")
	srv.Stop()
	time.Sleep(3 * time.Second)
	srv.Restart()
	r := waitResult(t, "backup across an outage", done)
	if r.err != nil {
		t.Fatalf("backup across a 3 s outage: %v\n%s", r.err, r.stderr)
	}
	run(t, append([]string{"verify", "--repo", location}, flags...)...).mustSucceed(t)
}

// MinIO stopped for good: the backup fails clearly within its retry
// window, and once MinIO is back there is no manifest; the multipart
// uploads it could not abort are found through its begun marker and
// aborted by expire --prune-incomplete, which leaves nothing behind.
func TestS3OutageForGood(t *testing.T) {
	t.Parallel()
	srv, location, flags, done := throttledS3Backup(t, "5s")
	srv.Stop()
	r := waitResult(t, "backup with S3 gone", done)
	if r.code != ExitFailure || !strings.Contains(r.err.Error(), "nothing was committed") || !strings.Contains(r.err.Error(), "retry window") {
		t.Fatalf("exit %d, %v: want a failure naming the retry window and saying nothing was committed", r.code, r.err)
	}
	srv.Restart()
	if n := len(backupListing(t, location, flags...)); n != 0 {
		t.Errorf("%d backups listed after a failed backup", n)
	}
	// The stream keys are taken now: the prune deletes the begun marker
	// that names them, and MinIO lists uploads only by whole key.
	keys := begunStreamKeys(t, srv)
	if n := incompleteUploads(t, srv, srv.Bucket, keys); n == 0 {
		t.Fatal("no incomplete uploads after MinIO went away mid-backup: the test did not hit the case it is about")
	}
	// The failed backup could not delete its lock either. It ran inside
	// this test process, so its pid is alive and the lock is not stale by
	// pid (a separate backstream process's would be): remove it as a user
	// who knows the backup is gone would.
	run(t, append([]string{"unlock", "--repo", location, "--all"}, flags...)...).mustSucceed(t)
	run(t, append([]string{"expire", "--repo", location, "--prune-incomplete", "--confirm"}, flags...)...).mustSucceed(t)
	if n := incompleteUploads(t, srv, srv.Bucket, keys); n != 0 {
		t.Errorf("%d incomplete uploads left after expire --prune-incomplete", n)
	}
	for obj := range srv.Client(t).ListObjects(context.Background(), srv.Bucket, minio.ListObjectsOptions{Prefix: "repo/backups/", Recursive: true}) {
		t.Errorf("left after expire --prune-incomplete: %s %v", obj.Key, obj.Err)
	}
}

// begunStreamKeys names the stream objects of every backup directory in
// the test repository that has a begun marker.
func begunStreamKeys(t *testing.T, srv *s3test.Server) []string {
	t.Helper()
	var keys []string
	for obj := range srv.Client(t).ListObjects(context.Background(), srv.Bucket, minio.ListObjectsOptions{Prefix: "repo/backups/", Recursive: true}) {
		if dir, ok := strings.CutSuffix(obj.Key, "/"+repo.BegunName); ok {
			for i := range 2 {
				keys = append(keys, fmt.Sprintf("%s/streams/%05d.xbs.zst", dir, i))
			}
		}
	}
	return keys
}

// incompleteUploads counts the incomplete multipart uploads of the keys
// in bucket.
func incompleteUploads(t *testing.T, srv *s3test.Server, bucket string, keys []string) int {
	t.Helper()
	c := srv.Client(t)
	n := 0
	for _, k := range keys {
		for u := range c.ListIncompleteUploads(context.Background(), bucket, k, true) {
			if u.Err != nil {
				t.Fatal(u.Err)
			}
			n++
		}
	}
	return n
}

// Wrong credentials: a clear error at once, naming the bucket.
func TestS3AccessDeniedFailsFast(t *testing.T) {
	src := sandboxtest.Start(t, sandbox.Options{})
	_, location, flags := s3Repo(t)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
	start := time.Now()
	r := run(t, append(append([]string{"backup", "--repo", location}, flags...), sandboxConn(src)...)...)
	if r.code == ExitOK || !strings.Contains(r.err.Error(), "bs-test") {
		t.Fatalf("exit %d, %v: want a failure naming the bucket", r.code, r.err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v to fail on wrong credentials", d)
	}
}
