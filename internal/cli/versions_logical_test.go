package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/fidelitytest"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// TestVersionsLogical is the logical part of the version matrix (issue 30
// item 3): on MariaDB 10.5 and 11.8, with both servers strict and both
// permissive, every fixture of the fidelity corpus that the version can
// hold goes through a logical backup and restore, and through copy, into
// a fresh server of the same version, each fixture's fingerprint equal to
// the source's. A fixture whose syntax or types the version lacks says so
// in its header (since: x.y) and is named in the log as skipped.
func TestVersionsLogical(t *testing.T) {
	t.Parallel()
	fixtures, err := fidelitytest.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	b105, b118 := sandboxtest.Basedir(t, "10.5"), sandboxtest.Basedir(t, "11.8")
	for _, c := range []struct{ version, basedir string }{{"10.5", b105}, {"11.8", b118}} {
		for _, mode := range []string{"permissive", "strict"} {
			t.Run(c.version+"-"+mode, func(t *testing.T) {
				t.Parallel()
				logicalMatrix(t, fixtures, c.version, c.basedir, mode)
			})
		}
	}
}

func logicalMatrix(t *testing.T, fixtures []*fidelitytest.Fixture, version, basedir, mode string) {
	src, loaded, want := versionSource(t, fixtures, version, basedir, mode)
	target := func() *sandbox.Server {
		dst := sandboxtest.Start(t, sandbox.Options{Basedir: basedir, Args: append(corpusServerArgs(mode), fidelitytest.TargetArgs...)})
		requireVersion(t, dst, version)
		return dst
	}
	// Fixtures whose logical restore this version refuses by design
	// (logical-since): the restore and the copy refuse them, naming their
	// tables, before anything changes; then they run again without them.
	var refused, kept []*fidelitytest.Fixture
	var excluded []string
	for _, f := range loaded {
		if ok, why := f.LogicalSince.Allows(version + ".0"); !ok {
			t.Logf("fixture %s: a logical restore into MariaDB %s refuses it: %s", f.Name, version, why)
			refused, excluded = append(refused, f), append(excluded, "--exclude-database", f.Database)
			continue
		}
		kept = append(kept, f)
	}
	expectRefusal := func(what string, r result, dst *sandbox.Server) {
		t.Helper()
		for _, f := range refused {
			if r.code == ExitOK || !strings.Contains(fmt.Sprint(r.err), f.Database+".") {
				t.Errorf("%s with fixture %s into MariaDB %s: exit %d, %v; want a refusal naming its tables", what, f.Name, version, r.code, r.err)
			}
		}
		if dbs := fixtureDatabases(t, dst); len(dbs) != 0 {
			t.Errorf("the refused %s changed the target: it has %v", what, dbs)
		}
	}
	t.Run("backup and restore", func(t *testing.T) {
		repoDir := newRepoDir(t)
		run(t, append([]string{"backup", "--logical", "--repo", repoDir, "--parallel", "2", "--database", databasesOf(loaded)}, sandboxConn(src)...)...).mustSucceed(t)
		dst := target()
		restore := append([]string{"restore", "--repo", repoDir, "--parallel", "2"}, sandboxConn(dst)...)
		if len(refused) > 0 {
			expectRefusal("restore", run(t, restore...), dst)
			restore = append(restore, excluded...)
		}
		run(t, restore...).mustSucceed(t)
		compareCorpus(t, dst, kept, want)
	})
	t.Run("copy", func(t *testing.T) {
		dst := target()
		cp := append([]string{"copy", "--parallel", "2", "--database", databasesOf(loaded)}, copyConn(src, dst)...)
		if len(refused) > 0 {
			expectRefusal("copy", run(t, cp...), dst)
			cp = append(cp, excluded...)
		}
		run(t, cp...).mustSucceed(t)
		compareCorpus(t, dst, kept, want)
	})
}

// fixtureDatabases lists the corpus's databases (fx_*) on s.
func fixtureDatabases(t *testing.T, s *sandbox.Server) []string {
	t.Helper()
	rows, err := s.DB().Query("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'fx\\_%' ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// versionSource starts a server of version from basedir whose global
// sql_mode is mode's, loads every fixture of the corpus that takes the
// logical path in that mode and that the version can hold (logging the
// ones it cannot, and why), and returns it with their fingerprints.
func versionSource(t *testing.T, fixtures []*fidelitytest.Fixture, version, basedir, mode string) (*sandbox.Server, []*fidelitytest.Fixture, map[string]map[string]string) {
	t.Helper()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{Basedir: basedir, Args: corpusServerArgs(mode)})
	requireVersion(t, src, version)
	full, err := src.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var loaded []*fidelitytest.Fixture
	for _, f := range fixtures {
		if f.Refuse != "" || !f.Takes(fidelitytest.Logical, mode) {
			continue
		}
		if ok, why := f.RunsOn(full); !ok {
			t.Logf("fixture %s skipped on MariaDB %s: %s", f.Name, full, why)
			continue
		}
		if err := f.Load(ctx, src.Socket, "root"); err != nil {
			t.Errorf("MariaDB %s: %v", full, err)
			continue
		}
		loaded = append(loaded, f)
	}
	if t.Failed() {
		t.FailNow()
	}
	if len(loaded) == 0 {
		t.Fatal("no fixture of the corpus loaded: the test would prove nothing")
	}
	return src, loaded, corpusFingerprints(t, src, loaded)
}
