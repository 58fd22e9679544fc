package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/usecasetest"
)

// TestVersionsTransfer is the transfer part of the version matrix (issue
// 30 item 3): on MariaDB 10.5 and 11.8, send streams a physical backup of
// a server holding InnoDB, Aria and MyISAM tables over real TCP to
// receive --datadir --start --replicate, which prepares it with the
// version's mariabackup in place, starts the version's server on it and
// makes it a replica of the source that follows its next writes; and a
// backup in a repository is restored into place (restore --datadir
// --force over an occupied datadir, --start). Each started server is the
// version's, says it runs on the datadir, and has the source's CHECKSUM
// TABLE. The receiver and the restore find the version's tools on
// --mariadb-path, 11.8's basedir first.
func TestVersionsTransfer(t *testing.T) {
	b105, b118 := sandboxtest.Basedir(t, "10.5"), sandboxtest.Basedir(t, "11.8")
	t.Parallel()
	useMariadbPath(t, b118, b105)
	for _, c := range []struct{ version, basedir string }{{"10.5", b105}, {"11.8", b118}} {
		t.Run(c.version, func(t *testing.T) {
			t.Parallel()
			transferMatrix(t, c.version, c.basedir)
		})
	}
}

func transferMatrix(t *testing.T, version, basedir string) {
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{Basedir: basedir})
	usecasetest.RequireVersion(t, src, version)
	for _, q := range []string{
		"CREATE DATABASE app",
		"CREATE TABLE app.orders (id INT PRIMARY KEY, customer VARCHAR(40), total DECIMAL(10,2), note TEXT) ENGINE=InnoDB",
		"INSERT INTO app.orders SELECT seq, CONCAT('customer ', seq % 97), seq * 1.25, REPEAT(SHA2(seq, 256), 4) FROM app.seq_1_to_20000",
		"CREATE TABLE app.log (id INT PRIMARY KEY, line VARCHAR(200)) ENGINE=Aria",
		"INSERT INTO app.log SELECT seq, SHA2(seq, 512) FROM app.seq_1_to_5000",
		"CREATE TABLE app.old (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=MyISAM",
		"INSERT INTO app.old SELECT seq, seq FROM app.seq_1_to_1000",
		"CREATE USER repl@'%' IDENTIFIED BY 'repl-Pa55 word'",
		"GRANT REPLICATION SLAVE ON *.* TO repl@'%'",
	} {
		if _, err := src.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	want := usecasetest.Checksums(t, src)
	p, _ := mariadbPaths.Load(topTest(t))

	// send to receive --datadir --start over TCP.
	datadir, start, sock := placedServer(t, basedir)
	addr, tok := usecasetest.FreeAddr(t), usecasetest.TokenFile(t)
	primaryCnf := filepath.Join(t.TempDir(), "primary.cnf")
	if err := os.WriteFile(primaryCnf, []byte("[backstream-primary]\npassword=\"repl-Pa55 word\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	recv := startReceive(t, "receive", "--listen", addr, "--token-file", tok, "--datadir", datadir, "--start="+start,
		"--socket", sock, "--user", "root", "--no-defaults", "--mariadb-path", p.(string),
		"--replicate", "--catch-up", "--primary-defaults-file", primaryCnf, "--primary-host", "127.0.0.1", "--primary-port", strconv.Itoa(src.Port), "--primary-user", "repl")
	run(t, append([]string{"send", "--to", addr, "--token-file", tok, "--parallel", "2"}, sandboxConn(src)...)...).mustSucceed(t)
	r := waitResult(t, "receive --datadir --start", recv)
	if r.err != nil {
		t.Fatalf("receive --datadir --start of a %s backup: %v\n%s\n%s", version, r.err, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "runs on "+datadir) || !strings.Contains(r.stdout, "replicating from") {
		t.Errorf("receive --datadir --start --replicate printed %q, want the server named as running on %s and replicating", r.stdout, datadir)
	}
	compareStarted(t, sock, version, want)
	// The replica follows what the source does next.
	if _, err := src.DB().ExecContext(ctx, "UPDATE app.orders SET total = total + 1 WHERE id % 5 = 0"); err != nil {
		t.Fatal(err)
	}
	want = usecasetest.Checksums(t, src)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		got := startedChecksums(t, sock, version)
		if fmt.Sprint(got) == fmt.Sprint(want) {
			break
		}
		if time.Now().After(deadline) {
			usecasetest.CompareChecksums(t, got, want)
			t.Fatal("the replica did not catch up with the source within a minute")
		}
	}

	// A backup in a repository, restored into place over an occupied
	// datadir (moved aside) and started.
	repoDir := newRepoDir(t)
	run(t, append([]string{"backup", "--repo", repoDir, "--parallel", "2"}, sandboxConn(src)...)...).mustSucceed(t)
	datadir, start, sock = placedServer(t, basedir)
	if err := os.MkdirAll(datadir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(datadir, "keep"), []byte("the old datadir"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t, "restore", "--repo", repoDir, "--datadir", datadir, "--force", "--start="+start, "--socket", sock, "--user", "root", "--no-defaults").mustSucceed(t)
	aside, _ := filepath.Glob(datadir + ".replaced-*")
	if len(aside) != 1 || !strings.Contains(r.stdout, "moved aside to "+aside[0]) || !strings.Contains(r.stdout, "runs on "+datadir) {
		t.Errorf("restore --datadir --force --start printed %q (moved aside: %v); want the old datadir moved aside and the server running on %s", r.stdout, aside, datadir)
	}
	compareStarted(t, sock, version, want)
}

// placedServer names a datadir to restore into and the --start command
// that runs the server of basedir on it (killed when the test ends), with
// its socket.
func placedServer(t *testing.T, basedir string) (datadir, start, sock string) {
	t.Helper()
	dir := t.TempDir()
	datadir, sock = filepath.Join(dir, "mysql"), testkit.SocketPath(t, "s.sock")
	pidFile := filepath.Join(dir, "mariadbd.pid")
	start = fmt.Sprintf("%s --no-defaults --basedir=%s --datadir=%s --socket=%s --skip-networking --user=root --server-id=2 --pid-file=%s --log-error=%s --tmpdir=%s --innodb-buffer-pool-size=64M >/dev/null 2>&1 &",
		filepath.Join(basedir, "sbin", "mariadbd"), basedir, datadir, sock, pidFile, filepath.Join(dir, "error.log"), os.TempDir())
	t.Cleanup(func() { sandboxtest.KillByPidFile(t, pidFile) })
	return datadir, start, sock
}

// compareStarted fails unless the server on sock is MariaDB version and
// every table's CHECKSUM TABLE is want's.
func compareStarted(t *testing.T, sock, version string, want map[string]string) {
	t.Helper()
	usecasetest.CompareChecksums(t, startedChecksums(t, sock, version), want)
}

// startedChecksums is CHECKSUM TABLE of every table of the server on
// sock, which must be MariaDB version.
func startedChecksums(t *testing.T, sock, version string) map[string]string {
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
