package serverup

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/testkit"
)

// An old server still answering on the datadir and the connection is not
// taken for the one just started: its uptime gives it away, and nothing
// is checked. A server the command started is.
func TestStartRefusesAnOldServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	old := sandboxtest.Start(t, sandbox.Options{})
	// Up for longer than the slack the check allows.
	time.Sleep(3 * time.Second)
	_, err := Start(ctx, Options{How: "true", Conn: mariadb.Config{Socket: old.Socket, User: "root"}, Datadir: old.Datadir, Timeout: time.Minute, Biggest: 5})
	if err == nil || !strings.Contains(err.Error(), "it is not the server just started") {
		t.Fatalf("Start with an old server answering: %v, want it refused as not the one started", err)
	}

	if err := old.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sock, pidFile := testkit.SocketPath(t, "s.sock"), filepath.Join(dir, "mariadbd.pid")
	t.Cleanup(func() { sandboxtest.KillByPidFile(t, pidFile) })
	start := fmt.Sprintf("mariadbd --no-defaults --datadir=%s --socket=%s --skip-networking --user=root --pid-file=%s --log-error=%s --tmpdir=%s --innodb-buffer-pool-size=64M >/dev/null 2>&1 &",
		old.Datadir, sock, pidFile, filepath.Join(dir, "error.log"), dir)
	rep, err := Start(ctx, Options{How: start, Conn: mariadb.Config{Socket: sock, User: "root"}, Datadir: old.Datadir, Timeout: time.Minute, Biggest: 5})
	if err != nil || rep.SystemTables == 0 {
		t.Fatalf("Start with the server just started: %+v, %v", rep, err)
	}
}

// The row counts have a time of their own: a table whose count does not
// finish by its end (here: another session holds it locked) is reported
// as not counted, after the server stopped counting it, and is no error.
func TestCountBiggestIsBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := sandboxtest.Start(t, sandbox.Options{})
	db := s.DB()
	for _, q := range []string{
		"CREATE DATABASE d",
		"CREATE TABLE d.big (id INT PRIMARY KEY, pad CHAR(200)) ENGINE=InnoDB",
		"INSERT INTO d.big SELECT seq, 'x' FROM d.seq_1_to_20000",
		"CREATE TABLE d.small (id INT PRIMARY KEY) ENGINE=InnoDB",
		"INSERT INTO d.small VALUES (1), (2), (3)",
		"ANALYZE TABLE d.big, d.small",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	counts, err := countBiggest(ctx, db, 5)
	if err != nil || len(counts) != 2 || counts[0].Table != "d.big" || counts[0].Rows != 20000 || !counts[0].Counted || counts[1].Rows != 3 || !counts[1].Counted {
		t.Fatalf("countBiggest without a bound: %+v, %v", counts, err)
	}

	// Another session locks the biggest table.
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "LOCK TABLES d.big WRITE"); err != nil {
		t.Fatal(err)
	}
	bound, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	began := time.Now()
	counts, err = countBiggest(bound, db, 5)
	took := time.Since(began)
	if err != nil || len(counts) != 2 || counts[0].Counted || counts[1].Counted {
		t.Fatalf("countBiggest with the biggest table locked: %+v, %v; want both reported not counted", counts, err)
	}
	// A count left waiting on the lock would hold it for as long as the
	// lock is held (the test's end); the bound allows what a loaded
	// machine adds to the server's own stop and the connection's
	// cancellation (3.64 s once, in a full suite on 2 cores).
	if took > 5*time.Second {
		t.Errorf("countBiggest took %s, past its bound of 3s (and 2s of slack)", took)
	}
	// The server stopped the count: nothing waits on the lock any more.
	var waiting int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.processlist WHERE info LIKE 'SET STATEMENT max_statement_time%'").Scan(&waiting); err != nil || waiting != 0 {
		t.Errorf("%d counts still run on the server (%v)", waiting, err)
	}
}

// A server of a newer major.minor than the datadir's writer is told to run
// mariadb-upgrade; the same or an unknown version is not.
func TestUpgradeNote(t *testing.T) {
	for _, c := range []struct {
		datadir, server string
		note            bool
	}{
		{"10.11.19-MariaDB-0+deb12u1-log", "11.8.9-MariaDB-0+deb13u1 from Debian-log", true},
		{"10.5.23-MariaDB", "10.11.19-MariaDB", true},
		{"10.11.2-MariaDB", "10.11.19-MariaDB", false},
		{"11.8.9-MariaDB", "10.11.19-MariaDB", false},
		{"", "11.8.9-MariaDB", false},
	} {
		got := upgradeNote(c.datadir, c.server)
		if (got != "") != c.note || c.note && !strings.Contains(got, "mariadb-upgrade") {
			t.Errorf("upgradeNote(%q, %q) = %q, want a note: %v", c.datadir, c.server, got, c.note)
		}
	}
}

// A socket path longer than a Unix socket's can be is refused at once,
// before the server is started, not after the start timeout.
func TestStartRefusesTooLongSocket(t *testing.T) {
	sock := "/" + strings.Repeat("s", MaxSocketPath)
	ran := filepath.Join(t.TempDir(), "ran")
	_, err := Start(context.Background(), Options{How: "touch " + ran, Conn: mariadb.Config{Socket: sock, User: "root"}, Timeout: time.Hour})
	if err == nil || !strings.Contains(err.Error(), "longer than the 107 a Unix socket's path can have") {
		t.Fatalf("Start with a %d-byte socket path: %v", len(sock), err)
	}
	if _, serr := os.Stat(ran); serr == nil {
		t.Errorf("the start command ran although the socket path cannot work")
	}
}
