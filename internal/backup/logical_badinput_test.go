package backup_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// Bad input: missing privileges, a corrupted data file, tables already on
// the target.
func TestLogicalBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 2}); err != nil {
		t.Fatal(err)
	}
	t.Run("privileges", func(t *testing.T) {
		usecasetest.ExecAll(t, src.DB(), "CREATE USER weak@localhost", "GRANT SELECT ON sample.* TO weak@localhost")
		req := usecasetest.LogicalBackupOf(t, usecasetest.NewLocalRepo(t), src)
		req.Conn.User = "weak"
		// --database without --users skips the accounts too.
		req.Dump.Filter.Databases = []string{"sample"}
		s := &req.Dump.Skip
		s.Users, s.Events, s.Triggers, s.Routines = true, true, true, true
		res, err := backup.Run(ctx, req)
		if !usecasetest.Failed(err) || res != nil || !strings.Contains(err.Error(), "RELOAD") {
			t.Errorf("%+v, %v: want a failure naming the missing RELOAD privilege", res, err)
		}
	})
	usecasetest.ForEachBackend(t, func(t *testing.T, repo usecasetest.Repo) {
		req := usecasetest.LogicalBackupOf(t, repo, src)
		req.Dump.Skip.Users = true
		var err error
		if req.Codec, err = codec.Parse("none"); err != nil {
			t.Fatal(err)
		}
		id := usecasetest.Backup(t, req).Manifest.ID
		objs := repo.StreamObjects(t, id)
		data := repo.Read(t, objs[0])
		i := bytes.LastIndex(data, []byte("\t"))
		data[i-1] ^= 0x20
		repo.Write(t, objs[0], data)
		if err := usecasetest.Verify(t, repo, "latest"); !archive.IsCorrupt(err) || !strings.Contains(err.Error(), id) {
			t.Errorf("verify of a corrupted data file: %v; want corrupt data naming %s", err, id)
		}
		dst := sandboxtest.Start(t, sandbox.Options{})
		_, err = restorecase.Run(ctx, usecasetest.LoadOf(repo, "", dst))
		if !archive.IsCorrupt(err) || !strings.Contains(err.Error(), objs[0][strings.LastIndex(objs[0], "/")+1:]) {
			t.Errorf("restore of a corrupted data file: %v; want corrupt data naming the object", err)
		}
	})
	t.Run("existing tables", func(t *testing.T) {
		repo := usecasetest.NewLocalRepo(t)
		req := usecasetest.LogicalBackupOf(t, repo, src)
		req.Dump.Skip.Users = true
		usecasetest.Backup(t, req)
		dst := sandboxtest.Start(t, sandbox.Options{})
		usecasetest.ExecAll(t, dst.DB(), "CREATE DATABASE sample", "CREATE TABLE sample.small_01 (x INT)", "INSERT INTO sample.small_01 VALUES (42)")
		_, err := restorecase.Run(ctx, usecasetest.LoadOf(repo, "", dst))
		if !usecasetest.Failed(err) || !strings.Contains(err.Error(), "sample.small_01") || !strings.Contains(err.Error(), "--drop-existing") {
			t.Fatalf("%v: want a failure naming sample.small_01 and --drop-existing", err)
		}
		var x int
		if err := dst.DB().QueryRowContext(ctx, "SELECT x FROM sample.small_01").Scan(&x); err != nil || x != 42 {
			t.Errorf("the refused load changed the existing table: %v, %d", err, x)
		}
		load := usecasetest.LoadOf(repo, "", dst)
		load.Load.DropExisting = true
		usecasetest.Restore(t, load)
		usecasetest.CompareChecksums(t, usecasetest.Checksums(t, dst), usecasetest.Checksums(t, src))
	})
}
