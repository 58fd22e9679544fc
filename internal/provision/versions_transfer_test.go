package provision_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/toolpath"
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
// TABLE. The receiver and the restore find the version's tools on the
// MariaDB path (--mariadb-path), 11.8's basedir first.
func TestVersionsTransfer(t *testing.T) {
	b105, b118 := sandboxtest.Basedir(t, "10.5"), sandboxtest.Basedir(t, "11.8")
	t.Parallel()
	path := toolpath.Path{b118, b105}
	for _, c := range []struct{ version, basedir string }{{"10.5", b105}, {"11.8", b118}} {
		t.Run(c.version, func(t *testing.T) {
			t.Parallel()
			transferMatrix(t, c.version, c.basedir, path)
		})
	}
}

// transferMatrix is TestVersionsTransfer on MariaDB version, whose server
// is basedir's, every command given --mariadb-path path.
func transferMatrix(t *testing.T, version, basedir string, path toolpath.Path) {
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{Basedir: basedir})
	usecasetest.RequireVersion(t, src, version)
	usecasetest.ExecAll(t, src.DB(),
		"CREATE DATABASE app",
		"CREATE TABLE app.orders (id INT PRIMARY KEY, customer VARCHAR(40), total DECIMAL(10,2), note TEXT) ENGINE=InnoDB",
		"INSERT INTO app.orders SELECT seq, CONCAT('customer ', seq % 97), seq * 1.25, REPEAT(SHA2(seq, 256), 4) FROM app.seq_1_to_20000",
		"CREATE TABLE app.log (id INT PRIMARY KEY, line VARCHAR(200)) ENGINE=Aria",
		"INSERT INTO app.log SELECT seq, SHA2(seq, 512) FROM app.seq_1_to_5000",
		"CREATE TABLE app.old (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=MyISAM",
		"INSERT INTO app.old SELECT seq, seq FROM app.seq_1_to_1000",
		"CREATE USER repl@'%' IDENTIFIED BY 'repl-Pa55 word'",
		"GRANT REPLICATION SLAVE ON *.* TO repl@'%'")
	want := usecasetest.Checksums(t, src)

	// send to receive --datadir --start --replicate --catch-up over TCP.
	datadir, start, sock := usecasetest.PlacedServer(t, basedir)
	tok := usecasetest.TokenFile(t)
	primaryCnf := filepath.Join(t.TempDir(), "primary.cnf")
	if err := os.WriteFile(primaryCnf, []byte("[backstream-primary]\npassword=\"repl-Pa55 word\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	recvReq := replicating(intoPlace(usecasetest.ReceiveOf(tok), datadir, start, sock), primaryNamed(primaryCnf, src.Port))
	recvReq.Restore.Options.MariadbPath = path
	recv := usecasetest.StartReceive(t, recvReq)
	send := usecasetest.SendOf(t, usecasetest.Conn(src), tok, recv.Addr)
	send.Job.Parallel, send.Job.MariadbPath = 2, path
	if err := send.Check(); err != nil {
		t.Fatal(err)
	}
	usecasetest.Send(t, send)
	got := recv.Wait(t, "receive --datadir --start")
	if got.Err != nil {
		t.Fatalf("receive --datadir --start of a %s backup: %v (did %+v)", version, got.Err, got.Result)
	}
	// What receive prints: the server runs on the datadir, and replicates.
	if res := got.Result; res == nil || res.Backup == "" || res.Step != "" || res.Datadir != datadir || res.Started == nil || res.Replication == nil {
		t.Errorf("receive --datadir --start --replicate: %+v; want the server running on %s and replicating", res, datadir)
	}
	usecasetest.CompareStarted(t, sock, version, want)
	// The replica follows what the source does next.
	if _, err := src.DB().ExecContext(ctx, "UPDATE app.orders SET total = total + 1 WHERE id % 5 = 0"); err != nil {
		t.Fatal(err)
	}
	want = usecasetest.Checksums(t, src)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		got := usecasetest.StartedChecksums(t, sock, version)
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
	repo := usecasetest.NewLocalRepo(t)
	b := usecasetest.BackupOf(t, repo, src)
	b.Physical.MariadbPath = path
	usecasetest.Backup(t, b)
	datadir, start, sock = usecasetest.PlacedServer(t, basedir)
	if err := os.MkdirAll(datadir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(datadir, "keep"), []byte("the old datadir"), 0o600); err != nil {
		t.Fatal(err)
	}
	req := usecasetest.WithMariadbPath(usecasetest.Started(usecasetest.PlaceOf(repo, datadir), start, sock), path)
	req.Force = true
	in := usecasetest.Restore(t, req).InPlace
	aside, _ := filepath.Glob(datadir + ".replaced-*")
	// What restore prints: the old datadir moved aside, the server running
	// on the datadir.
	if in == nil || len(aside) != 1 || in.Replaced != aside[0] || !in.Swapped || in.Target != datadir || in.Started == nil {
		t.Errorf("restore --datadir --force --start: %+v (moved aside: %v); want the old datadir moved aside and the server running on %s", in, aside, datadir)
	}
	usecasetest.CompareStarted(t, sock, version, want)
}
