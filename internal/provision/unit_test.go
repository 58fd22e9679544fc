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

// ReceiveRequest.Check refuses, before anything listens, what receive's
// options make contradictory, with the words troubleshooting.md quotes,
// as a refusal (exit 2).
func TestReceiveRequestCheck(t *testing.T) {
	base := func() ReceiveRequest {
		return ReceiveRequest{Listen: ":4444", Restore: restore.Request{TargetDir: "/restore"}}
	}
	for _, tc := range []struct {
		name string
		edit func(*ReceiveRequest)
		want string
	}{
		{"no listen", func(r *ReceiveRequest) { r.Listen = "" }, "--listen ADDR is required, e.g. --listen :4444"},
		{"target and repo", func(r *ReceiveRequest) { r.RepoGiven = true }, "give either --target-dir or --repo, not both"},
		{"nowhere", func(r *ReceiveRequest) { r.Restore.TargetDir = "" }, "give --target-dir DIR (restore), --datadir DIR (restore into place) or --repo DIR (store)"},
		{"keep a target", func(r *ReceiveRequest) { r.Keep = true }, "--keep-listening needs --repo: a target directory takes one backup"},
		{"half of tls", func(r *ReceiveRequest) { r.CertFile = "c.pem" }, "--tls-cert and --tls-key go together"},
		{"force without datadir", func(r *ReceiveRequest) { r.Given.Place = "force" }, "--force goes with --datadir"},
		{"conn without start", func(r *ReceiveRequest) { r.Given.Conn = "socket" }, "--socket reaches the started server: it goes with --datadir and --start"},
		{"primary without replicate", func(r *ReceiveRequest) { r.Given.Replicate = "primary-host" }, "--primary-host goes with --replicate"},
		{"replicate without start", func(r *ReceiveRequest) { r.Restore.TargetDir, r.Datadir, r.Replicate = "", "/var/lib/mysql", true },
			"--replicate points the server --start started at its primary: give --datadir and --start"},
		{"a repository from the option files", func(r *ReceiveRequest) { r.Restore.TargetDir, r.Repos.Location.Repo = "", "/repo" }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := base()
			tc.edit(&req)
			err := req.Check()
			var refusal interface{ Refused() bool }
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Check: %v", err)
			case tc.want == "":
			case err == nil || err.Error() != tc.want:
				t.Fatalf("Check: %v; want %q", err, tc.want)
			case !errors.As(err, &refusal) || !refusal.Refused():
				t.Fatalf("Check: %v (%T) is not a refusal", err, err)
			}
		})
	}
}
