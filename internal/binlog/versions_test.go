package binlog_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/binlog"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/toolpath"
	"github.com/backstream/backstream/internal/usecasetest"
)

// TestVersionsBinlog is the binary log part of the version matrix (issue
// 30 item 4): on each MariaDB version, binlog archives a server's files,
// each byte for byte the server's; a physical backup, then writes before
// and after a marker time; a restore until that time has CHECKSUM TABLE
// equal to the source's at the marker, and one until the end equal to the
// end's, each replayed by the server's own mariadb-binlog into a server of
// its version, all taken from the MariaDB path (--mariadb-path: 11.8's
// basedir first, so that a 10.5 server's tools are not simply the first
// found; the host's 10.11 mariadb-binlog in PATH would stop at an 11.8
// server, see "older mariadb-binlog"). Following, the file being written
// is stored as segments and a restore from them alone is exact too.
func TestVersionsBinlog(t *testing.T) {
	b105, b118 := sandboxtest.Basedir(t, "10.5"), sandboxtest.Basedir(t, "11.8")
	t.Parallel()
	path := toolpath.Path{b118, b105}
	for _, c := range []struct{ version, basedir string }{
		{"11.8", b118},
		{"10.5", b105},
	} {
		t.Run(c.version, func(t *testing.T) {
			t.Parallel()
			binlogMatrix(t, c.version, c.basedir, path)
		})
		t.Run(c.version+" follow", func(t *testing.T) {
			t.Parallel()
			followMatrix(t, c.version, c.basedir, path)
		})
	}
	// The host's mariadb-binlog (10.11) refuses an 11.8 server ("Master
	// reported unrecognized MariaDB version"): binlog refuses first, naming
	// what it found and where to say more, and stores nothing.
	t.Run("older mariadb-binlog", func(t *testing.T) {
		t.Parallel()
		src := sandboxtest.Start(t, sandbox.Options{Basedir: b118})
		usecasetest.RequireVersion(t, src, "11.8")
		usecasetest.ExecSession(t, src, "CREATE DATABASE app", "FLUSH BINARY LOGS")
		r := usecasetest.NewLocalRepo(t)
		_, err := usecasetest.ArchiverOf(t, r, src).RunOnce(context.Background()) // no MariaDB path: PATH alone
		if msg := fmt.Sprint(err); err == nil ||
			!strings.Contains(msg, "the server is MariaDB 11.8, but the mariadb-binlog found are older: /usr/bin/mariadb-binlog (MariaDB 10.11.") ||
			!strings.Contains(msg, "--mariadb-path DIR") {
			t.Errorf("binlog of an 11.8 server with the host's mariadb-binlog only: %v; want refused naming both versions", err)
		}
		if files := usecasetest.ArchivedBinlogs(t, r); len(files) != 0 {
			t.Errorf("a refused binlog archived %d files", len(files))
		}
	})
}

// backupWith takes a physical backup of src into r as `backup
// --mariadb-path path` does: mariabackup of the server's version looked
// for on path before PATH.
func backupWith(t *testing.T, r usecasetest.Repo, src *sandbox.Server, path toolpath.Path) {
	t.Helper()
	req := usecasetest.BackupOf(t, r, src)
	req.Physical.MariadbPath = path
	usecasetest.Backup(t, req)
}

func binlogMatrix(t *testing.T, version, basedir string, path toolpath.Path) {
	ctx := context.Background()
	src := usecasetest.StartOrders(t, version, basedir)
	db := src.DB()
	r := usecasetest.NewLocalRepo(t)
	// Archived before the backup as a service would be, and again after.
	usecasetest.ArchiveBinlogsWith(t, r, src, path)
	backupWith(t, r, src, path)

	// Row events of every kind, a statement-logged transaction, DDL, and
	// a rotation between them.
	usecasetest.ExecSession(t, src,
		"UPDATE app.orders SET total = total + 1, doc = JSON_SET(doc, '$.u', 1) WHERE id % 7 = 0",
		"DELETE FROM app.orders WHERE id > 4900",
		"FLUSH BINARY LOGS",
		"SET SESSION binlog_format = 'STATEMENT'",
		"INSERT INTO app.log SELECT seq, CONCAT('statement ', seq) FROM app.seq_1001_to_1100",
		"SET SESSION binlog_format = 'ROW'",
		"ALTER TABLE app.orders ADD COLUMN flag TINYINT NOT NULL DEFAULT 0",
		"UPDATE app.orders SET flag = 1 WHERE id % 3 = 0",
	)
	// The marker: a second past the last write before it (binary log
	// times have whole seconds), and the writes after it a second later.
	var now string
	if err := db.QueryRowContext(ctx, "SELECT DATE_FORMAT(UTC_TIMESTAMP(), '%Y-%m-%d %H:%i:%s')").Scan(&now); err != nil {
		t.Fatal(err)
	}
	last, err := time.Parse(time.DateTime, now)
	if err != nil {
		t.Fatal(err)
	}
	until := last.Add(time.Second)
	wantAtMarker := usecasetest.Checksums(t, src)
	time.Sleep(time.Until(until.Add(1100 * time.Millisecond).Add(clockSkew(t, src))))
	usecasetest.ExecSession(t, src,
		"UPDATE app.orders SET note = 'after the marker' WHERE id < 100",
		"CREATE TABLE app.late (id INT PRIMARY KEY) ENGINE=InnoDB",
		"INSERT INTO app.late SELECT seq FROM app.seq_1_to_10",
		"FLUSH BINARY LOGS",
	)
	wantEnd := usecasetest.Checksums(t, src)
	usecasetest.ArchiveBinlogsWith(t, r, src, path)
	requireExactCopies(t, src, r)

	for _, c := range []struct {
		name, until string
		want        map[string]string
	}{
		{"marker", until.Format(time.DateTime), wantAtMarker},
		{"end", "end", wantEnd},
	} {
		target := filepath.Join(t.TempDir(), c.name)
		req := usecasetest.WithMariadbPath(usecasetest.PointInTimeOf(r, target), path)
		req.Until = c.until
		pit := usecasetest.Restore(t, req).PointInTime
		t.Logf("until %s: backup %s, %v replayed to %s", c.until, pit.Backup.ID, pit.Binlogs, pit.Replayed)
		s := sandboxtest.Start(t, sandbox.Options{Basedir: basedir, Datadir: target})
		usecasetest.RequireVersion(t, s, version)
		usecasetest.CompareChecksums(t, usecasetest.Checksums(t, s), c.want)
		s.Close()
	}
}

// followMatrix: binlog --follow stores the file the server is writing as
// segments, which the Segmenter cuts reading the version's events (its
// format description, checksums and GTID events); a restore until the
// end from the backup and those segments alone (the file never rotated)
// has the source's checksums.
func followMatrix(t *testing.T, version, basedir string, path toolpath.Path) {
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{Basedir: basedir})
	usecasetest.RequireVersion(t, src, version)
	usecasetest.ExecSession(t, src,
		"CREATE DATABASE app",
		"CREATE TABLE app.t (id INT PRIMARY KEY, v VARCHAR(80), doc JSON) ENGINE=InnoDB",
		"INSERT INTO app.t SELECT seq, SHA1(seq), JSON_OBJECT('n', seq) FROM app.seq_1_to_2000",
	)
	var hostname string
	var serverID uint32
	if err := src.DB().QueryRow("SELECT @@hostname, @@server_id").Scan(&hostname, &serverID); err != nil {
		t.Fatal(err)
	}
	r := usecasetest.NewLocalRepo(t)
	backupWith(t, r, src, path)

	// binlog --follow --flush-interval 200ms --mariadb-path path.
	a := usecasetest.ArchiverOf(t, r, src)
	a.FlushInterval, a.MariadbPath = 200*time.Millisecond, path
	var said testkit.SyncBuffer // what binlog --follow says
	a.Log = func(msg string) { fmt.Fprintln(&said, msg) }
	stop := usecasetest.Follow(t, a)
	for i := range 20 {
		usecasetest.ExecSession(t, src,
			fmt.Sprintf("UPDATE app.t SET v = CONCAT(v, '+%d'), doc = JSON_SET(doc, '$.u', %d) WHERE id %% 20 = %d", i, i, i),
			fmt.Sprintf("INSERT INTO app.t VALUES (%d, 'during --follow', NULL)", 10000+i),
			fmt.Sprintf("DELETE FROM app.t WHERE id = %d", 100+i),
		)
		time.Sleep(50 * time.Millisecond)
	}
	want := usecasetest.Checksums(t, src)
	var gtid string
	if err := src.DB().QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&gtid); err != nil {
		t.Fatal(err)
	}

	rp := r.Open(t)
	reached := ""
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && reached != gtid; time.Sleep(200 * time.Millisecond) {
		segs, err := rp.BinlogSegments(ctx, binlog.SourceKey(hostname, serverID))
		if err != nil || len(segs) == 0 {
			continue
		}
		last := segs[len(segs)-1]
		rc, err := rp.OpenBinlogSegment(ctx, last)
		if err != nil {
			t.Fatal(err)
		}
		head, err := binlog.ReadSegment(rc, last.Source, last.Name, last.Start, last.End, nil)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		reached = head.LastGTID
	}
	if reached != gtid {
		t.Fatalf("binlog --follow stored segments up to GTID %q, not the server's %s, within a minute:\n%s", reached, gtid, said.String())
	}
	if err := stop(); err != nil {
		t.Errorf("binlog --follow stopped: %v\n%s", err, said.String())
	}
	for _, f := range usecasetest.ArchivedBinlogs(t, r) {
		if f.Closed {
			t.Fatalf("%s archived whole: the test wants the active file's segments alone", f.Name)
		}
	}

	target := filepath.Join(t.TempDir(), "end")
	req := usecasetest.WithMariadbPath(usecasetest.PointInTimeOf(r, target), path)
	req.Until = "end"
	usecasetest.Restore(t, req)
	s := sandboxtest.Start(t, sandbox.Options{Basedir: basedir, Datadir: target})
	usecasetest.RequireVersion(t, s, version)
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, s), want)
	s.Close()
}

// clockSkew is how far the server's clock is behind this process's
// (zero on one host; kept so a sleep to a server time is long enough).
func clockSkew(t *testing.T, s *sandbox.Server) time.Duration {
	t.Helper()
	var unix int64
	if err := s.DB().QueryRow("SELECT UNIX_TIMESTAMP()").Scan(&unix); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(time.Unix(unix, 0)); d > time.Second {
		return d
	}
	return 0
}

// requireExactCopies fails unless every file r holds is byte for byte
// the server's file of that name.
func requireExactCopies(t *testing.T, src *sandbox.Server, r usecasetest.Repo) {
	t.Helper()
	ctx := context.Background()
	var datadir string
	if err := src.DB().QueryRow("SELECT @@datadir").Scan(&datadir); err != nil {
		t.Fatal(err)
	}
	rp := r.Open(t)
	entries, err := rp.Binlogs(ctx)
	if err != nil || len(entries) < 2 {
		t.Fatalf("archived binary logs: %d, %v; want at least 2", len(entries), err)
	}
	for _, e := range entries {
		if e.Damage != nil {
			t.Fatalf("%s: %v", e.Name, e.Damage)
		}
		m := e.Manifest
		c := usecasetest.Payloads{}
		if err := archive.Read(ctx, archive.ReadOptions{Input: rp.BinlogInput(m), Manifest: m, Sink: c}); err != nil {
			t.Fatalf("%s: %v", m.Binlog.Name, err)
		}
		want, err := os.ReadFile(filepath.Join(datadir, m.Binlog.Name))
		if err != nil {
			t.Fatal(err)
		}
		if c[m.Binlog.Name] == nil || !bytes.Equal(c[m.Binlog.Name].Bytes(), want) {
			t.Errorf("%s: archived content differs from the server's file", m.Binlog.Name)
		}
		if !m.Binlog.Closed || m.Binlog.FirstTime.IsZero() || m.Binlog.Size != int64(len(want)) {
			t.Errorf("%s: index %+v", m.Binlog.Name, m.Binlog)
		}
	}
}
