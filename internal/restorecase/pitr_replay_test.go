package restorecase_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/binlog"
	"github.com/backstream/backstream/internal/pitr"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/retention"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// ids lists the rows of m.marks on s.
func ids(t *testing.T, s *sandbox.Server) string {
	t.Helper()
	var got string
	if err := s.DB().QueryRow("SELECT COALESCE(GROUP_CONCAT(id ORDER BY id), '') FROM m.marks").Scan(&got); err != nil {
		t.Fatal(err)
	}
	return got
}

// sourceKey is s's binary logs' source as the repository names it
// (hostname-server_id).
func sourceKey(t *testing.T, s *sandbox.Server) string {
	t.Helper()
	var host string
	var id uint32
	if err := s.DB().QueryRow("SELECT @@hostname, @@server_id").Scan(&host, &id); err != nil {
		t.Fatal(err)
	}
	return binlog.SourceKey(host, id)
}

// Replay keeps everything the server logged: account statements, two
// GTID domains each stopped at its own position, the end, an RFC 3339
// time with an offset; and a replay onto a running server (ApplyTo)
// applies only what it lacks, once, and refuses a server that is not on
// the stream.
func TestReplayKeepsEverything(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	conn, err := src.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	must := func(q string) {
		t.Helper()
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	pos := func() string {
		var g string
		conn.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&g)
		return g
	}
	must("CREATE DATABASE m")
	must("CREATE TABLE m.marks (id INT PRIMARY KEY)")
	must("CREATE USER acct0@'%' IDENTIFIED BY 'before'")
	r := usecasetest.NewLocalRepo(t)
	usecasetest.Backup(t, usecasetest.BackupOf(t, r, src))
	var basePos string
	src.DB().QueryRow("SELECT @@gtid_binlog_pos").Scan(&basePos)

	must("CREATE USER acct1@'%' IDENTIFIED BY 'one'")
	must("CREATE ROLE role1")
	must("GRANT SELECT ON m.* TO role1")
	must("GRANT role1 TO acct1@'%'")
	must("GRANT INSERT ON m.marks TO acct1@'%'")
	must("CREATE USER acct2@'localhost'")
	must("ALTER USER acct1@'%' IDENTIFIED BY 'two'")
	must("DROP USER acct0@'%'")
	must("INSERT INTO m.marks VALUES (1)")
	must("SET SESSION gtid_domain_id = 1")
	must("INSERT INTO m.marks VALUES (2)")
	must("INSERT INTO m.marks VALUES (3)")
	d1 := gtidOf(t, pos(), 1)
	must("SET SESSION gtid_domain_id = 0")
	must("INSERT INTO m.marks VALUES (4)")
	d0 := gtidOf(t, pos(), 0)
	var at4 string
	conn.QueryRowContext(ctx, "SELECT DATE_FORMAT(UTC_TIMESTAMP(), '%Y-%m-%d %H:%i:%s')").Scan(&at4)
	time.Sleep(1100 * time.Millisecond)
	must("SET SESSION gtid_domain_id = 1")
	must("INSERT INTO m.marks VALUES (5)")
	must("SET SESSION gtid_domain_id = 0")
	must("INSERT INTO m.marks VALUES (6)")
	// Twice: the end of each domain in the file holding the targets is
	// known from the next archived file's GTID list.
	must("FLUSH BINARY LOGS")
	must("FLUSH BINARY LOGS")
	usecasetest.ArchiveBinlogs(t, r, src)
	wantAccounts := usecasetest.AccountDetails(t, src)

	restoreTo := func(until, untilGTID string) *sandbox.Server {
		t.Helper()
		req := usecasetest.PointInTimeOf(r, filepath.Join(t.TempDir(), "dd"))
		req.Until, req.UntilGTID = until, untilGTID
		usecasetest.Restore(t, req)
		return usecasetest.ServerOn(t, req.Restore.TargetDir)
	}
	two := d0 + "," + d1
	dst := restoreTo("", two)
	if got := ids(t, dst); got != "1,2,3,4" {
		t.Errorf("UntilGTID %s: rows %s, want 1,2,3,4 (domain 0 up to row 4, domain 1 up to row 3)", two, got)
	}
	if got := usecasetest.AccountDetails(t, dst); got != wantAccounts {
		t.Errorf("UntilGTID %s: accounts\n%s\nwant (as on the source)\n%s", two, got, wantAccounts)
	}
	if got := ids(t, restoreTo("end", "")); got != "1,2,3,4,5,6" {
		t.Errorf("Until end: rows %s, want all", got)
	}
	t4, err := time.Parse(time.DateTime, at4)
	if err != nil {
		t.Fatal(err)
	}
	rfc := t4.Add(time.Second).In(time.FixedZone("", 2*3600)).Format(time.RFC3339)
	if got := ids(t, restoreTo(rfc, "")); got != "1,2,3,4" {
		t.Errorf("Until %s: rows %s, want 1,2,3,4", rfc, got)
	}
	req := usecasetest.PointInTimeOf(r, filepath.Join(t.TempDir(), "one-domain"))
	req.UntilGTID = d0
	if _, err := restorecase.Run(ctx, req); err == nil || !strings.Contains(err.Error(), "names no position for GTID domain 1") {
		t.Errorf("UntilGTID naming domain 0 only: %v; want a refusal naming domain 1", err)
	}

	// ApplyTo: a server restored from the base backup, told its position.
	base := usecasetest.RestoreOf(r, "latest")
	base.Restore.TargetDir, base.Restore.Options.Prepare = filepath.Join(t.TempDir(), "base"), true
	usecasetest.Restore(t, base)
	onto, err := sandbox.Start(ctx, sandbox.Options{Dir: t.TempDir(), Datadir: base.Restore.TargetDir, NoBinlog: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { onto.Close() })
	apply := func(s *sandbox.Server) (*restorecase.Result, error) {
		req := usecasetest.ApplyOf(r, s)
		req.Until = "end"
		return restorecase.Run(ctx, req)
	}
	if _, err := apply(onto); err == nil || !strings.Contains(err.Error(), "no GTID position") {
		t.Errorf("ApplyTo a server without a position: %v; want a refusal", err)
	}
	if _, err := onto.DB().Exec("SET GLOBAL gtid_slave_pos = ?", basePos); err != nil {
		t.Fatal(err)
	}
	if _, err := apply(onto); err != nil {
		t.Fatalf("ApplyTo: %v", err)
	}
	if got := ids(t, onto); got != "1,2,3,4,5,6" {
		t.Errorf("ApplyTo: rows %s, want all", got)
	}
	if got := usecasetest.AccountDetails(t, onto); got != wantAccounts {
		t.Errorf("ApplyTo: accounts\n%s\nwant\n%s", got, wantAccounts)
	}
	res, err := apply(onto)
	if err != nil {
		t.Fatalf("a second ApplyTo: %v", err)
	}
	if res.Apply == nil || !res.Apply.Nothing() || ids(t, onto) != "1,2,3,4,5,6" {
		t.Errorf("a second ApplyTo: %+v, rows %s; want nothing applied", res.Apply, ids(t, onto))
	}

	other := sandboxtest.Start(t, sandbox.Options{})
	if _, err := other.DB().Exec("CREATE DATABASE unrelated"); err != nil {
		t.Fatal(err)
	}
	var otherPos string
	other.DB().QueryRow("SELECT @@gtid_binlog_pos").Scan(&otherPos)
	_, err = apply(other)
	if err == nil || !strings.Contains(err.Error(), "not on the archived binary logs") || !strings.Contains(err.Error(), otherPos) ||
		!strings.Contains(err.Error(), strings.Split(pos(), ",")[0]) {
		t.Errorf("ApplyTo an unrelated server (at %s): %v; want a refusal naming both positions", otherPos, err)
	}
}

// gtidOf picks domain's GTID out of a position list.
func gtidOf(t *testing.T, pos string, domain int) string {
	t.Helper()
	for _, g := range strings.Split(pos, ",") {
		if strings.HasPrefix(g, fmt.Sprintf("%d-", domain)) {
			return g
		}
	}
	t.Fatalf("no domain %d in %s", domain, pos)
	return ""
}

// A repository with two servers' backups and binary logs: a point in
// time needs the server named (Server), and then takes only that
// server's backup and logs.
func TestPITRPerServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := usecasetest.NewLocalRepo(t)
	var keys []string
	for i, name := range []string{"a", "b"} {
		s := sandboxtest.Start(t, sandbox.Options{})
		for _, q := range []string{"CREATE DATABASE m", "CREATE TABLE m.marks (id INT PRIMARY KEY)", fmt.Sprintf("CREATE DATABASE only_%s", name)} {
			if _, err := s.DB().Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		usecasetest.Backup(t, usecasetest.BackupOf(t, r, s))
		for j := range 3 {
			s.DB().Exec(fmt.Sprintf("INSERT INTO m.marks VALUES (%d)", 10*i+j))
		}
		s.DB().Exec("FLUSH BINARY LOGS")
		usecasetest.ArchiveBinlogs(t, r, s)
		keys = append(keys, sourceKey(t, s))
	}
	req := usecasetest.PointInTimeOf(r, filepath.Join(t.TempDir(), "x"))
	req.Until = "end"
	_, err := restorecase.Run(ctx, req)
	if !usecasetest.Refused(err) || !strings.Contains(err.Error(), keys[0]) || !strings.Contains(err.Error(), keys[1]) || !strings.Contains(err.Error(), "--server") {
		t.Errorf("Until with two servers: %v; want a refusal naming both and --server", err)
	}
	// The restore test of that point in time is refused alike: it was
	// asked wrongly, and tested nothing.
	if _, err := usecasetest.RestoreTestTo(t, r, pitr.Target{End: true}); !usecasetest.Refused(err) || !strings.Contains(err.Error(), "--server") {
		t.Errorf("the restore test until the end with two servers: %v; want a refusal naming --server", err)
	}
	req = usecasetest.PointInTimeOf(r, filepath.Join(t.TempDir(), "a"))
	req.Until, req.Server = "end", keys[0]
	usecasetest.Restore(t, req)
	dst := usecasetest.ServerOn(t, req.Restore.TargetDir)
	if got := ids(t, dst); got != "0,1,2" {
		t.Errorf("Server %s: rows %s, want server a's 0,1,2", keys[0], got)
	}
	var n int
	if dst.DB().QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'only_a'").Scan(&n); n != 1 {
		t.Errorf("Server %s restored another server's backup", keys[0])
	}
}

// Two servers' backups and binary logs in one repository: expire with
// KeepPITR keeps a base for each server's window (server b's older
// backup is no less needed because server a has a newer one), deletes
// only server a's files before a's kept backup, and the restore test
// until the end of the server named (Server) tests the point-in-time
// restore of that server.
func TestPerServerExpireAndVerify(t *testing.T) {
	t.Parallel()
	r := usecasetest.NewLocalRepo(t)
	a, b := sandboxtest.Start(t, sandbox.Options{}), sandboxtest.Start(t, sandbox.Options{})
	write := func(s *sandbox.Server, rows ...int) {
		for _, n := range rows {
			if _, err := s.DB().Exec(fmt.Sprintf("INSERT INTO m.marks VALUES (%d)", n)); err != nil {
				t.Fatal(err)
			}
		}
		s.DB().Exec("FLUSH BINARY LOGS")
		usecasetest.ArchiveBinlogs(t, r, s)
	}
	for _, s := range []*sandbox.Server{a, b} {
		for _, q := range []string{"CREATE DATABASE m", "CREATE TABLE m.marks (id INT PRIMARY KEY)"} {
			if _, err := s.DB().Exec(q); err != nil {
				t.Fatal(err)
			}
		}
	}
	usecasetest.Backup(t, usecasetest.BackupOf(t, r, a))
	write(a, 1, 2)
	usecasetest.Backup(t, usecasetest.BackupOf(t, r, b))
	bBackup := usecasetest.List(t, r)[1].ID
	write(b, 11, 12)
	usecasetest.Backup(t, usecasetest.BackupOf(t, r, a))
	aFile := usecasetest.List(t, r)[2].Positions.BinlogFile
	write(a, 3)
	write(b, 13)
	perSource := func() map[string][]string {
		out := map[string][]string{}
		for _, f := range usecasetest.ArchivedBinlogs(t, r) {
			out[f.Source] = append(out[f.Source], f.Name)
		}
		return out
	}
	before := perSource()
	time.Sleep(1500 * time.Millisecond) // every backup finished before the window
	res, err := usecasetest.Expire(t, r, retention.Request{Policy: retention.Policy{KeepPITR: time.Second}, Confirm: true})
	if err != nil {
		t.Fatalf("expire with KeepPITR: %v", err)
	}
	plan := res.Entries
	var kept []string
	for _, e := range usecasetest.List(t, r) {
		kept = append(kept, e.ID)
	}
	if len(kept) != 2 || kept[0] != bBackup {
		t.Errorf("after expire with KeepPITR: backups %v, want server b's %s and server a's newest\n%+v", kept, bBackup, plan)
	}
	after := perSource()
	keyA, keyB := sourceKey(t, a), sourceKey(t, b)
	if fmt.Sprint(after[keyB]) != fmt.Sprint(before[keyB]) {
		t.Errorf("expire deleted server b's binary logs: %v, had %v\n%+v", after[keyB], before[keyB], plan)
	}
	if len(after[keyA]) == len(before[keyA]) || after[keyA][0] != aFile {
		t.Errorf("server a's binary logs after expire: %v (had %v), want from %s on\n%+v", after[keyA], before[keyA], aFile, plan)
	}
	// What list --binlogs prints of each server: one block, with a
	// window from a backup.
	views := usecasetest.ListBinlogs(t, r).Overviews
	for _, key := range []string{keyA, keyB} {
		n := 0
		for _, v := range views {
			if v.Source == key && v.From.File != "" && v.FromBackup != "" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("list --binlogs: no one window of server %s from a backup: %+v", key, views)
		}
	}
	if rep, err := usecasetest.RestoreTestTo(t, r, pitr.Target{End: true, Server: keyB}); err != nil || !rep.Passed {
		t.Errorf("the restore test until the end of server %s: %+v, %v; want passed", keyB, rep, err)
	}
	req := usecasetest.PointInTimeOf(r, filepath.Join(t.TempDir(), "b"))
	req.Until, req.Server = "end", keyB
	usecasetest.Restore(t, req)
	if got := ids(t, usecasetest.ServerOn(t, req.Restore.TargetDir)); got != "11,12,13" {
		t.Errorf("Server %s after expire: rows %s, want 11,12,13", keyB, got)
	}
}
