package restorecase_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/usecasetest"
)

// Tables created with DATA DIRECTORY (issue 21): an InnoDB table, a
// partition and a MyISAM table keep their files outside the source's
// datadir. Restores on the source's host, while the source runs, must
// give tables equal to the source's, never point at the source's files
// (with them flushed, the server refuses a tablespace found in two
// places) and never change them: in the datadir by default, in a mapped
// directory with --map-data-directory, refused (a *restore.RefusedError)
// when mapped onto the live source's directory; and the restore test
// passes.
func TestRestoreDataDirectory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	ext := filepath.Join(t.TempDir(), "ext")
	extMyISAM := filepath.Join(t.TempDir(), "ext-myisam")
	for _, d := range []string{ext, extMyISAM} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	db := src.DB()
	usecasetest.ExecAll(t, db,
		"CREATE DATABASE d",
		"CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(40)) ENGINE=InnoDB DATA DIRECTORY='"+ext+"'",
		"INSERT INTO d.t SELECT seq, MD5(seq) FROM d.seq_1_to_2000",
		"CREATE TABLE d.p (id INT PRIMARY KEY) ENGINE=InnoDB PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (1000) DATA DIRECTORY='"+ext+"', PARTITION p1 VALUES LESS THAN MAXVALUE)",
		"INSERT INTO d.p SELECT seq FROM d.seq_1_to_1500",
		"CREATE TABLE d.m (id INT PRIMARY KEY, v VARCHAR(40)) ENGINE=MyISAM DATA DIRECTORY='"+extMyISAM+"' INDEX DIRECTORY='"+extMyISAM+"'",
		"INSERT INTO d.m SELECT seq, MD5(seq) FROM d.seq_1_to_500",
		// Flushed, the source's files hold valid tablespaces: what a
		// restored server must not find through a kept .isl.
		"FLUSH TABLES d.t, d.p FOR EXPORT",
		"UNLOCK TABLES",
		"FLUSH TABLES d.m",
	)
	want := map[string]string{}
	for name, sum := range usecasetest.Checksums(t, src) {
		if strings.HasPrefix(name, "d.") {
			want[name] = sum
		}
	}
	if len(want) != 3 {
		t.Fatalf("source checksums of d: %v", want)
	}
	repo := usecasetest.NewLocalRepo(t)
	id := usecasetest.Backup(t, usecasetest.BackupOf(t, repo, src)).Manifest.ID
	extBefore, myisamBefore := testkit.TreeDigests(t, ext), testkit.TreeDigests(t, extMyISAM)
	if len(extBefore) != 2 || len(myisamBefore) != 2 {
		t.Fatalf("the source's external files: %v, %v", extBefore, myisamBefore)
	}
	sourceUnchanged := func(when string) {
		t.Helper()
		testkit.CompareTrees(t, when+": the source's DATA DIRECTORY", testkit.TreeDigests(t, ext), extBefore)
		testkit.CompareTrees(t, when+": the source's MyISAM DATA DIRECTORY", testkit.TreeDigests(t, extMyISAM), myisamBefore)
	}
	restoredEqual := func(target string) *sandbox.Server {
		t.Helper()
		s := usecasetest.ServerOn(t, target)
		got := usecasetest.Checksums(t, s)
		for name, sum := range want {
			if got[name] != sum {
				t.Errorf("%s: table %s has checksum %q, the source %q", target, name, got[name], sum)
			}
		}
		return s
	}
	// restoreInto restores backup id prepared into target, the data
	// directories mapped as maps say (--map-data-directory), and returns
	// where the restore placed the tablespaces of each data directory.
	restoreInto := func(target string, maps ...string) ([]restore.Placement, error) {
		t.Helper()
		req := usecasetest.RestoreOf(repo, id)
		req.Restore.TargetDir, req.Restore.Options.Prepare, req.Restore.DataDirs = target, true, maps
		var placed []restore.Placement
		req.Restore.Options.Placed = func(p restore.Placement) { placed = append(placed, p) }
		_, err := restorecase.Run(ctx, req)
		return placed, err
	}
	// placedIn checks that the restore placed ext's 2 tablespaces in
	// dir, a mapped directory or not.
	placedIn := func(placed []restore.Placement, dir string, mapped bool) {
		t.Helper()
		for _, p := range placed {
			if p.From == ext && p.To == dir && p.Mapped == mapped && len(p.Files) == 2 {
				return
			}
		}
		t.Errorf("the restore did not say it placed the 2 tablespaces of %s in %s (mapped %v): %+v", ext, dir, mapped, placed)
	}

	// (a) Default: the tablespaces stay in the datadir; nothing in the
	// target points outside it.
	target := filepath.Join(t.TempDir(), "datadir")
	placed, err := restoreInto(target)
	if err != nil {
		t.Fatal(err)
	}
	placedIn(placed, target, false)
	assertInside(t, target)
	s := restoredEqual(target)
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	sourceUnchanged("after a restore")

	// (b) Mapped: the tablespaces under the new directory, the .isl files
	// pointing there.
	mapped := filepath.Join(t.TempDir(), "new-ext")
	target = filepath.Join(t.TempDir(), "datadir")
	if placed, err = restoreInto(target, ext+"="+mapped); err != nil {
		t.Fatal(err)
	}
	placedIn(placed, mapped, true)
	for _, name := range []string{"d/t", "d/p#P#p0"} {
		placed := filepath.Join(mapped, name+".ibd")
		if _, err := os.Stat(placed); err != nil {
			t.Errorf("the mapped tablespace: %v", err)
		}
		if isl, err := os.ReadFile(filepath.Join(target, name+".isl")); err != nil || string(isl) != placed {
			t.Errorf("%s.isl holds %q (%v), want %s", name, isl, err, placed)
		}
		if _, err := os.Stat(filepath.Join(target, name+".ibd")); !os.IsNotExist(err) {
			t.Errorf("%s.ibd is still in the datadir: %v", name, err)
		}
	}
	s = restoredEqual(target)
	var table, create string
	if err := s.DB().QueryRowContext(ctx, "SHOW CREATE TABLE d.t").Scan(&table, &create); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(create, "DATA DIRECTORY='"+mapped+"/'") {
		t.Errorf("the mapped table: %s", create)
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	sourceUnchanged("after a mapped restore")

	// (c) Mapped onto the live source's directory, or onto a directory
	// holding a file of the same name: refused, naming it, and nothing
	// written there or left in the target.
	occupied := t.TempDir()
	if err := os.MkdirAll(filepath.Join(occupied, "d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(occupied, "d", "t.ibd"), []byte("someone's"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, onto := range []string{ext, occupied} {
		before := testkit.TreeDigests(t, onto)
		target = filepath.Join(t.TempDir(), "datadir")
		if _, err := restoreInto(target, ext+"="+onto); !refused(err) || !strings.Contains(fmt.Sprint(err), onto) {
			t.Errorf("restore mapped onto %s: %v; want refused naming it", onto, err)
		}
		testkit.CompareTrees(t, "the refused destination "+onto, testkit.TreeDigests(t, onto), before)
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Errorf("the refused restore left its target: %v", err)
		}
	}
	sourceUnchanged("after refused restores")

	// (d) The restore test restores into a temporary datadir: it passes,
	// and the source's files stay as they were.
	if rep, err := usecasetest.RestoreTest(t, repo, id); err != nil || !rep.Passed {
		t.Errorf("the restore test of %s: %+v, %v; want passed", id, rep, err)
	}
	sourceUnchanged("after the restore test")

	// (e) An incremental: its .isl files, which prepare would copy into
	// the base, are taken out too.
	usecasetest.ExecAll(t, db, "INSERT INTO d.t SELECT seq, 'more' FROM d.seq_2001_to_2500", "FLUSH TABLES d.t FOR EXPORT", "UNLOCK TABLES")
	sumT := usecasetest.Checksums(t, src)["d.t"]
	extBefore = testkit.TreeDigests(t, ext)
	inc := usecasetest.BackupOf(t, repo, src)
	inc.Physical.Incremental = &backup.Incremental{FullBecause: func(why string) { t.Errorf("a full backup instead of an incremental: %s", why) }}
	if m := usecasetest.Backup(t, inc).Manifest; m.Parent != id {
		t.Errorf("the incremental %s has parent %q, want %s", m.ID, m.Parent, id)
	}
	target = filepath.Join(t.TempDir(), "datadir")
	r := usecasetest.RestoreOf(repo, "latest")
	r.Restore.TargetDir, r.Restore.Options.Prepare = target, true
	usecasetest.Restore(t, r)
	assertInside(t, target)
	if got := usecasetest.Checksums(t, usecasetest.ServerOn(t, target))["d.t"]; got != sumT {
		t.Errorf("d.t restored from the incremental: checksum %q, the source %q", got, sumT)
	}
	sourceUnchanged("after restoring an incremental")
}

// assertInside fails for an .isl or a symbolic link in a restored datadir:
// what either names lies outside it.
func assertInside(t *testing.T, datadir string) {
	t.Helper()
	err := filepath.WalkDir(datadir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, ".isl") || d.Type()&fs.ModeSymlink != 0 {
			target, _ := os.ReadFile(p)
			t.Errorf("%s is in the restored datadir (%q)", p, target)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
