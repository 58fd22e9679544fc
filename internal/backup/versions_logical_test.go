package backup_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/fidelitytest"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/servercopy"
	"github.com/backstream/backstream/internal/usecasetest"
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
	ctx := context.Background()
	src, loaded, want := versionSource(t, fixtures, version, basedir, mode)
	target := func(t *testing.T) *sandbox.Server {
		dst := sandboxtest.Start(t, sandbox.Options{Basedir: basedir, Args: append(usecasetest.CorpusServerArgs(mode), fidelitytest.TargetArgs...)})
		usecasetest.RequireVersion(t, dst, version)
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
			refused, excluded = append(refused, f), append(excluded, f.Database)
			continue
		}
		kept = append(kept, f)
	}
	expectRefusal := func(t *testing.T, what string, err error, dst *sandbox.Server) {
		t.Helper()
		for _, f := range refused {
			if err == nil || !strings.Contains(err.Error(), f.Database+".") {
				t.Errorf("%s with fixture %s into MariaDB %s: %v; want a refusal naming its tables", what, f.Name, version, err)
			}
		}
		if dbs := fixtureDatabases(t, dst); len(dbs) != 0 {
			t.Errorf("the refused %s changed the target: it has %v", what, dbs)
		}
	}
	t.Run("backup and restore", func(t *testing.T) {
		r := usecasetest.NewLocalRepo(t)
		usecasetest.Backup(t, usecasetest.CorpusDump(t, r, src, loaded))
		dst := target(t)
		req := corpusLoad(r, dst)
		if len(refused) > 0 {
			_, err := restorecase.Run(ctx, req)
			expectRefusal(t, "restore", err, dst)
			req.Load.ExcludeDatabases = excluded
		}
		usecasetest.Restore(t, req)
		usecasetest.CompareCorpus(t, dst, kept, want)
	})
	t.Run("copy", func(t *testing.T) {
		dst := target(t)
		choices := restorecase.Choices{Databases: databasesOf(loaded)}
		if len(refused) > 0 {
			_, err := servercopy.Run(ctx, corpusCopy(t, src, dst, choices))
			expectRefusal(t, "copy", err, dst)
			choices.ExcludeDatabases = excluded
		}
		usecasetest.Copy(t, corpusCopy(t, src, dst, choices))
		usecasetest.CompareCorpus(t, dst, kept, want)
	})
}

// databasesOf is the fixtures' databases as --database gives them (the
// list usecasetest.DatabasesOf writes, split at its commas).
func databasesOf(fixtures []*fidelitytest.Fixture) []string {
	return strings.Split(usecasetest.DatabasesOf(fixtures), ",")
}

// corpusLoad is the request `restore --parallel 2` makes of the latest
// backup of r, loaded into dst.
func corpusLoad(r usecasetest.Repo, dst *sandbox.Server) restorecase.Request {
	req := usecasetest.LoadOf(r, "", dst)
	req.Restore.Options.Workers = 2
	return req
}

// corpusCopy is the copy `copy --parallel 2` with the choices c (its
// --database, --exclude-database) makes from src into dst, with copy's
// default chunk size.
func corpusCopy(t *testing.T, src, dst *sandbox.Server, c restorecase.Choices) servercopy.Job {
	t.Helper()
	job := usecasetest.CopyOf(t, src, dst, c)
	job.Parallel = 2
	return job
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
	src := sandboxtest.Start(t, sandbox.Options{Basedir: basedir, Args: usecasetest.CorpusServerArgs(mode)})
	usecasetest.RequireVersion(t, src, version)
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
	return src, loaded, usecasetest.CorpusFingerprints(t, src, loaded)
}

// TestVersionsLogicalUpgrade is the logical upgrade path (issue 30 item
// 5): the fidelity corpus (every fixture the source's version can hold)
// from MariaDB 10.5 and from 10.11 into 11.8, by a logical backup and
// restore and by copy, each fixture's fingerprint on 11.8 equal to the
// source's but for what 11.8 itself prints differently (serverRewrites).
// The reverse, from 11.8 into 10.5 and 10.11, is refused before anything
// changes on the target, naming both versions.
func TestVersionsLogicalUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fixtures, err := fidelitytest.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	b105, b118 := sandboxtest.Basedir(t, "10.5"), sandboxtest.Basedir(t, "11.8")
	const mode = "permissive"
	target118 := func(t *testing.T) *sandbox.Server {
		dst := sandboxtest.Start(t, sandbox.Options{Basedir: b118, Args: append(usecasetest.CorpusServerArgs(mode), fidelitytest.TargetArgs...)})
		usecasetest.RequireVersion(t, dst, "11.8")
		return dst
	}
	for _, c := range []struct{ version, basedir string }{{"10.5", b105}, {"10.11", ""}} {
		t.Run(c.version+" to 11.8", func(t *testing.T) {
			t.Parallel()
			src, loaded, want := versionSource(t, fixtures, c.version, c.basedir, mode)
			t.Run("backup and restore", func(t *testing.T) {
				r := usecasetest.NewLocalRepo(t)
				usecasetest.Backup(t, usecasetest.CorpusDump(t, r, src, loaded))
				dst := target118(t)
				usecasetest.Restore(t, corpusLoad(r, dst))
				compareUpgraded(t, dst, loaded, want)
			})
			t.Run("copy", func(t *testing.T) {
				dst := target118(t)
				usecasetest.Copy(t, corpusCopy(t, src, dst, restorecase.Choices{Databases: databasesOf(loaded)}))
				compareUpgraded(t, dst, loaded, want)
			})
		})
	}
	t.Run("11.8 to older", func(t *testing.T) {
		t.Parallel()
		src, loaded, _ := versionSource(t, fixtures, "11.8", b118, mode)
		r := usecasetest.NewLocalRepo(t)
		usecasetest.Backup(t, usecasetest.CorpusDump(t, r, src, loaded))
		for _, c := range []struct{ version, basedir string }{{"10.5", b105}, {"10.11", ""}} {
			dst := sandboxtest.Start(t, sandbox.Options{Basedir: c.basedir, Args: append(usecasetest.CorpusServerArgs(mode), fidelitytest.TargetArgs...)})
			usecasetest.RequireVersion(t, dst, c.version)
			before := usecasetest.Checksums(t, dst)
			_, err := restorecase.Run(ctx, corpusLoad(r, dst))
			if msg := fmt.Sprint(err); err == nil || !strings.Contains(msg, "the target runs MariaDB "+c.version+" (") ||
				!strings.Contains(msg, "older than the backup's source, MariaDB 11.8 (") {
				t.Errorf("restore of an 11.8 logical backup into %s: %v; want a refusal naming both versions", c.version, err)
			}
			_, err = servercopy.Run(ctx, corpusCopy(t, src, dst, restorecase.Choices{Databases: databasesOf(loaded)}))
			if msg := fmt.Sprint(err); err == nil || !strings.Contains(msg, "the target runs MariaDB "+c.version+" (") ||
				!strings.Contains(msg, "older than the source's 11.8 (") {
				t.Errorf("copy from 11.8 into %s: %v; want a refusal naming both versions", c.version, err)
			}
			if dbs := fixtureDatabases(t, dst); len(dbs) != 0 {
				t.Errorf("the refused restore or copy into %s created %v", c.version, dbs)
			}
			usecasetest.CompareChecksums(t, usecasetest.Checksums(t, dst), before)
			var journal int
			if err := dst.DB().QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'backstream_load'").Scan(&journal); err != nil || journal != 0 {
				t.Errorf("the refused restore or copy into %s left its journal database: %v", c.version, err)
			}
			dst.Close()
		}
	})
}

// compareUpgraded compares the fixtures' fingerprints on an 11.8 target
// with the older source's, after serverRewrites.
func compareUpgraded(t *testing.T, dst *sandbox.Server, fixtures []*fidelitytest.Fixture, want map[string]map[string]string) {
	t.Helper()
	for _, f := range fixtures {
		got, err := fidelitytest.Fingerprint(context.Background(), dst.DB(), f.Database)
		if err != nil {
			t.Errorf("fixture %s (%s): %v", f.Name, f.Source, err)
			continue
		}
		w := map[string]string{}
		for k, v := range want[f.Name] {
			w[k] = v
		}
		for _, r := range serverRewrites {
			r.apply(w, got)
		}
		if diffs := fidelitytest.Compare(got, w); len(diffs) > 0 {
			t.Errorf("fixture %s (%s, from %s): %d differences:\n%s", f.Name, f.Title, f.Source, len(diffs), strings.Join(diffs, "\n"))
		}
	}
}

// serverRewrite is one way MariaDB 11.8 prints the same object or
// computes the same check differently from 10.5 or 10.11: apply changes
// the source's fingerprint (want) into what 11.8 prints for it, or drops
// a key from both.
type serverRewrite struct {
	what  string
	apply func(want, got map[string]string)
}

// serverRewrites are every difference between an older source's and
// 11.8's fingerprint of the same database that TestVersionsLogicalUpgrade
// accepts; nothing else may differ.
var serverRewrites = []serverRewrite{
	{
		// /*!100301 COMPRESSED*/ is printed /*M!100301 COMPRESSED*/ (a
		// MariaDB-only executable comment) by 11.x's SHOW CREATE TABLE.
		"MariaDB-only executable comments marked M!",
		definitions(regexp.MustCompile(`/\*!(1\d{5} COMPRESSED\*/)`), "/*M!$1"),
	},
	{
		// `PAGE_COMPRESSED`=1 and engine-defined attributes such as
		// `another`=42 are printed quoted by 11.8: `PAGE_COMPRESSED`='1'.
		"engine-defined table options printed quoted",
		definitions(regexp.MustCompile("(`[A-Za-z_]+`)=([0-9]+)([ \n*]|$)"), "$1='$2'$3"),
	},
	{
		// 10.5 prints a hidden column's INVISIBLE before its DEFAULT, 11.8
		// after it: `h` int(11) INVISIBLE DEFAULT NULL, is `h` int(11)
		// DEFAULT NULL INVISIBLE.
		"INVISIBLE printed after DEFAULT",
		definitions(regexp.MustCompile("(?m)^(  `[^`]+` [^\n]*?) INVISIBLE( DEFAULT [^\n]*?)(,?)$"), "$1$2 INVISIBLE$3"),
	},
	{
		// CHECKSUM TABLE of an InnoDB table with VIRTUAL columns is
		// computed differently by 11.8: fixture generated_columns loaded
		// by the same statements gives gc 2851358674 on 10.5 and 10.11,
		// 1692177682 on 11.8. Its rows, every column rendered by type,
		// still compare equal; the checksum alone is not compared.
		"CHECKSUM TABLE of InnoDB tables with VIRTUAL columns",
		func(want, got map[string]string) {
			for k, v := range want {
				name, ok := strings.CutPrefix(k, "table ")
				if ok && strings.Contains(v, " VIRTUAL") && strings.Contains(v, "ENGINE=InnoDB") {
					delete(want, "checksum "+name)
					delete(got, "checksum "+name)
				}
			}
		},
	},
}

// definitions rewrites the source's table definitions with re.
func definitions(re *regexp.Regexp, repl string) func(want, got map[string]string) {
	return func(want, _ map[string]string) {
		for k, v := range want {
			if strings.HasPrefix(k, "table ") {
				want[k] = re.ReplaceAllString(v, repl)
			}
		}
	}
}
