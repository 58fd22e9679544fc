package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/serverup"
)

// restore --datadir's flags become the request of a restore into place
// (--start without --datadir a usage error), and what it did prints as
// text or, with --json, as one object, also when the start failed. The
// restores into place themselves are restorecase's tests
// (TestRestoreIntoPlace, ...), which assert the typed result printed here.
func TestRestoreIntoPlaceFlagsAndOutput(t *testing.T) {
	t.Parallel()
	if r := run(t, "restore", "--repo", filepath.Join(t.TempDir(), "repo"), "--target-dir", t.TempDir(), "--start"); r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), "--start goes with --datadir") {
		t.Errorf("--start without --datadir: exit %d, %v", r.code, r.err)
	}

	// flags parses restore's flags args.
	flags := func(args ...string) (*restoreFlags, *pflag.FlagSet) {
		t.Helper()
		var o restoreFlags
		f := pflag.NewFlagSet("restore", pflag.ContinueOnError)
		o.register(f)
		if err := f.Parse(args); err != nil {
			t.Fatal(err)
		}
		return &o, f
	}
	o, f := flags("--datadir", "/var/lib/mysql", "--force", "--start=systemctl start mariadb", "--start-timeout", "90s", "--check-timeout", "30s",
		"--socket", "/run/mysqld/mysqld.sock", "--user", "root", "--no-defaults")
	req := o.request(f, &globals{stdout: io.Discard, stderr: io.Discard}, "latest", false)
	if req.Datadir != "/var/lib/mysql" || !req.Force || req.Start != "systemctl start mariadb" || req.StartTimeout != 90*time.Second || req.CheckTimeout != 30*time.Second ||
		req.Given.Place != "datadir" || req.Given.Load != "socket" || !req.Given.LoadIsConn || req.Given.PlaceMisuse != nil || req.Restore.Options.NoSync || req.Restore.TargetDir != "" {
		t.Errorf("restore --datadir --force --start ...: request %+v", req)
	}
	if conn, err := req.Deferred.Conn(); err != nil || conn.Socket != "/run/mysqld/mysqld.sock" || conn.User != "root" {
		t.Errorf("the connection to the started server: %+v, %v", conn, err)
	}

	m := &archive.Manifest{ID: "20261129T161854Z-7f3a"}
	datadir, replaced := "/var/lib/mysql", "/var/lib/mysql.replaced-20261129T162000Z"
	option := "innodb_log_group_home_dir = /var/lib/redo (/etc/my.cnf:2)"
	in := &restorecase.InPlaceResult{
		DatadirResult: restorecase.DatadirResult{Backup: m, Chain: []string{m.ID}, Target: datadir, Prepared: true},
		Placed: restorecase.Placed{Replaced: replaced, Outside: []restore.Aside{
			{Option: option, Dir: "/var/lib/redo", Files: []string{"ib_logfile0"}, To: "/var/lib/redo/backstream.replaced-20261129T162000Z"},
			{Option: option, Dir: "/var/lib/redo", Files: []string{"ib_logfile0"}},
		}, Started: &serverup.Report{Version: "11.4.5-MariaDB", Hostname: "db1", SystemTables: 31,
			Counted: []serverup.TableCount{{Table: "sample.t1", Rows: 1000, Counted: true, Bytes: 1 << 20}}}},
		Swapped: true,
	}
	// printed is what restore prints of in and err, with the flags args.
	printed := func(in *restorecase.InPlaceResult, err error, args ...string) string {
		t.Helper()
		o, _ := flags(args...)
		var out bytes.Buffer
		if got := o.print(&globals{stdout: &out, stderr: io.Discard}, &restorecase.Result{InPlace: in}, err); got != err {
			t.Errorf("restore %v printed and returned %v, want %v", args, got, err)
		}
		return out.String()
	}

	text := printed(in, nil)
	for _, w := range []string{"what " + datadir + " held was moved aside to " + replaced,
		option + ": ib_logfile0 of the replaced state moved aside to /var/lib/redo/backstream.replaced-20261129T162000Z",
		option + ": the restored ib_logfile0 placed in /var/lib/redo",
		"backup " + m.ID + " restored and prepared in place: " + datadir,
		"server 11.4.5-MariaDB (db1) runs on " + datadir + ": CHECK TABLE of 31 system tables OK", "biggest tables: sample.t1 1000 rows"} {
		if !strings.Contains(text, w) {
			t.Errorf("restore --datadir --force --start printed %q, want %q in it", text, w)
		}
	}

	type placed struct {
		Backup   string   `json:"backup"`
		Chain    []string `json:"chain"`
		Target   string   `json:"target"`
		Prepared bool     `json:"prepared"`
		Replaced string   `json:"replaced"`
		Outside  []struct {
			Option string   `json:"option"`
			Dir    string   `json:"dir"`
			Files  []string `json:"files"`
			To     string   `json:"to"`
		} `json:"outside"`
		Started *struct {
			Version       string `json:"version"`
			Hostname      string `json:"hostname"`
			SystemTables  int    `json:"system_tables"`
			BiggestTables []struct {
				Table   string `json:"table"`
				Rows    int64  `json:"rows"`
				Counted bool   `json:"counted"`
			} `json:"biggest_tables"`
		} `json:"started"`
		Error *string `json:"error"`
	}
	var done placed
	decodeOne(t, "restore --datadir --force --start --json", printed(in, nil, "--json"), &done)
	if done.Backup != m.ID || len(done.Chain) != 1 || done.Target != datadir || !done.Prepared || done.Replaced != replaced || done.Error != nil {
		t.Errorf("restore --json printed %+v; want backup %s prepared in %s, moved aside to %s, no error", done, m.ID, datadir, replaced)
	}
	if len(done.Outside) != 2 || done.Outside[0].Option != option || done.Outside[0].Dir != "/var/lib/redo" || done.Outside[0].Files[0] != "ib_logfile0" ||
		done.Outside[0].To != in.Outside[0].To || done.Outside[1].To != "" {
		t.Errorf("restore --json: outside %+v; want the old redo log moved aside, the restored one placed", done.Outside)
	}
	if st := done.Started; st == nil || st.Version != "11.4.5-MariaDB" || st.Hostname != "db1" || st.SystemTables != 31 || len(st.BiggestTables) != 1 ||
		st.BiggestTables[0].Table != "sample.t1" || !st.BiggestTables[0].Counted || st.BiggestTables[0].Rows != 1000 {
		t.Errorf("restore --json: started %+v; want the server's version, hostname, system tables checked, the biggest tables counted", st)
	}

	// The start failed: what was done, and the error.
	failedStart := *in
	failedStart.Started = nil
	startErr := errors.New("the server answering as root@/tmp/s.sock runs on /other, not on the restored datadir " + datadir)
	var failed placed
	decodeOne(t, "restore --datadir --force --start --json", printed(&failedStart, startErr, "--json"), &failed)
	if failed.Backup != m.ID || failed.Target != datadir || !failed.Prepared || failed.Replaced != replaced || failed.Started != nil || failed.Error == nil || *failed.Error != startErr.Error() {
		t.Errorf("restore --json with the start failed printed %+v; want backup %s in %s, moved aside, not started, the error", failed, m.ID, datadir)
	}
}
