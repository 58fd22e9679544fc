package restorecase_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/toolpath"
	"github.com/backstream/backstream/internal/usecasetest"
)

// TestVersionsPointInTime is the GTID part of the version matrix (issue
// 30 item 3): a physical backup, then writes in two GTID domains (row and
// statement events, DDL, a rotation) up to a position G read from the
// source, and more in both domains after it. On MariaDB 11.8, a restore
// until GTID G into a new datadir, replayed by 11.8's mariadb-binlog into
// a throwaway 11.8 server, has the source's CHECKSUM TABLE at G; a replay
// onto an 11.8 server started on the restored backup (ApplyTo, the
// server told the backup's GTID) applies up to G, then to the end, each
// time equal to the source's checksums there, and a third apply finds
// nothing to do. On 10.5 both are refused before anything is written or
// applied, naming why: 10.5's mariadb-binlog takes no GTID positions
// ("Unknown suffix '-' used for variable 'start-position'" was what the
// replay said), and 10.11's output does not load into 10.5 (it sets
// system_versioning_insert_history); a restore until a time stays the
// way there (TestVersionsBinlog, internal/binlog). Everything is found on
// the MariaDB path (--mariadb-path: 11.8's basedir first, so that 10.5's
// tools are not simply the first).
func TestVersionsPointInTime(t *testing.T) {
	b105, b118 := sandboxtest.Basedir(t, "10.5"), sandboxtest.Basedir(t, "11.8")
	t.Parallel()
	path := toolpath.Path{b118, b105}
	for _, c := range []struct{ version, basedir string }{{"10.5", b105}, {"11.8", b118}} {
		t.Run(c.version, func(t *testing.T) {
			t.Parallel()
			pointInTimeMatrix(t, c.version, c.basedir, path)
		})
	}
}

func pointInTimeMatrix(t *testing.T, version, basedir string, path toolpath.Path) {
	ctx := context.Background()
	src := usecasetest.StartOrders(t, version, basedir)
	r := usecasetest.NewLocalRepo(t)
	usecasetest.ArchiveBinlogsWith(t, r, src, path)
	backup := usecasetest.BackupOf(t, r, src)
	backup.Physical.MariadbPath = path
	usecasetest.Backup(t, backup)
	entries := usecasetest.List(t, r)
	if len(entries) != 1 || entries[0].Positions.GTID == "" {
		t.Fatalf("list after one backup: %+v, want one backup with a GTID", entries)
	}
	basePos := entries[0].Positions.GTID

	usecasetest.ExecSession(t, src,
		"UPDATE app.orders SET total = total + 1, doc = JSON_SET(doc, '$.u', 1) WHERE id % 7 = 0",
		"SET SESSION gtid_domain_id = 1",
		"CREATE TABLE app.other (id INT PRIMARY KEY, v VARCHAR(80)) ENGINE=InnoDB",
		"INSERT INTO app.other SELECT seq, SHA1(seq) FROM app.seq_1_to_300",
		"SET SESSION gtid_domain_id = 0",
		"DELETE FROM app.orders WHERE id > 4900",
		"FLUSH BINARY LOGS",
		"SET SESSION binlog_format = 'STATEMENT'",
		"INSERT INTO app.log SELECT seq, CONCAT('statement ', seq) FROM app.seq_1001_to_1100",
		"SET SESSION binlog_format = 'ROW'",
		"ALTER TABLE app.orders ADD COLUMN flag TINYINT NOT NULL DEFAULT 0",
		"UPDATE app.orders SET flag = 1 WHERE id % 3 = 0",
		"SET SESSION gtid_domain_id = 1",
		"UPDATE app.other SET v = CONCAT(v, '+') WHERE id % 2 = 0",
	)
	var atG string
	if err := src.DB().QueryRow("SELECT @@gtid_binlog_pos").Scan(&atG); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(atG, "1-") || !strings.Contains(atG, "0-") {
		t.Fatalf("the source's position %q, want GTIDs of domains 0 and 1", atG)
	}
	wantAtG := usecasetest.Checksums(t, src)
	usecasetest.ExecSession(t, src,
		"UPDATE app.orders SET note = 'after G' WHERE id < 100",
		"SET SESSION gtid_domain_id = 1",
		"DELETE FROM app.other WHERE id > 250",
		"SET SESSION gtid_domain_id = 0",
		"CREATE TABLE app.late (id INT PRIMARY KEY) ENGINE=InnoDB",
		"INSERT INTO app.late SELECT seq FROM app.seq_1_to_10",
		// Twice: each domain's end in the file holding G is known from
		// the next file's GTID list.
		"FLUSH BINARY LOGS",
		"FLUSH BINARY LOGS",
	)
	wantEnd := usecasetest.Checksums(t, src)
	usecasetest.ArchiveBinlogsWith(t, r, src, path)

	target := filepath.Join(t.TempDir(), "until-gtid")
	untilGTID := usecasetest.WithMariadbPath(usecasetest.PointInTimeOf(r, target), path)
	untilGTID.UntilGTID = atG
	base := filepath.Join(t.TempDir(), "base")
	prepared := usecasetest.WithMariadbPath(usecasetest.RestoreOf(r, "latest"), path)
	prepared.Restore.TargetDir, prepared.Restore.Options.Prepare = base, true
	usecasetest.Restore(t, prepared)
	// The replay onto a server (ApplyTo): the backup restored and started
	// by the version's server (with a binary log, as a DBA's would be),
	// told its position.
	onto := sandboxtest.Start(t, sandbox.Options{Basedir: basedir, Datadir: base})
	usecasetest.RequireVersion(t, onto, version)
	// Not a prepared statement: 10.5 answers that one with "Prepared
	// statement needs to be re-prepared" on a server just started.
	if _, err := onto.DB().Exec(fmt.Sprintf("SET GLOBAL gtid_slave_pos = '%s'", basePos)); err != nil {
		t.Fatal(err)
	}
	atBase := usecasetest.Checksums(t, onto)
	apply := func(until, untilGTID string) restorecase.Request {
		req := usecasetest.WithMariadbPath(usecasetest.ApplyOf(r, onto), path)
		req.Until, req.UntilGTID = until, untilGTID
		return req
	}
	// Into a new datadir, the version's server replays through its
	// parallel applier.
	endDir := filepath.Join(t.TempDir(), "until-end")
	untilEnd := usecasetest.WithMariadbPath(usecasetest.PointInTimeOf(r, endDir), path)
	untilEnd.Until = "end"
	if w := usecasetest.Restore(t, untilEnd).PointInTime.Workers; w == 0 {
		t.Errorf("until end: replayed through mariadb-binlog | mariadb, want the server's parallel applier")
	}
	s := sandboxtest.Start(t, sandbox.Options{Basedir: basedir, Datadir: endDir})
	usecasetest.RequireVersion(t, s, version)
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, s), wantEnd)
	s.Close()
	if version == "10.5" {
		_, err := restorecase.Run(ctx, untilGTID)
		refusedGTIDReplay(t, err, "--until-gtid", "restore with --until and a time instead")
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Errorf("the refused restore until a GTID left its target: %v", err)
		}
		_, err = restorecase.Run(ctx, apply("end", ""))
		refusedGTIDReplay(t, err, "--apply-to", "restore a datadir with --until and a time or end instead")
		usecasetest.CompareChecksums(t, usecasetest.Checksums(t, onto), atBase)
		return
	}
	pit := usecasetest.Restore(t, untilGTID).PointInTime
	t.Logf("until GTID %s: backup %s, %v replayed to %s by %d workers", atG, pit.Backup.ID, pit.Binlogs, pit.Replayed, pit.Workers)
	if pit.Workers == 0 {
		t.Errorf("until GTID %s: replayed through mariadb-binlog | mariadb, want the server's parallel applier", atG)
	}
	s = sandboxtest.Start(t, sandbox.Options{Basedir: basedir, Datadir: target})
	usecasetest.RequireVersion(t, s, version)
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, s), wantAtG)
	s.Close()

	usecasetest.Restore(t, apply("", atG))
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, onto), wantAtG)
	usecasetest.Restore(t, apply("end", ""))
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, onto), wantEnd)
	if res := usecasetest.Restore(t, apply("end", "")); res.Apply == nil || !res.Apply.Nothing() {
		t.Errorf("a third apply: %+v, want nothing applied", res.Apply)
	}
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, onto), wantEnd)
}

// refusedGTIDReplay fails unless err is the refusal (a
// *restore.RefusedError, what the command exits 2 for) of a GTID replay
// (what) of MariaDB 10.5's binary logs, saying what to do instead.
func refusedGTIDReplay(t *testing.T, err error, what, instead string) {
	t.Helper()
	want := "the binary logs are MariaDB 10.5's: " + what + " replays from or to a GTID position, which mariadb-binlog takes from 10.8 on"
	var refusal *restore.RefusedError
	if msg := fmt.Sprint(err); !errors.As(err, &refusal) || !usecasetest.Refused(err) || !strings.Contains(msg, want) || !strings.Contains(msg, instead) {
		t.Errorf("%s of 10.5's binary logs: %v (%T); want a refusal, %q ... %q", what, err, err, want, instead)
	}
}
