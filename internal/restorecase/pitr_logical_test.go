package restorecase_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/pitr"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// A point-in-time restore from a logical base (issue 14, item 4): a
// logical backup of a server with InnoDB and MyISAM tables and accounts,
// then inserts, an update, DDL, a MyISAM insert and a new account,
// archived. A restore until a time between the writes, and until the end,
// builds a server in a new datadir whose tables and accounts are the
// source's at that moment; the restore test until the end passes from
// that base; a logical load followed by a replay until the end onto the
// loaded server (ApplyTo), from the backup's GTID position the load
// reports, reaches the end too.
func TestPITRFromLogicalBase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	db := src.DB()
	must := func(q string) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	must("CREATE DATABASE m")
	must("CREATE TABLE m.inno (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB")
	must("CREATE TABLE m.isam (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=MyISAM")
	must("INSERT INTO m.inno VALUES (1, 'one'), (2, 'two')")
	must("INSERT INTO m.isam VALUES (1, 'one')")
	must("CREATE USER acct1@'%' IDENTIFIED BY 'one'")
	must("GRANT SELECT ON m.* TO acct1@'%'")
	r := usecasetest.NewLocalRepo(t)
	baseID := usecasetest.Backup(t, usecasetest.LogicalBackupOf(t, r, src)).Manifest.ID

	time.Sleep(1100 * time.Millisecond) // binary log times have whole seconds
	must("INSERT INTO m.inno VALUES (3, 'three')")
	must("UPDATE m.inno SET v = 'uno' WHERE id = 1")
	must("INSERT INTO m.isam VALUES (2, 'two')")
	midSums, midAccounts := usecasetest.Checksums(t, src), usecasetest.AccountDetails(t, src)+"\n"+userHosts(t, src)
	// The second after these writes' (whole seconds), before the next.
	var midAt string
	db.QueryRow("SELECT DATE_FORMAT(UTC_TIMESTAMP(), '%Y-%m-%d %H:%i:%s')").Scan(&midAt)
	midTime, err := time.Parse(time.DateTime, midAt)
	if err != nil {
		t.Fatal(err)
	}
	mid := midTime.Add(time.Second).Format(time.DateTime)
	time.Sleep(2100 * time.Millisecond)
	// Newer, but of one database only (and so without the accounts, as
	// `backup --logical --database m` takes it): never a base, whose
	// binary logs touch anything.
	only := usecasetest.LogicalBackupOf(t, r, src)
	only.Dump.Filter.Databases, only.Dump.Skip.Users = []string{"m"}, true
	usecasetest.Backup(t, only)
	must("ALTER TABLE m.inno ADD COLUMN w INT NOT NULL DEFAULT 7")
	must("CREATE TABLE m.later (id INT PRIMARY KEY) ENGINE=InnoDB")
	must("INSERT INTO m.later VALUES (1)")
	must("INSERT INTO m.isam VALUES (3, 'three')")
	must("DELETE FROM m.inno WHERE id = 2")
	must("CREATE USER acct2@'localhost' IDENTIFIED BY 'two'")
	must("GRANT INSERT ON m.later TO acct2@'localhost'")
	endSums, endAccounts := usecasetest.Checksums(t, src), usecasetest.AccountDetails(t, src)+"\n"+userHosts(t, src)
	must("FLUSH BINARY LOGS")
	usecasetest.ArchiveBinlogs(t, r, src)

	for _, c := range []struct {
		until          string
		sums           map[string]string
		accounts, name string
	}{
		{mid, midSums, midAccounts, "between the writes"},
		{"end", endSums, endAccounts, "end"},
	} {
		req := usecasetest.PointInTimeOf(r, filepath.Join(t.TempDir(), "dd"))
		req.Until = c.until
		if p := usecasetest.Restore(t, req).PointInTime; p == nil || p.Backup.ID != baseID {
			t.Errorf("Until %s: %+v; want it to start from the logical backup %s", c.until, p, baseID)
		}
		dst := usecasetest.ServerOn(t, req.Restore.TargetDir)
		usecasetest.CompareChecksums(t, usecasetest.Checksums(t, dst), c.sums)
		// Every account, root's too: the source's, not those
		// mariadb-install-db made, nor the replay's.
		if got := usecasetest.AccountDetails(t, dst) + "\n" + userHosts(t, dst); got != c.accounts {
			t.Errorf("Until %s (%s): accounts\n%s\nwant (as on the source)\n%s", c.until, c.name, got, c.accounts)
		}
	}

	rep, err := usecasetest.RestoreTestTo(t, r, pitr.Target{End: true})
	if err != nil || rep.Backup != baseID || rep.Until == "" || !rep.Passed {
		t.Errorf("the restore test until the end from a logical base: %+v, %v; want backup %s replayed, passed", rep, err, baseID)
	}
	req := usecasetest.PointInTimeOf(r, filepath.Join(t.TempDir(), "phys"))
	req.Until, req.Base = "end", "physical"
	if _, err := restorecase.Run(ctx, req); err == nil || !strings.Contains(err.Error(), "no physical backup") {
		t.Errorf("Base physical with only a logical backup: %v; want a refusal", err)
	}

	// A logical load, then ApplyTo from the position it reports.
	onto := sandboxtest.Start(t, sandbox.Options{NoBinlog: true})
	load := usecasetest.LoadOf(r, baseID, onto)
	load.Load.Users = true
	l := usecasetest.Restore(t, load).Load
	if l == nil || l.Backup.Positions.GTID == "" {
		t.Fatalf("the load reported no GTID position of the backup: %+v", l)
	}
	if _, err := onto.DB().Exec("SET GLOBAL gtid_slave_pos = ?", l.Backup.Positions.GTID); err != nil {
		t.Fatal(err)
	}
	apply := usecasetest.ApplyOf(r, onto)
	apply.Until = "end"
	usecasetest.Restore(t, apply)
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, onto), endSums)
}

// userHosts lists every account of s but those named by host name, which
// a server under skip-name-resolve (as sandboxes run) ignores, so that a
// dump cannot read them.
func userHosts(t *testing.T, s *sandbox.Server) string {
	t.Helper()
	var got string
	if err := s.DB().QueryRow("SELECT GROUP_CONCAT(CONCAT(User, '@', Host) ORDER BY User, Host) FROM mysql.user WHERE Host <> @@hostname").Scan(&got); err != nil {
		t.Fatal(err)
	}
	return got
}
