package usecasetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/merge"
	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/testkit"
)

// Merge does what `merge ref` does in the repository o reaches (its key
// files, and --encrypt), with the defaults a user gets (--parallel's
// streams, zstd, BLAKE3, the scratch directory): under the repository's
// exclusive lock it merges the chain that ends at ref, after set (if not
// nil) has added to the job what other flags ask for (Restore.MariadbPath,
// WorkDir, ...), and returns the backup made and the error the command
// exits with.
func Merge(t testing.TB, o repoaccess.Options, ref string, set func(*merge.Job)) (*archive.Manifest, error) {
	t.Helper()
	ctx := context.Background()
	c, err := codec.Parse(codec.Default)
	if err != nil {
		t.Fatal(err)
	}
	job := merge.Job{Parallel: options.DefaultParallel(), Codec: c, Hash: archive.DefaultHash, Version: "test"}
	job.Restore.Workers = job.Parallel
	if set != nil {
		set(&job)
	}
	if job.Repo, err = o.Open(ctx); err != nil {
		return nil, err
	}
	ctx, release, err := o.Acquire(ctx, job.Repo, repoaccess.OpMerge, true)
	if err != nil {
		return nil, err
	}
	defer release()
	if job.Backup, err = job.Repo.Resolve(ctx, ref); err != nil {
		return nil, err
	}
	if job.Encryption, err = o.Encryption(ctx, job.Repo); err != nil {
		return nil, err
	}
	return merge.Merge(ctx, job)
}

// PlacedServer names a datadir to restore into and the --start command
// that runs the server of basedir (a MariaDB root, sandboxtest.Basedir)
// on it, killed when the test ends, with the socket it answers on; the
// server's error log is error.log beside the datadir.
func PlacedServer(t testing.TB, basedir string) (datadir, start, sock string) {
	t.Helper()
	dir := t.TempDir()
	datadir, sock = filepath.Join(dir, "mysql"), testkit.SocketPath(t, "s.sock")
	pidFile := filepath.Join(dir, "mariadbd.pid")
	start = fmt.Sprintf("%s --no-defaults --basedir=%s --datadir=%s --socket=%s --skip-networking --user=root --server-id=2 --pid-file=%s --log-error=%s --tmpdir=%s --innodb-buffer-pool-size=64M >/dev/null 2>&1 &",
		filepath.Join(basedir, "sbin", "mariadbd"), basedir, datadir, sock, pidFile, filepath.Join(dir, "error.log"), os.TempDir())
	t.Cleanup(func() { sandboxtest.KillByPidFile(t, pidFile) })
	return datadir, start, sock
}

// CompareStarted fails unless the server on sock is MariaDB version
// (major.minor) and every table's CHECKSUM TABLE is want's.
func CompareStarted(t testing.TB, sock, version string, want map[string]string) {
	t.Helper()
	CompareChecksums(t, StartedChecksums(t, sock, version), want)
}

// StartedChecksums is CHECKSUM TABLE of every table of the server on
// sock (one a test started itself, as root), which must be MariaDB
// version (major.minor).
func StartedChecksums(t testing.TB, sock, version string) map[string]string {
	t.Helper()
	ctx := context.Background()
	db, err := mariadb.Open(ctx, mariadb.Config{Socket: sock, User: "root"}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var started string
	if err := db.QueryRowContext(ctx, "SELECT @@version").Scan(&started); err != nil || !strings.HasPrefix(started, version+".") {
		t.Fatalf("the started server is %q (%v), want MariaDB %s", started, err, version)
	}
	got, err := sandbox.ChecksumTables(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	return got
}
