package backup_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/merge"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/restoretest"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/toolpath"
	"github.com/backstream/backstream/internal/usecasetest"
)

// TestVersionsPhysical is the physical part of the version matrix: on
// each MariaDB version a full and an incremental backup of a server
// holding InnoDB and Aria tables (one changed between the two), the chain
// restored and prepared, a server of the same version started on it with
// CHECKSUM TABLE equal to the source's, merge, and the restore test on
// the chain and on the merged backup. No explicit mariabackup: the tools
// and the restore test's server come from the MariaDB path (--mariadb-path),
// which lists 11.8's basedir first, so that for the host's 10.11 (whose
// tools are in PATH) the first mariabackup found is the wrong one, as on a
// host upgraded to 11.8 restoring an older backup.
func TestVersionsPhysical(t *testing.T) {
	b105, b118 := sandboxtest.Basedir(t, "10.5"), sandboxtest.Basedir(t, "11.8")
	t.Parallel()
	path := toolpath.Path{b118, b105}
	for _, c := range []struct{ version, basedir string }{
		{"10.5", b105},
		{"11.8", b118},
		{"10.11", ""}, // the host's, in PATH
	} {
		t.Run(c.version, func(t *testing.T) {
			t.Parallel()
			physicalMatrix(t, c.version, c.basedir, path)
		})
	}
}

// physicalMatrix is TestVersionsPhysical on MariaDB version, whose server
// is basedir's ("" for the host's), every command given --mariadb-path
// path.
func physicalMatrix(t *testing.T, version, basedir string, path toolpath.Path) {
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{Basedir: basedir})
	usecasetest.RequireVersion(t, src, version)
	db := src.DB()
	usecasetest.ExecAll(t, db,
		"CREATE DATABASE app",
		"CREATE TABLE app.orders (id INT PRIMARY KEY, customer VARCHAR(40), total DECIMAL(10,2), note TEXT) ENGINE=InnoDB",
		"INSERT INTO app.orders SELECT seq, CONCAT('customer ', seq % 97), seq * 1.25, REPEAT(SHA2(seq, 256), 4) FROM app.seq_1_to_20000",
		"CREATE TABLE app.log (id INT PRIMARY KEY, line VARCHAR(200)) ENGINE=Aria",
		"INSERT INTO app.log SELECT seq, SHA2(seq, 512) FROM app.seq_1_to_5000",
		"CREATE TABLE app.settings (k VARCHAR(20) PRIMARY KEY, v INT) ENGINE=InnoDB",
		"INSERT INTO app.settings VALUES ('a', 1), ('b', 2)")
	repo := usecasetest.NewLocalRepo(t)
	// take is `backup --parallel 2 --mariadb-path path`, with
	// --incremental if incremental; fullBecause is what an incremental
	// says when it takes a full backup instead ("" when it did not).
	take := func(incremental bool) (res *backup.Result, fullBecause string) {
		t.Helper()
		req := usecasetest.BackupOf(t, repo, src)
		req.Physical.MariadbPath = path
		if incremental {
			req.Physical.Incremental = &backup.Incremental{FullBecause: func(why string) { fullBecause = why }}
		}
		return usecasetest.Backup(t, req), fullBecause
	}
	take(false)
	if version == "10.5" {
		// --checkpoint: 10.5's release builds have no
		// innodb_log_checkpoint_now; refused by name, nothing committed.
		req := usecasetest.BackupOf(t, repo, src)
		req.Physical.MariadbPath, req.Physical.Checkpoint = path, true
		if _, err := backup.Run(ctx, req); err == nil || !strings.Contains(err.Error(), "--checkpoint: MariaDB 10.5.") ||
			!strings.Contains(err.Error(), "has no innodb_log_checkpoint_now") {
			t.Errorf("backup --checkpoint of MariaDB 10.5: %v; want a refusal naming the version and the variable", err)
		}
		if n := len(usecasetest.List(t, repo)); n != 1 {
			t.Errorf("the refused backup --checkpoint: %d backups listed, want the one before", n)
		}
	}
	usecasetest.ExecAll(t, db,
		"UPDATE app.orders SET total = total + 1 WHERE id % 7 = 0",
		"DELETE FROM app.orders WHERE id > 19000",
		"INSERT INTO app.log SELECT seq, CONCAT('after the full ', seq) FROM app.seq_5001_to_6000",
		"UPDATE app.settings SET v = v * 10")
	if res, why := take(true); res.Manifest.Depth != 1 || res.Manifest.Parent == "" || why != "" {
		t.Fatalf("the second backup is no incremental: depth %d, parent %q, full because %q", res.Manifest.Depth, res.Manifest.Parent, why)
	}
	want := usecasetest.Checksums(t, src)
	var incremental string
	for _, e := range usecasetest.List(t, repo) {
		if !strings.HasPrefix(e.Server.Version, version+".") {
			t.Errorf("backup %s records server %q, want MariaDB %s", e.ID, e.Server.Version, version)
		}
		if e.Depth == 1 {
			incremental = e.ID
		}
	}

	// prepared is `restore ref --target-dir DIR --prepare` with the tools
	// of path, and DIR.
	prepared := func(ref string, path toolpath.Path) (res *restorecase.Result, target string, err error) {
		t.Helper()
		req := usecasetest.WithMariadbPath(usecasetest.RestoreOf(repo, ref), path)
		req.Restore.TargetDir, req.Restore.Options.Prepare = filepath.Join(t.TempDir(), "datadir"), true
		res, err = restorecase.Run(ctx, req)
		return res, req.Restore.TargetDir, err
	}
	restored := func(what, ref string) {
		t.Helper()
		res, target, err := prepared(ref, path)
		if err != nil {
			t.Fatalf("restore %s --prepare: %v", ref, err)
		}
		if d := res.Datadir; d == nil || d.Target != target || !d.Prepared {
			t.Fatalf("%s: restore --prepare made %+v; want a datadir prepared in %s", what, d, target)
		}
		t.Logf("%s: backups %v restored and prepared in %s", what, res.Datadir.Chain, target)
		s := sandboxtest.Start(t, sandbox.Options{Basedir: basedir, Datadir: target})
		usecasetest.RequireVersion(t, s, version)
		usecasetest.CompareChecksums(t, usecasetest.Checksums(t, s), want)
		s.Close()
	}
	if basedir != "" {
		// With only PATH, the host's 10.11 tools: refused, naming the
		// backup's version, what was found and where to say more.
		_, refused, err := prepared("latest", nil)
		if msg := fmt.Sprint(err); err == nil || !strings.Contains(msg, "the backup is MariaDB "+version+", but /usr/bin/mariabackup is built from MariaDB 10.11.") ||
			!strings.Contains(msg, "--mariadb-path DIR") {
			t.Errorf("restore --prepare of a %s backup with the host's mariabackup only: %v", version, err)
		}
		if _, err := os.Stat(refused); !os.IsNotExist(err) {
			t.Errorf("the refused restore left its target behind: %v", err)
		}
	}
	restored("the chain", "latest")

	// Point in time: writes after the chain, replayed from the archived
	// binary logs by the backup's mariadb-binlog into a server of its
	// version (TestVersionsBinlog goes further: a time inside the archive).
	usecasetest.ExecAll(t, db,
		"UPDATE app.settings SET v = v + 1",
		"INSERT INTO app.log SELECT seq, CONCAT('after the chain ', seq) FROM app.seq_6001_to_6100",
		"FLUSH BINARY LOGS")
	wantEnd := usecasetest.Checksums(t, src)
	usecasetest.ArchiveBinlogsWith(t, repo, src, path)
	target := filepath.Join(t.TempDir(), "until-end")
	req := usecasetest.WithMariadbPath(usecasetest.PointInTimeOf(repo, target), path)
	req.Until = "end"
	usecasetest.Restore(t, req)
	s := sandboxtest.Start(t, sandbox.Options{Basedir: basedir, Datadir: target})
	usecasetest.RequireVersion(t, s, version)
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, s), wantEnd)
	s.Close()

	// restoreTest is `verify ref --restore-test --mariadb-path path`: its
	// report and the error the command exits with.
	restoreTest := func(ref string) (*restoretest.Report, error) {
		t.Helper()
		return usecasetest.RestoreTestWith(t, repo, ref, func(req *restoretest.Request) { req.Job.MariadbPath = path })
	}
	if rep, err := restoreTest("latest"); rep == nil {
		t.Errorf("verify --restore-test of the chain did not run: %v", err)
	} else if err != nil || !rep.Passed || !strings.HasPrefix(rep.Server, version+".") {
		t.Errorf("restore test of the chain: %v, passed %v on server %q, want passed on MariaDB %s: %v", err, rep.Passed, rep.Server, version, rep.Problems)
	}

	made, err := usecasetest.Merge(t, repo.Access(), "latest", func(job *merge.Job) { job.Restore.MariadbPath = path })
	if err != nil {
		t.Fatalf("merge: %v", err)
	}
	var merged inventory.Backup
	for _, e := range usecasetest.List(t, repo) {
		if len(e.MergedFrom) > 0 {
			merged = e
		}
	}
	if merged.ID == "" || merged.ID != made.ID || merged.Depth != 0 || merged.Kind != archive.KindPhysical {
		t.Fatalf("merge made %s, listed as %+v; want a full physical backup", made.ID, merged)
	}
	restored("the merged backup", merged.ID)
	if rep, err := restoreTest(merged.ID); rep == nil || !rep.Passed || !strings.HasPrefix(rep.Server, version+".") {
		if rep == nil {
			t.Fatalf("restore test of the merged backup did not run: %v", err)
		}
		t.Errorf("restore test of the merged backup: %v, passed %v on server %q: %v", err, rep.Passed, rep.Server, rep.Problems)
	}

	// One table of the chain, exported by the backup's mariabackup and
	// server, imported into the running source under another name.
	imp := usecasetest.WithMariadbPath(usecasetest.ImportOf(repo, src, "app.orders"), path)
	imp.Backup, imp.Named, imp.As = incremental, true, "app.orders_restored"
	usecasetest.Restore(t, imp)
	if got := usecasetest.Checksums(t, src)["app.orders_restored"]; got != want["app.orders"] {
		t.Errorf("restore --table app.orders --as app.orders_restored: checksum %q, want %q", got, want["app.orders"])
	}
}
