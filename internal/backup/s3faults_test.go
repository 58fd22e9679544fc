package backup_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/retention"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/storage/s3/s3test"
	"github.com/backstream/backstream/internal/usecasetest"
)

// s3Repo starts a MinIO of the test's own, which it may stop and restart,
// makes a repository in it as init does, and returns how the commands
// reach that repository (--repo and --s3-endpoint).
func s3Repo(t *testing.T) (*s3test.Server, repoaccess.Options) {
	t.Helper()
	srv := s3test.StartPrivate(t)
	o := repoaccess.Options{Location: repoaccess.Location{Repo: "s3://" + srv.Bucket + "/repo", S3Endpoint: srv.Endpoint}}
	if _, err := o.Create(context.Background()); err != nil {
		t.Fatalf("init: %v", err)
	}
	return srv, o
}

// physicalOf is the request `backup --parallel 2` makes of src with the
// defaults a user gets, as usecasetest.BackupOf makes it, less the
// repository (see backupInto).
func physicalOf(t *testing.T, src *sandbox.Server) backup.Request {
	t.Helper()
	c, err := codec.Parse(codec.Default)
	if err != nil {
		t.Fatal(err)
	}
	return backup.Request{Conn: usecasetest.Conn(src), Parallel: 2, Codec: c, Hash: archive.DefaultHash, Version: "test"}
}

// backupInto takes the backup req describes into the repository o
// reaches, as the backup command does: it opens the repository, takes
// the backup's lock on it, runs the backup and lets the lock go.
func backupInto(ctx context.Context, o repoaccess.Options, req backup.Request) error {
	var err error
	if req.Repo, err = o.Open(ctx); err != nil {
		return err
	}
	if req.Encryption, err = o.Encryption(ctx, req.Repo); err != nil {
		return err
	}
	ctx, release, err := o.Acquire(ctx, req.Repo, repoaccess.OpBackup, true)
	if err != nil {
		return err
	}
	defer release()
	_, err = backup.Run(ctx, req)
	return err
}

// midway waits until a throttled backup is streaming into srv (a multipart
// upload of one of its stream objects has begun), and fails the test if
// the backup ended first, so that a fault hits it in the middle however
// slow the machine.
func midway(t *testing.T, srv *s3test.Server, done <-chan error) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for usecasetest.IncompleteUploads(t, srv, srv.Bucket, begunStreamKeys(t, srv)) == 0 {
		select {
		case err := <-done:
			t.Fatalf("the backup ended before the fault: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the backup began no upload in 2 minutes")
		}
	}
}

// throttledS3Backup starts a backup of about 20 s (--max-io 40) into a
// fresh MinIO with the given retry window (--s3-retry-window), and
// returns once it is streaming: the MinIO, how the commands reach the
// repository (without the retry window), and the backup's end.
func throttledS3Backup(t *testing.T, retryWindow time.Duration) (*s3test.Server, repoaccess.Options, <-chan error) {
	t.Helper()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1, BigTableMB: 60}); err != nil {
		t.Fatal(err)
	}
	srv, o := s3Repo(t)
	req := physicalOf(t, src)
	req.Physical.MaxIO, req.Given.MaxIO = 40, true
	retrying := o
	retrying.Location.S3Retry = retryWindow
	done := background(func() error { return backupInto(context.Background(), retrying, req) })
	midway(t, srv, done)
	return srv, o, done
}

// MinIO stopped in the middle of a backup and started again within the
// retry window: the backup finishes and verifies.
func TestS3OutageWithinRetryWindow(t *testing.T) {
	t.Parallel()
	srv, o, done := throttledS3Backup(t, 90*time.Second)
	srv.Stop()
	time.Sleep(3 * time.Second)
	srv.Restart()
	if err := waitErr(t, "backup across an outage", done); err != nil {
		t.Fatalf("backup across a 3 s outage: %v", err)
	}
	if err := usecasetest.VerifyWith(t, o, "latest"); err != nil {
		t.Fatalf("verify: %v", err)
	}
}

// MinIO stopped for good: the backup fails clearly within its retry
// window, and once MinIO is back there is no manifest; the multipart
// uploads it could not abort are found through its begun marker and
// aborted by expire --prune-incomplete, which leaves nothing behind.
func TestS3OutageForGood(t *testing.T) {
	t.Parallel()
	srv, o, done := throttledS3Backup(t, 5*time.Second)
	srv.Stop()
	err := waitErr(t, "backup with S3 gone", done)
	if !usecasetest.Failed(err) || !strings.Contains(err.Error(), "nothing was committed") || !strings.Contains(err.Error(), "retry window") {
		t.Fatalf("%v: want a failure (exit 1) naming the retry window and saying nothing was committed", err)
	}
	srv.Restart()
	if l := usecasetest.ListWith(t, o); len(l) != 0 {
		t.Errorf("%d backups listed after a failed backup", len(l))
	}
	// The stream keys are taken now: the prune deletes the begun marker
	// that names them, and MinIO lists uploads only by whole key.
	keys := begunStreamKeys(t, srv)
	if n := usecasetest.IncompleteUploads(t, srv, srv.Bucket, keys); n == 0 {
		t.Fatal("no incomplete uploads after MinIO went away mid-backup: the test did not hit the case it is about")
	}
	// The failed backup could not delete its lock either. It ran inside
	// this test process, so its pid is alive and the lock is not stale by
	// pid (a separate backstream process's would be): remove it as a user
	// who knows the backup is gone would, with unlock --all.
	if _, err := o.Unlock(context.Background(), true); err != nil {
		t.Fatalf("unlock --all: %v", err)
	}
	if _, err := usecasetest.ExpireWith(t, o, retention.Request{PruneIncomplete: true, Confirm: true}); err != nil {
		t.Fatalf("expire --prune-incomplete --confirm: %v", err)
	}
	if n := usecasetest.IncompleteUploads(t, srv, srv.Bucket, keys); n != 0 {
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

// Wrong credentials: a clear error at once, naming the bucket.
func TestS3AccessDeniedFailsFast(t *testing.T) {
	src := sandboxtest.Start(t, sandbox.Options{})
	_, o := s3Repo(t)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
	start := time.Now()
	err := backupInto(context.Background(), o, physicalOf(t, src))
	if err == nil || !strings.Contains(err.Error(), "bs-test") {
		t.Fatalf("%v: want a failure naming the bucket", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v to fail on wrong credentials", d)
	}
}
