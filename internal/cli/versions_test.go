package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// TestVersionsPhysical is the physical part of the version matrix: on
// each MariaDB version a full and an incremental backup of a server
// holding InnoDB and Aria tables (one changed between the two), the chain
// restored with --prepare, a server of the same version started on it
// with CHECKSUM TABLE equal to the source's, merge, and verify
// --restore-test on the chain and on the merged backup. No --mariabackup:
// the tools and the restore test's server come from
// --mariadb-path, which lists 11.8's basedir first, so that for
// the host's 10.11 (whose tools are in PATH) the first mariabackup found
// is the wrong one, as on a host upgraded to 11.8 restoring an older
// backup.
func TestVersionsPhysical(t *testing.T) {
	b105, b118 := sandboxtest.Basedir(t, "10.5"), sandboxtest.Basedir(t, "11.8")
	t.Parallel()
	useMariadbPath(t, b118, b105)
	for _, c := range []struct{ version, basedir string }{
		{"10.5", b105},
		{"11.8", b118},
		{"10.11", ""}, // the host's, in PATH
	} {
		t.Run(c.version, func(t *testing.T) {
			t.Parallel()
			physicalMatrix(t, c.version, c.basedir)
		})
	}
}

func physicalMatrix(t *testing.T, version, basedir string) {
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{Basedir: basedir})
	usecasetest.RequireVersion(t, src, version)
	db := src.DB()
	for _, q := range []string{
		"CREATE DATABASE app",
		"CREATE TABLE app.orders (id INT PRIMARY KEY, customer VARCHAR(40), total DECIMAL(10,2), note TEXT) ENGINE=InnoDB",
		"INSERT INTO app.orders SELECT seq, CONCAT('customer ', seq % 97), seq * 1.25, REPEAT(SHA2(seq, 256), 4) FROM app.seq_1_to_20000",
		"CREATE TABLE app.log (id INT PRIMARY KEY, line VARCHAR(200)) ENGINE=Aria",
		"INSERT INTO app.log SELECT seq, SHA2(seq, 512) FROM app.seq_1_to_5000",
		"CREATE TABLE app.settings (k VARCHAR(20) PRIMARY KEY, v INT) ENGINE=InnoDB",
		"INSERT INTO app.settings VALUES ('a', 1), ('b', 2)",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	repoDir := newRepoDir(t)
	backup := append([]string{"backup", "--repo", repoDir, "--parallel", "2"}, sandboxConn(src)...)
	run(t, backup...).mustSucceed(t)
	for _, q := range []string{
		"UPDATE app.orders SET total = total + 1 WHERE id % 7 = 0",
		"DELETE FROM app.orders WHERE id > 19000",
		"INSERT INTO app.log SELECT seq, CONCAT('after the full ', seq) FROM app.seq_5001_to_6000",
		"UPDATE app.settings SET v = v * 10",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if r := run(t, append(backup, "--incremental")...).mustSucceed(t); !strings.Contains(r.stdout, "depth 1") {
		t.Fatalf("the second backup is no incremental: %s", r.stdout)
	}
	want := usecasetest.Checksums(t, src)
	var incremental string
	for _, e := range backupListing(t, repoDir) {
		if !strings.HasPrefix(e.Server.Version, version+".") {
			t.Errorf("backup %s records server %q, want MariaDB %s", e.ID, e.Server.Version, version)
		}
		if e.Depth == 1 {
			incremental = e.ID
		}
	}

	restored := func(what, id string) {
		t.Helper()
		target := filepath.Join(t.TempDir(), "datadir")
		r := run(t, "restore", id, "--repo", repoDir, "--target-dir", target, "--prepare").mustSucceed(t)
		t.Logf("%s: %s", what, r.stdout)
		s := sandboxtest.Start(t, sandbox.Options{Basedir: basedir, Datadir: target})
		usecasetest.RequireVersion(t, s, version)
		usecasetest.CompareChecksums(t, usecasetest.Checksums(t, s), want)
		s.Close()
	}
	if basedir != "" {
		// With only PATH, the host's 10.11 tools: refused, naming the
		// backup's version, what was found and where to say more.
		refused := filepath.Join(t.TempDir(), "refused")
		r := run(t, "restore", "latest", "--repo", repoDir, "--target-dir", refused, "--prepare", "--mariadb-path", "")
		if msg := fmt.Sprint(r.err); r.code == ExitOK || !strings.Contains(msg, "the backup is MariaDB "+version+", but /usr/bin/mariabackup is built from MariaDB 10.11.") ||
			!strings.Contains(msg, "--mariadb-path DIR") {
			t.Errorf("restore --prepare of a %s backup with the host's mariabackup only: exit %d, %v", version, r.code, r.err)
		}
		if _, err := os.Stat(refused); !os.IsNotExist(err) {
			t.Errorf("the refused restore left its target behind: %v", err)
		}
	}
	restored("the chain", "latest")

	// Point in time: writes after the chain, replayed from the archived
	// binary logs by the backup's mariadb-binlog into a server of its
	// version (TestVersionsBinlog goes further: a time inside the archive).
	for _, q := range []string{
		"UPDATE app.settings SET v = v + 1",
		"INSERT INTO app.log SELECT seq, CONCAT('after the chain ', seq) FROM app.seq_6001_to_6100",
		"FLUSH BINARY LOGS",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	wantEnd := usecasetest.Checksums(t, src)
	run(t, append([]string{"binlog", "--repo", repoDir}, sandboxConn(src)...)...).mustSucceed(t)
	target := filepath.Join(t.TempDir(), "until-end")
	run(t, "restore", "--repo", repoDir, "--until", "end", "--target-dir", target).mustSucceed(t)
	s := sandboxtest.Start(t, sandbox.Options{Basedir: basedir, Datadir: target})
	usecasetest.RequireVersion(t, s, version)
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, s), wantEnd)
	s.Close()

	if r := run(t, "verify", "latest", "--repo", repoDir, "--restore-test"); r.code != ExitOK || !strings.Contains(r.stdout, "passed") {
		t.Errorf("verify --restore-test of the chain: exit %d, %v\n%s\n%s", r.code, r.err, r.stdout, r.stderr)
	}
	rep, res := restoreTestReport(t, repoDir, "latest")
	if !rep.Passed || !strings.HasPrefix(rep.Server, version+".") {
		t.Errorf("restore test of the chain: passed %v on server %q, want passed on MariaDB %s: %v\n%s", rep.Passed, rep.Server, version, rep.Problems, res.stderr)
	}

	run(t, "merge", "latest", "--repo", repoDir).mustSucceed(t)
	var merged inventory.Backup
	for _, e := range backupListing(t, repoDir) {
		if len(e.MergedFrom) > 0 {
			merged = e
		}
	}
	if merged.ID == "" || merged.Depth != 0 || merged.Kind != archive.KindPhysical {
		t.Fatalf("merge made %+v, want a full physical backup", merged)
	}
	restored("the merged backup", merged.ID)
	if rep, res := restoreTestReport(t, repoDir, merged.ID); !rep.Passed || !strings.HasPrefix(rep.Server, version+".") {
		t.Errorf("restore test of the merged backup: passed %v on server %q: %v\n%s", rep.Passed, rep.Server, rep.Problems, res.stderr)
	}

	// One table of the chain, exported by the backup's mariabackup and
	// server, imported into the running source under another name.
	run(t, append([]string{"restore", incremental, "--repo", repoDir, "--table", "app.orders", "--as", "app.orders_restored", "--apply-to", "--no-binlog"},
		sandboxConn(src)...)...).mustSucceed(t)
	if got := usecasetest.Checksums(t, src)["app.orders_restored"]; got != want["app.orders"] {
		t.Errorf("restore --table app.orders --as app.orders_restored: checksum %q, want %q", got, want["app.orders"])
	}
}

// --mariadb-path comes from the command line, else
// BACKSTREAM_MARIADB_PATH, else the option files' mariadb-path, as config
// shows. Not parallel: t.Setenv.
func TestMariadbPathOption(t *testing.T) {
	cnf := filepath.Join(t.TempDir(), "my.cnf")
	if err := os.WriteFile(cnf, []byte("[backstream]\nmariadb-path = /usr:/usr/local/bin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	line := func(args ...string) string {
		t.Helper()
		out := run(t, append([]string{"config", "restore", "--defaults-file", cnf}, args...)...).mustSucceed(t).stdout
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "--mariadb-path ") {
				return strings.Join(strings.Fields(l), " ")
			}
		}
		t.Fatalf("config restore shows no --mariadb-path:\n%s", out)
		return ""
	}
	t.Setenv("BACKSTREAM_MARIADB_PATH", "")
	if got, want := line(), "--mariadb-path /usr:/usr/local/bin "+cnf+":2 [backstream]"; got != want {
		t.Errorf("from the file: %q, want %q", got, want)
	}
	if got, want := line("--mariadb-path", "/usr/sbin"), "--mariadb-path /usr/sbin command line"; got != want {
		t.Errorf("on the command line: %q, want %q", got, want)
	}
	t.Setenv("BACKSTREAM_MARIADB_PATH", "/usr/local")
	if got, want := line(), "--mariadb-path /usr/local $BACKSTREAM_MARIADB_PATH"; got != want {
		t.Errorf("from the environment: %q, want %q", got, want)
	}
	// A directory that is not there is a mistake, said at once.
	r := run(t, "version", "--mariadb-path", "/usr:/no/such/mariadb")
	if r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), "/no/such/mariadb is not a directory") {
		t.Errorf("--mariadb-path with a missing directory: exit %d, %v", r.code, r.err)
	}
}
