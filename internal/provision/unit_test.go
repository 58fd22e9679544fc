package provision

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/remote"
	"github.com/backstream/backstream/internal/replica"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/serverup"
)

// DefaultMessages say what receive printed before they were gathered, line
// for line; a result that failed at the swap says nothing was placed.
func TestDefaultMessagesText(t *testing.T) {
	res := &Result{Backup: "20261128T1000Z-abcd", Datadir: "/var/lib/mysql",
		Placed: Placed{Replaced: "/var/lib/mysql.replaced-x",
			Outside: []restore.Aside{{Option: "innodb_log_group_home_dir (/etc/my.cnf:3)", Dir: "/logs", Files: []string{"ib_logfile0"}}},
			Started: &serverup.Report{Version: "11.8.3-MariaDB", Hostname: "db2", SystemTables: 31,
				Counted: []serverup.TableCount{{Table: "shop.orders", Rows: 5000, Counted: true}, {Table: "shop.big", Counted: false}}}},
		Replication: &replica.Summary{Primary: "db1:3306", PrimaryUser: "repl", UsingGTID: true, GTID: "0-1-9", PositionFrom: "backup 20261128T1000Z-abcd",
			Notes: []string{"a", "b"}}}
	want := `what /var/lib/mysql held was moved aside to /var/lib/mysql.replaced-x
innodb_log_group_home_dir (/etc/my.cnf:3): the restored ib_logfile0 placed in /logs
backup 20261128T1000Z-abcd restored and prepared in place: /var/lib/mysql
server 11.8.3-MariaDB (db2) runs on /var/lib/mysql: CHECK TABLE of 31 system tables OK
biggest tables: shop.orders 5000 rows, shop.big not counted within --check-timeout 1m0s
replicating from db1:3306 as repl, starting at GTID 0-1-9 (from backup 20261128T1000Z-abcd); IO and SQL threads running
note: a; b
`
	if got := DefaultMessages.Text(res, time.Minute); got != want {
		t.Errorf("Text:\n%s\nwant:\n%s", got, want)
	}
	res.Replication.UsingGTID, res.Replication.BinlogFile, res.Replication.BinlogPosition, res.Replication.Notes = false, "bin.000003", 1234, nil
	if got := DefaultMessages.Text(res, time.Minute); !strings.HasSuffix(got, "starting at bin.000003:1234 (from backup 20261128T1000Z-abcd); IO and SQL threads running\n") {
		t.Errorf("Text by file and position:\n%s", got)
	}
	failed := &Result{Backup: "x", Datadir: "/d", Placed: Placed{Replaced: "/d.old"}, Step: remote.StepPlace}
	if got := DefaultMessages.Text(failed, 0); got != "what /d held was moved aside to /d.old\n" {
		t.Errorf("Text of a failed swap: %q", got)
	}
}

// Receive refuses what it cannot do before it listens: replication
// without a start, a start command that does not split, a datadir that
// holds something without Force, a socket no client can reach.
func TestReceiveRefusesBeforeListening(t *testing.T) {
	ctx := context.Background()
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "ibdata1"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	start := &Start{How: "true", Conn: mariadb.Config{Socket: "/nonexistent.sock"}}
	var bad *restore.StartCommandError
	var refused *restore.RefusedError
	for _, tc := range []struct {
		name string
		req  Request
		is   func(error) bool
	}{
		{"replicate without start", Request{Datadir: filepath.Join(t.TempDir(), "d"), Replicate: &Replicate{}},
			func(err error) bool { return err != nil && err.Error() == "replicating needs a started server" }},
		{"unsplittable start", Request{Datadir: filepath.Join(t.TempDir(), "d"), Start: &Start{How: "mariadbd '--x"}},
			func(err error) bool {
				return errors.As(err, &bad) && strings.Contains(err.Error(), "unterminated quote")
			}},
		{"datadir in use", Request{Datadir: full, Start: start, ServerDefaults: writeEmptyCnf(t)},
			func(err error) bool { return errors.As(err, &refused) }},
		{"socket path too long", Request{Datadir: filepath.Join(t.TempDir(), "d"), Start: &Start{How: "true", Conn: mariadb.Config{Socket: "/" + strings.Repeat("s", 120)}}},
			func(err error) bool {
				return err != nil && strings.Contains(err.Error(), "a Unix socket's path can have")
			}},
	} {
		res, err := Receive(ctx, tc.req)
		if res != nil || !tc.is(err) {
			t.Errorf("%s: %+v, %v", tc.name, res, err)
		}
	}
}

func writeEmptyCnf(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "server.cnf")
	if err := os.WriteFile(p, []byte("[mysqld]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
