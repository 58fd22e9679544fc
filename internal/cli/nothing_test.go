package cli

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// A logical backup of nothing is refused: a filter naming what the server
// does not have (or does not show the account), filters that together
// select nothing, and a table the account may not read each fail the
// backup, naming the filter or the table and the grant, and no backup is
// committed. A copy refuses the same way.
func TestLogicalBackupOfNothingIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 2}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE USER nogrant@localhost", "GRANT RELOAD, PROCESS, BINLOG MONITOR ON *.* TO nogrant@localhost",
		"CREATE USER noselect@localhost", "GRANT RELOAD, PROCESS, BINLOG MONITOR ON *.* TO noselect@localhost",
		"GRANT INSERT ON sample.* TO noselect@localhost",
		// Events are hidden from an account without EVENT: the dump
		// would leave them out and say complete.
		"CREATE EVENT sample.nightly ON SCHEDULE EVERY 1 DAY DO SELECT 1",
		"CREATE USER noevent@localhost", "GRANT RELOAD, PROCESS, BINLOG MONITOR ON *.* TO noevent@localhost",
		"GRANT SELECT, TRIGGER ON sample.* TO noevent@localhost", "GRANT SELECT ON mysql.proc TO noevent@localhost",
		"CREATE ROLE eventer", "GRANT EVENT ON sample.* TO eventer",
		"CREATE USER roleevent@localhost", "GRANT RELOAD, PROCESS, BINLOG MONITOR ON *.* TO roleevent@localhost",
		"GRANT SELECT, TRIGGER ON sample.* TO roleevent@localhost", "GRANT SELECT ON mysql.proc TO roleevent@localhost",
		"GRANT eventer TO roleevent@localhost", "SET DEFAULT ROLE eventer FOR roleevent@localhost",
	} {
		if _, err := src.DB().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	as := func(user string) []string {
		return []string{"--socket", src.Socket, "--user", user, "--no-defaults"}
	}
	for _, c := range []struct {
		name  string
		args  []string
		code  int
		wants []string
	}{
		{"misspelled database", append([]string{"--database", "sampel"}, sandboxConn(src)...), ExitUsage, []string{"--database sampel", "SELECT ON `sampel`.*"}},
		{"missing table", append([]string{"--table", "sample.nosuch"}, sandboxConn(src)...), ExitUsage, []string{"--table sample.nosuch"}},
		{"misspelled exclusion", append([]string{"--exclude-table", "sample.nosuch"}, sandboxConn(src)...), ExitUsage, []string{"--exclude-table sample.nosuch"}},
		{"everything excluded", append([]string{"--exclude-database", "sample", "--skip-users"}, sandboxConn(src)...), ExitUsage, []string{"select nothing"}},
		{"no grant", append([]string{"--database", "sample"}, as("nogrant")...), ExitUsage, []string{"--database sample", "SELECT ON `sample`.*"}},
		{"no select", append([]string{"--database", "sample"}, as("noselect")...), ExitFailure, []string{"table sample.", "GRANT SELECT ON `sample`.", "'noselect'@'localhost'"}},
		{"events hidden", append([]string{"--database", "sample"}, as("noevent")...), ExitFailure, []string{"database sample", "may not see its events", "GRANT EVENT ON `sample`.* TO 'noevent'@'localhost'", "--skip-events"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			repoDir := newRepoDir(t)
			r := run(t, append([]string{"backup", "--logical", "--repo", repoDir}, c.args...)...)
			if r.code != c.code || r.err == nil {
				t.Fatalf("exit %d, %v, stdout %q: want exit %d", r.code, r.err, r.stdout, c.code)
			}
			for _, w := range c.wants {
				if !strings.Contains(r.err.Error(), w) {
					t.Errorf("error %q does not say %q", r.err, w)
				}
			}
			if strings.Contains(r.stdout, "complete") {
				t.Errorf("stdout %q says complete", r.stdout)
			}
			if entries := backupListing(t, repoDir); len(entries) != 0 {
				t.Errorf("list shows %+v after a refused backup", entries)
			}
		})
	}
	// Events left out on purpose, and EVENT held through a role, are fine;
	// the role's backup holds the event.
	t.Run("events skipped or granted through a role", func(t *testing.T) {
		repoDir := newRepoDir(t)
		run(t, append([]string{"backup", "--logical", "--repo", repoDir, "--database", "sample", "--skip-events"}, as("noevent")...)...).mustSucceed(t)
		run(t, append([]string{"backup", "--logical", "--repo", repoDir, "--database", "sample"}, as("roleevent")...)...).mustSucceed(t)
		entries := backupListing(t, repoDir)
		if len(entries) != 2 {
			t.Fatalf("list shows %d backups, want 2", len(entries))
		}
		cat := readCatalog(t, repoDir, entries[1].ID)
		found := false
		for _, d := range cat.Schema.Databases {
			for _, e := range d.Events {
				found = found || e.Name == "nightly"
			}
		}
		if !found {
			t.Errorf("the backup of an account holding EVENT through a role lacks the event sample.nightly")
		}
	})
	// Triggers and routines the account may not see are refused the same
	// way, on the host's version and on 11.8 (where SHOW CREATE ROUTINE
	// shows routines too).
	for _, version := range []string{"", "11.8"} {
		t.Run("triggers and routines "+cmp.Or(version, "host"), func(t *testing.T) {
			opt := sandbox.Options{}
			if version != "" {
				opt.Basedir = sandboxtest.Basedir(t, version)
			}
			testHiddenTriggersAndRoutines(t, sandboxtest.Start(t, opt), version)
		})
	}
	// copy dumps through the same session: a misspelt filter fails it
	// before the target is touched.
	t.Run("copy", func(t *testing.T) {
		dst := sandboxtest.Start(t, sandbox.Options{})
		r := run(t, append([]string{"copy", "--database", "sampel"}, copyConn(src, dst)...)...)
		if r.code != ExitUsage || r.err == nil || !strings.Contains(r.err.Error(), "--database sampel") {
			t.Fatalf("exit %d, %v: want exit %d naming --database sampel", r.code, r.err, ExitUsage)
		}
		var n int
		if err := dst.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'sampel'").Scan(&n); err != nil || n != 0 {
			t.Errorf("the refused copy made a database on the target: %d, %v", n, err)
		}
	})
}

// testHiddenTriggersAndRoutines: a table's triggers are hidden from an
// account without TRIGGER on it, routines from one that may not read
// mysql.proc (nor defined them, nor holds a privilege on them), and the
// server says nothing: the backup is refused, naming them, the GRANT and
// the --skip- flag. Held through a role (of the default role), or left out
// on purpose, the backup succeeds, and holds them when held.
func testHiddenTriggersAndRoutines(t *testing.T, src *sandbox.Server, version string) {
	ctx := context.Background()
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 2}); err != nil {
		t.Fatal(err)
	}
	qs := []string{
		"CREATE TRIGGER sample.stamp BEFORE INSERT ON sample.small_01 FOR EACH ROW SET NEW.qty = 1",
		"CREATE PROCEDURE sample.refill() SELECT 1",
		"CREATE USER notrigger@localhost", "GRANT RELOAD, PROCESS, BINLOG MONITOR ON *.* TO notrigger@localhost",
		"GRANT SELECT, EVENT ON sample.* TO notrigger@localhost", "GRANT SELECT ON mysql.proc TO notrigger@localhost",
		"CREATE USER noroutine@localhost", "GRANT RELOAD, PROCESS, BINLOG MONITOR ON *.* TO noroutine@localhost",
		"GRANT SELECT, EVENT, TRIGGER ON sample.* TO noroutine@localhost",
		// TRIGGER table by table and SELECT on mysql.proc through a role
		// that the default role holds.
		"CREATE ROLE lister", "GRANT TRIGGER ON sample.small_01 TO lister", "GRANT TRIGGER ON sample.small_02 TO lister",
		"GRANT SELECT ON mysql.proc TO lister", "CREATE ROLE backupper", "GRANT lister TO backupper",
		"CREATE USER rolelister@localhost", "GRANT RELOAD, PROCESS, BINLOG MONITOR ON *.* TO rolelister@localhost",
		"GRANT SELECT, EVENT ON sample.* TO rolelister@localhost", "GRANT backupper TO rolelister@localhost",
		"SET DEFAULT ROLE backupper FOR rolelister@localhost",
	}
	holders := []string{"rolelister"}
	if version == "11.8" {
		// 11.3 and later show every routine of a database to an account
		// holding SHOW CREATE ROUTINE on it, mysql.proc unread.
		qs = append(qs, "CREATE ROLE shower", "GRANT TRIGGER, SHOW CREATE ROUTINE ON sample.* TO shower",
			"CREATE USER roleshower@localhost", "GRANT RELOAD, PROCESS, BINLOG MONITOR ON *.* TO roleshower@localhost",
			"GRANT SELECT, EVENT ON sample.* TO roleshower@localhost", "GRANT shower TO roleshower@localhost",
			"SET DEFAULT ROLE shower FOR roleshower@localhost")
		holders = append(holders, "roleshower")
	}
	for _, q := range qs {
		if _, err := src.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	as := func(user string, flags ...string) []string {
		return append([]string{"backup", "--logical", "--database", "sample", "--socket", src.Socket, "--user", user, "--no-defaults"}, flags...)
	}
	for _, c := range []struct {
		user  string
		wants []string
	}{
		{"notrigger", []string{"table sample.small_01, sample.small_02:", "may not see its triggers", "GRANT TRIGGER ON `sample`.* TO 'notrigger'@'localhost'", "--skip-triggers"}},
		{"noroutine", []string{"database sample:", "may not see all its stored routines", "GRANT SELECT ON `mysql`.`proc` TO 'noroutine'@'localhost'", "--skip-routines"}},
	} {
		repoDir := newRepoDir(t)
		r := run(t, append(as(c.user), "--repo", repoDir)...)
		if r.code != ExitFailure || r.err == nil {
			t.Errorf("%s: exit %d, %v, stdout %q: want exit %d", c.user, r.code, r.err, r.stdout, ExitFailure)
			continue
		}
		for _, w := range c.wants {
			if !strings.Contains(r.err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", c.user, r.err, w)
			}
		}
		if entries := backupListing(t, repoDir); len(entries) != 0 {
			t.Errorf("%s: list shows %+v after a refused backup", c.user, entries)
		}
	}
	repoDir := newRepoDir(t)
	run(t, append(as("notrigger", "--skip-triggers"), "--repo", repoDir)...).mustSucceed(t)
	run(t, append(as("noroutine", "--skip-routines"), "--repo", repoDir)...).mustSucceed(t)
	if entries := backupListing(t, repoDir); len(entries) != 2 {
		t.Fatalf("list shows %d backups, want 2", len(entries))
	}
	for _, user := range holders {
		repoDir := newRepoDir(t)
		run(t, append(as(user), "--repo", repoDir)...).mustSucceed(t)
		entries := backupListing(t, repoDir)
		if len(entries) != 1 {
			t.Fatalf("%s: list shows %d backups, want 1", user, len(entries))
		}
		var triggers, routines []string
		for _, d := range readCatalog(t, repoDir, entries[0].ID).Schema.Databases {
			for _, o := range d.Triggers {
				triggers = append(triggers, d.Name+"."+o.Name)
			}
			for _, o := range d.Routines {
				routines = append(routines, d.Name+"."+o.Name)
			}
		}
		if !slices.Equal(triggers, []string{"sample.stamp"}) || !slices.Equal(routines, []string{"sample.refill"}) {
			t.Errorf("%s: the backup holds triggers %q and routines %q, want sample.stamp and sample.refill", user, triggers, routines)
		}
	}
}
