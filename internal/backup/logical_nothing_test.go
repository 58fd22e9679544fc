package backup_test

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/logical"
	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/servercopy"
	"github.com/backstream/backstream/internal/usecasetest"
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
	usecasetest.ExecAll(t, src.DB(),
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
	)
	// sample is the dump of the sample database as user: a filter
	// without --users skips the accounts too.
	sample := func(user string) func(req *backup.Request) {
		return func(req *backup.Request) {
			req.Conn.User = user
			req.Dump.Filter.Databases, req.Dump.Skip.Users = []string{"sample"}, true
		}
	}
	for _, c := range []struct {
		name string
		dump func(req *backup.Request)
		// refused: the filter selects nothing (a *logical.FilterError,
		// exit 2); else the dump fails (exit 1).
		refused bool
		wants   []string
	}{
		{"misspelled database", func(req *backup.Request) {
			req.Dump.Filter.Databases, req.Dump.Skip.Users = []string{"sampel"}, true
		}, true, []string{"--database sampel", "SELECT ON `sampel`.*"}},
		{"missing table", func(req *backup.Request) {
			req.Dump.Filter.Tables, req.Dump.Skip.Users = []string{"sample.nosuch"}, true
		}, true, []string{"--table sample.nosuch"}},
		{"misspelled exclusion", func(req *backup.Request) {
			req.Dump.Filter.ExcludeTables = []string{"sample.nosuch"}
		}, true, []string{"--exclude-table sample.nosuch"}},
		{"everything excluded", func(req *backup.Request) {
			req.Dump.Filter.ExcludeDatabases, req.Dump.Skip.Users = []string{"sample"}, true
		}, true, []string{"select nothing"}},
		{"no grant", sample("nogrant"), true, []string{"--database sample", "SELECT ON `sample`.*"}},
		{"no select", sample("noselect"), false, []string{"table sample.", "GRANT SELECT ON `sample`.", "'noselect'@'localhost'"}},
		{"events hidden", sample("noevent"), false, []string{"database sample", "may not see its events", "GRANT EVENT ON `sample`.* TO 'noevent'@'localhost'", "--skip-events"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo := usecasetest.NewLocalRepo(t)
			req := usecasetest.LogicalBackupOf(t, repo, src)
			c.dump(&req)
			res, err := backup.Run(ctx, req)
			var fe *logical.FilterError
			if c.refused && !errors.As(err, &fe) || !c.refused && !usecasetest.Failed(err) {
				t.Fatalf("%v (%T): want a refusal of the filter %v, else a failure", err, err, c.refused)
			}
			for _, w := range c.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if res != nil {
				t.Errorf("the refused backup says it made %+v", res.Manifest)
			}
			if entries := usecasetest.List(t, repo); len(entries) != 0 {
				t.Errorf("list shows %+v after a refused backup", entries)
			}
		})
	}
	// Events left out on purpose, and EVENT held through a role, are fine;
	// the role's backup holds the event.
	t.Run("events skipped or granted through a role", func(t *testing.T) {
		repo := usecasetest.NewLocalRepo(t)
		req := usecasetest.LogicalBackupOf(t, repo, src)
		sample("noevent")(&req)
		req.Dump.Skip.Events = true
		usecasetest.Backup(t, req)
		req = usecasetest.LogicalBackupOf(t, repo, src)
		sample("roleevent")(&req)
		id := usecasetest.Backup(t, req).Manifest.ID
		if entries := usecasetest.List(t, repo); len(entries) != 2 {
			t.Fatalf("list shows %d backups, want 2", len(entries))
		}
		found := false
		for _, d := range usecasetest.Catalog(t, repo, id).Schema.Databases {
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
		job := usecasetest.CopyOf(t, src, dst, restorecase.Choices{Databases: []string{"sampel"}})
		job.Parallel = 2
		res, err := servercopy.Run(ctx, job)
		var fe *logical.FilterError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), "--database sampel") {
			t.Fatalf("%+v, %v (%T): want a refusal naming --database sampel", res, err, err)
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
	usecasetest.ExecAll(t, src.DB(), qs...)
	// as is the dump of the sample database as user into repo, skipping
	// skip (and the accounts, as a filter without --users does).
	as := func(repo usecasetest.Repo, user string, skip schema.Skip) backup.Request {
		req := usecasetest.LogicalBackupOf(t, repo, src)
		skip.Users = true
		req.Conn.User, req.Dump.Filter.Databases, req.Dump.Skip = user, []string{"sample"}, skip
		return req
	}
	for _, c := range []struct {
		user  string
		wants []string
	}{
		{"notrigger", []string{"table sample.small_01, sample.small_02:", "may not see its triggers", "GRANT TRIGGER ON `sample`.* TO 'notrigger'@'localhost'", "--skip-triggers"}},
		{"noroutine", []string{"database sample:", "may not see all its stored routines", "GRANT SELECT ON `mysql`.`proc` TO 'noroutine'@'localhost'", "--skip-routines"}},
	} {
		repo := usecasetest.NewLocalRepo(t)
		res, err := backup.Run(ctx, as(repo, c.user, schema.Skip{}))
		if !usecasetest.Failed(err) || res != nil {
			t.Errorf("%s: %+v, %v: want a failure", c.user, res, err)
			continue
		}
		for _, w := range c.wants {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", c.user, err, w)
			}
		}
		if entries := usecasetest.List(t, repo); len(entries) != 0 {
			t.Errorf("%s: list shows %+v after a refused backup", c.user, entries)
		}
	}
	repo := usecasetest.NewLocalRepo(t)
	usecasetest.Backup(t, as(repo, "notrigger", schema.Skip{Triggers: true}))
	usecasetest.Backup(t, as(repo, "noroutine", schema.Skip{Routines: true}))
	if entries := usecasetest.List(t, repo); len(entries) != 2 {
		t.Fatalf("list shows %d backups, want 2", len(entries))
	}
	for _, user := range holders {
		repo := usecasetest.NewLocalRepo(t)
		id := usecasetest.Backup(t, as(repo, user, schema.Skip{})).Manifest.ID
		if entries := usecasetest.List(t, repo); len(entries) != 1 {
			t.Fatalf("%s: list shows %d backups, want 1", user, len(entries))
		}
		var triggers, routines []string
		for _, d := range usecasetest.Catalog(t, repo, id).Schema.Databases {
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
