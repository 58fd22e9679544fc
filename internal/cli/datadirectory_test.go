package cli

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// Tables created with DATA DIRECTORY (issue 21): an InnoDB table, a
// partition and a MyISAM table keep their files outside the source's
// datadir. Restores on the source's host, while the source runs, must
// give tables equal to the source's, never point at the source's files
// (with them flushed, the server refuses a tablespace found in two
// places) and never change them: in the datadir by default, in a mapped
// directory with --map-data-directory, refused (exit 2) when mapped onto
// the live source's directory; and verify --restore-test passes.
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
	for _, q := range []string{
		"CREATE DATABASE d",
		"CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(40)) ENGINE=InnoDB DATA DIRECTORY='" + ext + "'",
		"INSERT INTO d.t SELECT seq, MD5(seq) FROM d.seq_1_to_2000",
		"CREATE TABLE d.p (id INT PRIMARY KEY) ENGINE=InnoDB PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (1000) DATA DIRECTORY='" + ext + "', PARTITION p1 VALUES LESS THAN MAXVALUE)",
		"INSERT INTO d.p SELECT seq FROM d.seq_1_to_1500",
		"CREATE TABLE d.m (id INT PRIMARY KEY, v VARCHAR(40)) ENGINE=MyISAM DATA DIRECTORY='" + extMyISAM + "' INDEX DIRECTORY='" + extMyISAM + "'",
		"INSERT INTO d.m SELECT seq, MD5(seq) FROM d.seq_1_to_500",
		// Flushed, the source's files hold valid tablespaces: what a
		// restored server must not find through a kept .isl.
		"FLUSH TABLES d.t, d.p FOR EXPORT",
		"UNLOCK TABLES",
		"FLUSH TABLES d.m",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	want := map[string]string{}
	for name, sum := range usecasetest.Checksums(t, src) {
		if strings.HasPrefix(name, "d.") {
			want[name] = sum
		}
	}
	if len(want) != 3 {
		t.Fatalf("source checksums of d: %v", want)
	}
	repoDir := newRepoDir(t)
	run(t, append([]string{"backup", "--repo", repoDir}, sandboxConn(src)...)...).mustSucceed(t)
	id := backupListing(t, repoDir)[0].ID
	extBefore, myisamBefore := usecasetest.TreeDigests(t, ext), usecasetest.TreeDigests(t, extMyISAM)
	if len(extBefore) != 2 || len(myisamBefore) != 2 {
		t.Fatalf("the source's external files: %v, %v", extBefore, myisamBefore)
	}
	sourceUnchanged := func(when string) {
		t.Helper()
		usecasetest.CompareTrees(t, when+": the source's DATA DIRECTORY", usecasetest.TreeDigests(t, ext), extBefore)
		usecasetest.CompareTrees(t, when+": the source's MyISAM DATA DIRECTORY", usecasetest.TreeDigests(t, extMyISAM), myisamBefore)
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

	// (a) Default: the tablespaces stay in the datadir; nothing in the
	// target points outside it.
	target := filepath.Join(t.TempDir(), "datadir")
	res := run(t, "restore", id, "--repo", repoDir, "--target-dir", target, "--prepare").mustSucceed(t)
	if !strings.Contains(res.stdout, "DATA DIRECTORY "+ext+": 2 tablespaces placed in the datadir "+target) {
		t.Errorf("the restore did not say where the tablespaces of %s went:\n%s", ext, res.stdout)
	}
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
	res = run(t, "restore", id, "--repo", repoDir, "--target-dir", target, "--prepare", "--map-data-directory", ext+"="+mapped).mustSucceed(t)
	if !strings.Contains(res.stdout, "DATA DIRECTORY "+ext+": 2 tablespaces placed in "+mapped) {
		t.Errorf("the restore did not say where the tablespaces of %s went:\n%s", ext, res.stdout)
	}
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
		before := usecasetest.TreeDigests(t, onto)
		target = filepath.Join(t.TempDir(), "datadir")
		res = run(t, "restore", id, "--repo", repoDir, "--target-dir", target, "--prepare", "--map-data-directory", ext+"="+onto)
		if res.code != ExitUsage || res.err == nil || !strings.Contains(res.err.Error(), onto) {
			t.Errorf("restore mapped onto %s: exit %d, %v; want exit %d naming it", onto, res.code, res.err, ExitUsage)
		}
		usecasetest.CompareTrees(t, "the refused destination "+onto, usecasetest.TreeDigests(t, onto), before)
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Errorf("the refused restore left its target: %v", err)
		}
	}
	sourceUnchanged("after refused restores")

	// (d) The restore test restores into a temporary datadir: it passes,
	// and the source's files stay as they were.
	res = run(t, "verify", id, "--repo", repoDir, "--restore-test").mustSucceed(t)
	if !strings.Contains(res.stdout, "restore test passed") {
		t.Errorf("verify --restore-test: %s", res.stdout)
	}
	sourceUnchanged("after verify --restore-test")

	// (e) An incremental: its .isl files, which prepare would copy into
	// the base, are taken out too.
	for _, q := range []string{"INSERT INTO d.t SELECT seq, 'more' FROM d.seq_2001_to_2500", "FLUSH TABLES d.t FOR EXPORT", "UNLOCK TABLES"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	sumT := usecasetest.Checksums(t, src)["d.t"]
	extBefore = usecasetest.TreeDigests(t, ext)
	run(t, append([]string{"backup", "--repo", repoDir, "--incremental"}, sandboxConn(src)...)...).mustSucceed(t)
	target = filepath.Join(t.TempDir(), "datadir")
	run(t, "restore", "latest", "--repo", repoDir, "--target-dir", target, "--prepare").mustSucceed(t)
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
