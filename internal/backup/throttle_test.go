package backup_test

import (
	"context"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// atLeast is the least time moving bytes at rate can take: the limiter lets
// its first burst (a tenth of a second of bytes) through at once, and the
// 0.8 leaves room for that. Throttling guarantees the bound on any
// machine, however loaded; a backup that ignored the limit ends well
// before it.
func atLeast(n, rate int64) time.Duration {
	return time.Duration(float64(n) / float64(rate) * 0.8 * float64(time.Second))
}

// A physical backup under --max-rate and --max-io: mariabackup gets its
// --throttle, the stream is read no faster than the rate, and the backup
// restores, prepares and starts with every table's checksum equal to the
// source's.
func TestPhysicalBackupMaxRate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 2, BigTableMB: 24}); err != nil {
		t.Fatal(err)
	}
	want := usecasetest.Checksums(t, src)
	r := usecasetest.NewLocalRepo(t)
	const rate = 16 << 20
	// backup --max-rate 16MiB/s --max-io 5000
	req := usecasetest.BackupOf(t, r, src)
	req.MaxRate, req.Physical.MaxIO, req.Given.MaxIO = rate, 5000, true
	start := time.Now()
	usecasetest.Backup(t, req)
	took := time.Since(start)
	e := usecasetest.List(t, r)[0]
	if least := atLeast(e.RawBytes, rate); took < least {
		t.Errorf("backup of %d raw bytes at --max-rate 16MiB/s took %v, less than the %v the rate allows", e.RawBytes, took, least)
	}
	t.Logf("%d raw bytes at 16 MiB/s: %v (at least %v)", e.RawBytes, took, atLeast(e.RawBytes, rate))
	// mariabackup records the options it was given in its info file.
	if info := mariabackupInfo(t, r, e.ID); !strings.Contains(info, " --throttle=5000") {
		t.Errorf("mariabackup did not get --throttle=5000; its info file says:\n%s", info)
	}

	if err := usecasetest.Verify(t, r, e.ID); err != nil {
		t.Fatalf("verify %s: %v", e.ID, err)
	}
	target := filepath.Join(t.TempDir(), "restore")
	restore := usecasetest.RestoreOf(r, e.ID)
	restore.Restore.TargetDir, restore.Restore.Options.Prepare = target, true
	usecasetest.Restore(t, restore)
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, usecasetest.ServerOn(t, target)), want)
}

// mariabackupInfo is the tool's info file kept in a backup's meta (its
// name changed in 11.1).
func mariabackupInfo(t *testing.T, r usecasetest.Repo, id string) string {
	t.Helper()
	infos, err := r.Backend.List(context.Background(), "backups/"+id+"/meta/")
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range infos {
		if b := path.Base(i.Name); b == "xtrabackup_info" || b == "mariadb_backup_info" {
			return string(r.Read(t, i.Name))
		}
	}
	t.Fatalf("backup %s keeps no mariabackup info file in its meta: %v", id, infos)
	return ""
}

// A logical backup under --max-rate: all connections share one budget, so
// the table data takes at least its size over the rate, and the dump
// loads into a fresh server with every table's checksum equal.
func TestLogicalBackupMaxRate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 3, BigTableMB: 8, Blobs: true}); err != nil {
		t.Fatal(err)
	}
	want := usecasetest.Checksums(t, src)
	r := usecasetest.NewLocalRepo(t)
	const rate = 4 << 20
	// backup --logical --parallel 3 --chunk-size 1MiB --skip-users --max-rate 4MiB
	req := usecasetest.LogicalBackupOf(t, r, src)
	req.Parallel, req.Dump.ChunkBytes, req.Dump.Skip.Users, req.MaxRate = 3, 1<<20, true, rate
	start := time.Now()
	usecasetest.Backup(t, req)
	took := time.Since(start)
	var data int64
	for _, d := range usecasetest.List(t, r)[0].Databases {
		data += d.Bytes
	}
	if least := atLeast(data, rate); took < least {
		t.Errorf("dump of %d bytes of table data at --max-rate 4MiB took %v, less than the %v the rate allows", data, took, least)
	}
	t.Logf("%d bytes of table data over 3 connections at 4 MiB/s: %v (at least %v)", data, took, atLeast(data, rate))

	dst := sandboxtest.Start(t, sandbox.Options{})
	usecasetest.Restore(t, usecasetest.LoadOf(r, "", dst))
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, dst), want)
}
