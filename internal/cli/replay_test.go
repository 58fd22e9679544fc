package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/binlog"
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

// Replay keeps everything the server logged: account statements, two
// GTID domains each stopped at its own position, --until end, an RFC 3339
// time with an offset; and --apply-to replays onto a running server only
// what it lacks, once, and refuses a server that is not on the stream.
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
	repoDir := newRepoDir(t)
	run(t, append([]string{"backup", "--repo", repoDir}, sandboxConn(src)...)...).mustSucceed(t)
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
	run(t, append([]string{"binlog", "--repo", repoDir}, sandboxConn(src)...)...).mustSucceed(t)
	wantAccounts := usecasetest.AccountDetails(t, src)

	restoreTo := func(args ...string) *sandbox.Server {
		t.Helper()
		target := filepath.Join(t.TempDir(), "dd")
		run(t, append([]string{"restore", "--repo", repoDir, "--target-dir", target}, args...)...).mustSucceed(t)
		return usecasetest.ServerOn(t, target)
	}
	two := d0 + "," + d1
	dst := restoreTo("--until-gtid", two)
	if got := ids(t, dst); got != "1,2,3,4" {
		t.Errorf("--until-gtid %s: rows %s, want 1,2,3,4 (domain 0 up to row 4, domain 1 up to row 3)", two, got)
	}
	if got := usecasetest.AccountDetails(t, dst); got != wantAccounts {
		t.Errorf("--until-gtid %s: accounts\n%s\nwant (as on the source)\n%s", two, got, wantAccounts)
	}
	if got := ids(t, restoreTo("--until", "end")); got != "1,2,3,4,5,6" {
		t.Errorf("--until end: rows %s, want all", got)
	}
	t4, err := time.Parse(time.DateTime, at4)
	if err != nil {
		t.Fatal(err)
	}
	rfc := t4.Add(time.Second).In(time.FixedZone("", 2*3600)).Format(time.RFC3339)
	if got := ids(t, restoreTo("--until", rfc)); got != "1,2,3,4" {
		t.Errorf("--until %s: rows %s, want 1,2,3,4", rfc, got)
	}
	r := run(t, "restore", "--repo", repoDir, "--until-gtid", d0, "--target-dir", filepath.Join(t.TempDir(), "one-domain"))
	if r.code == ExitOK || !strings.Contains(r.err.Error(), "names no position for GTID domain 1") {
		t.Errorf("--until-gtid naming domain 0 only: exit %d, %v; want a refusal naming domain 1", r.code, r.err)
	}

	// --apply-to: a server restored from the base backup, told its position.
	base := filepath.Join(t.TempDir(), "base")
	run(t, "restore", "--repo", repoDir, "latest", "--target-dir", base, "--prepare").mustSucceed(t)
	onto, err := sandbox.Start(ctx, sandbox.Options{Dir: t.TempDir(), Datadir: base, NoBinlog: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { onto.Close() })
	apply := func(s *sandbox.Server) result {
		return run(t, append([]string{"restore", "--repo", repoDir, "--until", "end", "--apply-to"}, sandboxConn(s)...)...)
	}
	r = apply(onto)
	if r.code == ExitOK || !strings.Contains(r.err.Error(), "no GTID position") {
		t.Errorf("--apply-to a server without a position: exit %d, %v; want a refusal", r.code, r.err)
	}
	if _, err := onto.DB().Exec("SET GLOBAL gtid_slave_pos = ?", basePos); err != nil {
		t.Fatal(err)
	}
	apply(onto).mustSucceed(t)
	if got := ids(t, onto); got != "1,2,3,4,5,6" {
		t.Errorf("--apply-to: rows %s, want all", got)
	}
	if got := usecasetest.AccountDetails(t, onto); got != wantAccounts {
		t.Errorf("--apply-to: accounts\n%s\nwant\n%s", got, wantAccounts)
	}
	r = apply(onto).mustSucceed(t)
	if !strings.Contains(r.stdout, "nothing") || ids(t, onto) != "1,2,3,4,5,6" {
		t.Errorf("a second --apply-to: %q, rows %s; want nothing applied", r.stdout, ids(t, onto))
	}

	other := sandboxtest.Start(t, sandbox.Options{})
	if _, err := other.DB().Exec("CREATE DATABASE unrelated"); err != nil {
		t.Fatal(err)
	}
	var otherPos string
	other.DB().QueryRow("SELECT @@gtid_binlog_pos").Scan(&otherPos)
	r = apply(other)
	if r.code == ExitOK || !strings.Contains(r.err.Error(), "not on the archived binary logs") || !strings.Contains(r.err.Error(), otherPos) ||
		!strings.Contains(r.err.Error(), strings.Split(pos(), ",")[0]) {
		t.Errorf("--apply-to an unrelated server (at %s): exit %d, %v; want a refusal naming both positions", otherPos, r.code, r.err)
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

// A repository with two servers' backups and binary logs: --until needs
// the server named, and then takes only that server's backup and logs.
func TestPITRPerServer(t *testing.T) {
	t.Parallel()
	repoDir := newRepoDir(t)
	var keys []string
	for i, name := range []string{"a", "b"} {
		s := sandboxtest.Start(t, sandbox.Options{})
		for _, q := range []string{"CREATE DATABASE m", "CREATE TABLE m.marks (id INT PRIMARY KEY)", fmt.Sprintf("CREATE DATABASE only_%s", name)} {
			if _, err := s.DB().Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		run(t, append([]string{"backup", "--repo", repoDir}, sandboxConn(s)...)...).mustSucceed(t)
		for j := range 3 {
			s.DB().Exec(fmt.Sprintf("INSERT INTO m.marks VALUES (%d)", 10*i+j))
		}
		s.DB().Exec("FLUSH BINARY LOGS")
		run(t, append([]string{"binlog", "--repo", repoDir}, sandboxConn(s)...)...).mustSucceed(t)
		var host string
		var id uint32
		s.DB().QueryRow("SELECT @@hostname, @@server_id").Scan(&host, &id)
		keys = append(keys, binlog.SourceKey(host, id))
	}
	r := run(t, "restore", "--repo", repoDir, "--until", "end", "--target-dir", filepath.Join(t.TempDir(), "x"))
	if r.code != ExitUsage || !strings.Contains(r.err.Error(), keys[0]) || !strings.Contains(r.err.Error(), keys[1]) || !strings.Contains(r.err.Error(), "--server") {
		t.Errorf("--until with two servers: exit %d, %v; want a usage error naming both and --server", r.code, r.err)
	}
	// The restore test of that point in time is refused alike: it was
	// asked wrongly, and tested nothing.
	r = run(t, "verify", "--repo", repoDir, "--restore-test", "--until", "end")
	if r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), "--server") {
		t.Errorf("verify --restore-test --until with two servers: exit %d, %v; want a usage error naming --server", r.code, r.err)
	}
	target := filepath.Join(t.TempDir(), "a")
	run(t, "restore", "--repo", repoDir, "--until", "end", "--server", keys[0], "--target-dir", target).mustSucceed(t)
	dst := usecasetest.ServerOn(t, target)
	if got := ids(t, dst); got != "0,1,2" {
		t.Errorf("--server %s: rows %s, want server a's 0,1,2", keys[0], got)
	}
	var n int
	if dst.DB().QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'only_a'").Scan(&n); n != 1 {
		t.Errorf("--server %s restored another server's backup", keys[0])
	}
}

// Two servers' backups and binary logs in one repository: expire
// --keep-pitr keeps a base for each server's window (server b's older
// backup is no less needed because server a has a newer one), deletes
// only server a's files before a's kept backup, and verify --restore-test
// --until --server tests the point-in-time restore of the server named.
func TestPerServerExpireAndVerify(t *testing.T) {
	t.Parallel()
	repoDir := newRepoDir(t)
	a, b := sandboxtest.Start(t, sandbox.Options{}), sandboxtest.Start(t, sandbox.Options{})
	key := func(s *sandbox.Server) string {
		var host string
		var id uint32
		s.DB().QueryRow("SELECT @@hostname, @@server_id").Scan(&host, &id)
		return binlog.SourceKey(host, id)
	}
	write := func(s *sandbox.Server, rows ...int) {
		for _, n := range rows {
			if _, err := s.DB().Exec(fmt.Sprintf("INSERT INTO m.marks VALUES (%d)", n)); err != nil {
				t.Fatal(err)
			}
		}
		s.DB().Exec("FLUSH BINARY LOGS")
		run(t, append([]string{"binlog", "--repo", repoDir}, sandboxConn(s)...)...).mustSucceed(t)
	}
	for _, s := range []*sandbox.Server{a, b} {
		for _, q := range []string{"CREATE DATABASE m", "CREATE TABLE m.marks (id INT PRIMARY KEY)"} {
			if _, err := s.DB().Exec(q); err != nil {
				t.Fatal(err)
			}
		}
	}
	run(t, append([]string{"backup", "--repo", repoDir}, sandboxConn(a)...)...).mustSucceed(t)
	write(a, 1, 2)
	run(t, append([]string{"backup", "--repo", repoDir}, sandboxConn(b)...)...).mustSucceed(t)
	bBackup := backupListing(t, repoDir)[1].ID
	write(b, 11, 12)
	run(t, append([]string{"backup", "--repo", repoDir}, sandboxConn(a)...)...).mustSucceed(t)
	aFile := backupListing(t, repoDir)[2].Positions.BinlogFile
	write(a, 3)
	write(b, 13)
	perSource := func() map[string][]string {
		out := map[string][]string{}
		for _, f := range archivedBinlogs(t, repoDir) {
			out[f.Source] = append(out[f.Source], f.Name)
		}
		return out
	}
	before := perSource()
	time.Sleep(1500 * time.Millisecond) // every backup finished before the window
	out := run(t, "expire", "--repo", repoDir, "--keep-pitr", "1s", "--confirm").mustSucceed(t).stdout
	var kept []string
	for _, e := range backupListing(t, repoDir) {
		kept = append(kept, e.ID)
	}
	if len(kept) != 2 || kept[0] != bBackup {
		t.Errorf("after expire --keep-pitr: backups %v, want server b's %s and server a's newest\n%s", kept, bBackup, out)
	}
	after := perSource()
	if fmt.Sprint(after[key(b)]) != fmt.Sprint(before[key(b)]) {
		t.Errorf("expire deleted server b's binary logs: %v, had %v\n%s", after[key(b)], before[key(b)], out)
	}
	if len(after[key(a)]) == len(before[key(a)]) || after[key(a)][0] != aFile {
		t.Errorf("server a's binary logs after expire: %v (had %v), want from %s on\n%s", after[key(a)], before[key(a)], aFile, out)
	}
	list := run(t, "list", "--repo", repoDir, "--binlogs").mustSucceed(t).stdout
	for _, s := range []*sandbox.Server{a, b} {
		if strings.Count(list, "\nSERVER "+key(s)+"\n  recoverable: from backup ") != 1 {
			t.Errorf("list --binlogs: no one block of server %s with its window:\n%s", key(s), list)
		}
	}
	r := run(t, "verify", "--repo", repoDir, "--restore-test", "--until", "end", "--server", key(b))
	if r.code != ExitOK || !strings.Contains(r.stdout, "restore test passed") {
		t.Errorf("verify --restore-test --until end --server %s: exit %d, %v\n%s", key(b), r.code, r.err, r.stdout)
	}
	target := filepath.Join(t.TempDir(), "b")
	run(t, "restore", "--repo", repoDir, "--until", "end", "--server", key(b), "--target-dir", target).mustSucceed(t)
	if got := ids(t, usecasetest.ServerOn(t, target)); got != "11,12,13" {
		t.Errorf("--server %s after expire: rows %s, want 11,12,13", key(b), got)
	}
}
