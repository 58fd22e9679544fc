package backup_test

import (
	"path/filepath"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/toolpath"
	"github.com/backstream/backstream/internal/usecasetest"
)

// TestVersionsDedup is the deduplicating repository on the other MariaDB
// versions (TestDedupRepositoryPhysical is the host's 10.11): each
// version's mariabackup streams its own way (11.8's redo log, 10.5's),
// and a table of page-compressed pages is a sparse file there. Two
// physical backups into a deduplicating repository, rows changed between
// them: the second stores a small part of what the first did, and each
// restores, prepared with its version's tools, into a server of that
// version with CHECKSUM TABLE equal to the source's at its time.
func TestVersionsDedup(t *testing.T) {
	b105, b118 := sandboxtest.Basedir(t, "10.5"), sandboxtest.Basedir(t, "11.8")
	t.Parallel()
	path := toolpath.Path{b118, b105}
	for _, c := range []struct{ version, basedir string }{{"10.5", b105}, {"11.8", b118}} {
		t.Run(c.version, func(t *testing.T) {
			t.Parallel()
			src := sandboxtest.Start(t, sandbox.Options{Basedir: c.basedir})
			usecasetest.RequireVersion(t, src, c.version)
			db := src.DB()
			usecasetest.ExecAll(t, db,
				"CREATE DATABASE d",
				"CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(300)) ENGINE=InnoDB",
				"INSERT INTO d.t SELECT seq, CONCAT(SHA2(seq, 512), SHA2(seq + 1, 512)) FROM d.seq_1_to_30000",
				"CREATE TABLE d.pc (id INT PRIMARY KEY, v TEXT) ENGINE=InnoDB PAGE_COMPRESSED=1",
				"INSERT INTO d.pc SELECT seq, REPEAT(MD5(seq), 20) FROM d.seq_1_to_8000",
				"CREATE TABLE d.a (id INT PRIMARY KEY, v VARCHAR(40)) ENGINE=Aria",
				"INSERT INTO d.a SELECT seq, MD5(seq) FROM d.seq_1_to_2000")
			dedupTwice(t, src, func(r usecasetest.Repo) *archive.Manifest {
				req := usecasetest.BackupOf(t, r, src)
				req.Physical.MariadbPath = path
				return usecasetest.Backup(t, req).Manifest
			}, func(r usecasetest.Repo, m *archive.Manifest) *sandbox.Server {
				req := usecasetest.WithMariadbPath(usecasetest.RestoreOf(r, m.ID), path)
				req.Restore.TargetDir, req.Restore.Options.Prepare = filepath.Join(t.TempDir(), "datadir"), true
				usecasetest.Restore(t, req)
				s := sandboxtest.Start(t, sandbox.Options{Basedir: c.basedir, Datadir: req.Restore.TargetDir})
				usecasetest.RequireVersion(t, s, c.version)
				return s
			},
				"UPDATE d.t SET v = 'changed' WHERE id BETWEEN 100 AND 140",
				"UPDATE d.pc SET v = 'changed' WHERE id = 7",
				"INSERT INTO d.a VALUES (2001, 'after the first')")
		})
	}
}
