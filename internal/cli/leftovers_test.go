package cli

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/usecasetest"
)

// tempFilesUnder returns the temporary files of unfinished writes below
// dir, with their sizes.
func tempFilesUnder(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if storage.IsTempName(d.Name()) {
			if fi, err := d.Info(); err == nil {
				out[p] = fi.Size()
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A backup killed with SIGKILL while it writes its streams leaves what
// its writes kept invisible: temporary files in a local repository,
// incomplete multipart uploads in S3. expire --prune-incomplete removes
// them, says how many, and leaves nothing at all of the backup: no file,
// dot files included, not its directory, and no upload of any object it
// wrote or was writing, named by its begun marker or not.
func TestKilledBackupLeavesNothing(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1, BigTableMB: 60}); err != nil {
		t.Fatal(err)
	}
	// Uncompressed and throttled, the streams are being written (past the
	// start of a multipart upload) for many seconds.
	startBackup := func(t *testing.T, r testRepo) *proc {
		return startProc(t, bin, append([]string{"backup", "--repo", r.Location, "--parallel", "2", "--compress", "none", "--max-io", "20"},
			sandboxConn(src)...)...)
	}

	t.Run("local", func(t *testing.T) {
		r := newTestRepo(t, "local")
		backups := filepath.Join(r.Location, "backups")
		p := startBackup(t, r)
		waitUntil(t, "temporary stream files with data", p, func() bool {
			for _, size := range tempFilesUnder(t, backups) {
				if size > 1<<20 {
					return true
				}
			}
			return false
		})
		p.kill(t)
		id, _ := r.CheckUnfinished(t)
		dir := filepath.Join(backups, id)
		temps := tempFilesUnder(t, dir)
		if len(temps) == 0 {
			t.Fatal("the killed backup left no temporary file: the prune below is not tested on one")
		}
		pruned := run(t, "expire", "--repo", r.Location, "--prune-incomplete", "--confirm").mustSucceed(t)
		if !strings.Contains(pruned.stdout, "removed what unfinished writes left under backups/: ") || !strings.Contains(pruned.stdout, " temporary file") {
			t.Errorf("expire does not report the temporary files it removed:\n%s", pruned.stdout)
		}
		var left []string
		err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			left = append(left, p)
			return nil
		})
		if !errors.Is(err, fs.ErrNotExist) || len(left) != 0 {
			t.Errorf("left under backups/%s after expire --prune-incomplete (%v): %q", id, err, left)
		}
		if temps := tempFilesUnder(t, r.Location); len(temps) != 0 {
			t.Errorf("temporary files left in the repository: %v", temps)
		}
	})

	t.Run("s3", func(t *testing.T) {
		r := newTestRepo(t, "s3")
		p := startBackup(t, r)
		waitUntil(t, "a multipart upload of a stream", p, func() bool { return r.streaming(t) })
		p.kill(t)
		id, streams := r.CheckUnfinished(t)
		if r.Uploads(t, id, streams) == 0 {
			t.Fatal("the killed backup left no incomplete upload: the prune below is not tested on one")
		}
		// Uploads of objects the begun marker does not name, as a backup
		// killed at another moment leaves them: its streams' indexes, and
		// the marker and the manifest themselves.
		prefix := "repo/" + repo.Dir(id) + "/"
		keys := []string{prefix + repo.BegunName, prefix + repo.ManifestName}
		for i, s := range streams {
			keys = append(keys, prefix+s, prefix+archive.IndexName(i))
		}
		core := minio.Core{Client: r.S3.Client(t)}
		for _, k := range keys[:2] {
			if _, err := core.NewMultipartUpload(t.Context(), r.Bucket, k, minio.PutObjectOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for i := range streams {
			if _, err := core.NewMultipartUpload(t.Context(), r.Bucket, prefix+archive.IndexName(i), minio.PutObjectOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		before := usecasetest.IncompleteUploads(t, r.S3, r.Bucket, keys)
		pruned := run(t, "expire", "--repo", r.Location, "--prune-incomplete", "--confirm").mustSucceed(t)
		if !strings.Contains(pruned.stdout, "removed what unfinished writes left under backups/: ") || !strings.Contains(pruned.stdout, " incomplete upload") {
			t.Errorf("expire does not report the uploads it aborted:\n%s", pruned.stdout)
		}
		if n := usecasetest.IncompleteUploads(t, r.S3, r.Bucket, keys); n != 0 {
			t.Errorf("%d of %d incomplete uploads of backup %s left after expire --prune-incomplete", n, before, id)
		}
		for obj := range r.S3.Client(t).ListObjects(context.Background(), r.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
			t.Errorf("left after expire --prune-incomplete: %s %v", obj.Key, obj.Err)
		}
	})
}
