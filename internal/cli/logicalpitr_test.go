package cli

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/binlog"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/storage/local"
	"github.com/backstream/backstream/internal/usecasetest"
)

// A point-in-time restore from a logical base (issue 14, item 4): a
// logical backup of a server with InnoDB and MyISAM tables and accounts,
// then inserts, an update, DDL, a MyISAM insert and a new account,
// archived. restore --until a time between the writes, and --until end,
// build a server in a new datadir whose tables and accounts are the
// source's at that moment; verify --restore-test --until end passes from
// that base; a logical load followed by restore --until end --apply-to,
// from the GTID position the load prints, reaches the end too.
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
	repoDir := newRepoDir(t)
	r := run(t, append([]string{"backup", "--repo", repoDir, "--logical"}, sandboxConn(src)...)...).mustSucceed(t)
	baseID := backupIDs(t, repoDir)[0]

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
	// Newer, but of one database only: never a base, whose binary logs
	// touch anything.
	run(t, append([]string{"backup", "--repo", repoDir, "--logical", "--database", "m"}, sandboxConn(src)...)...).mustSucceed(t)
	must("ALTER TABLE m.inno ADD COLUMN w INT NOT NULL DEFAULT 7")
	must("CREATE TABLE m.later (id INT PRIMARY KEY) ENGINE=InnoDB")
	must("INSERT INTO m.later VALUES (1)")
	must("INSERT INTO m.isam VALUES (3, 'three')")
	must("DELETE FROM m.inno WHERE id = 2")
	must("CREATE USER acct2@'localhost' IDENTIFIED BY 'two'")
	must("GRANT INSERT ON m.later TO acct2@'localhost'")
	endSums, endAccounts := usecasetest.Checksums(t, src), usecasetest.AccountDetails(t, src)+"\n"+userHosts(t, src)
	must("FLUSH BINARY LOGS")
	run(t, append([]string{"binlog", "--repo", repoDir}, sandboxConn(src)...)...).mustSucceed(t)

	for _, c := range []struct {
		until          string
		sums           map[string]string
		accounts, name string
	}{
		{mid, midSums, midAccounts, "between the writes"},
		{"end", endSums, endAccounts, "end"},
	} {
		target := filepath.Join(t.TempDir(), "dd")
		r = run(t, "restore", "--repo", repoDir, "--until", c.until, "--target-dir", target).mustSucceed(t)
		if !strings.Contains(r.stdout, "restored backup "+baseID) {
			t.Errorf("--until %s: %q; want it to start from the logical backup %s", c.until, r.stdout, baseID)
		}
		dst := usecasetest.ServerOn(t, target)
		usecasetest.CompareChecksums(t, usecasetest.Checksums(t, dst), c.sums)
		// Every account, root's too: the source's, not those
		// mariadb-install-db made, nor the replay's.
		if got := usecasetest.AccountDetails(t, dst) + "\n" + userHosts(t, dst); got != c.accounts {
			t.Errorf("--until %s (%s): accounts\n%s\nwant (as on the source)\n%s", c.until, c.name, got, c.accounts)
		}
	}

	r = run(t, "verify", "--repo", repoDir, "--restore-test", "--until", "end", "--progress", "none")
	if r.code != ExitOK || !strings.Contains(r.stdout, "backup "+baseID+" replayed to") || !strings.Contains(r.stdout, "restore test passed") {
		t.Errorf("verify --restore-test --until end from a logical base: exit %d, %v\n%s", r.code, r.err, r.stdout)
	}
	r = run(t, "restore", "--repo", repoDir, "--until", "end", "--base", "physical", "--target-dir", filepath.Join(t.TempDir(), "phys"))
	if r.code == ExitOK || !strings.Contains(r.err.Error(), "no physical backup") {
		t.Errorf("--base physical with only a logical backup: exit %d, %v; want a refusal", r.code, r.err)
	}

	// A logical load, then --apply-to from the position it prints.
	onto := sandboxtest.Start(t, sandbox.Options{NoBinlog: true})
	r = run(t, append([]string{"restore", "--repo", repoDir, baseID, "--users"}, sandboxConn(onto)...)...).mustSucceed(t)
	_, after, ok := strings.Cut(r.stdout, "GTID position of the backup: ")
	pos, _, _ := strings.Cut(after, " ")
	if !ok || pos == "" {
		t.Fatalf("the load printed no GTID position:\n%s", r.stdout)
	}
	if _, err := onto.DB().Exec("SET GLOBAL gtid_slave_pos = ?", pos); err != nil {
		t.Fatal(err)
	}
	run(t, append([]string{"restore", "--repo", repoDir, "--until", "end", "--apply-to"}, sandboxConn(onto)...)...).mustSucceed(t)
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

// backupIDs lists the backups of the repository, oldest first.
func backupIDs(t *testing.T, repoDir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(repoDir, "backups"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range entries {
		ids = append(ids, e.Name())
	}
	return ids
}

// A segment stored by binlog --follow and damaged afterwards: verify
// --restore-test --until end fails with exit 3 naming the segment, and
// restore --until end refuses it the same way, leaving no datadir.
func TestVerifyDamagedSegment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bin := buildBinary(t)
	src := sandboxtest.Start(t, sandbox.Options{})
	for _, q := range []string{"CREATE DATABASE m", "CREATE TABLE m.counter (id BIGINT PRIMARY KEY)"} {
		if _, err := src.DB().Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	repoDir := newRepoDir(t)
	run(t, append([]string{"backup", "--repo", repoDir, "--logical"}, sandboxConn(src)...)...).mustSucceed(t)
	follow := exec.Command(bin, append([]string{"binlog", "--repo", repoDir, "--follow", "--flush-interval", "1s", "--progress", "none"}, sandboxConn(src)...)...)
	var stderr bytes.Buffer
	follow.Stderr = &stderr
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	defer follow.Process.Kill()
	writes(t, src.DB(), 3*time.Second)
	time.Sleep(2 * time.Second)
	if err := follow.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := follow.Wait(); err != nil {
		t.Fatalf("binlog --follow after SIGINT: %v\n%s", err, stderr.String())
	}

	var hostname string
	var serverID uint32
	src.DB().QueryRow("SELECT @@hostname, @@server_id").Scan(&hostname, &serverID)
	b, err := local.New(repoDir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := repo.Open(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	segs, err := r.BinlogSegments(ctx, binlog.SourceKey(hostname, serverID))
	if err != nil || len(segs) < 2 {
		t.Fatalf("%d segments archived (%v); binlog --follow said:\n%s", len(segs), err, stderr.String())
	}
	// verify --binlogs reads every archived file and segment.
	res := run(t, "verify", "--repo", repoDir, "--binlogs", "--progress", "none")
	if res.code != ExitOK || !strings.Contains(res.stdout, fmt.Sprintf("%d segments, every checksum matches", len(segs))) {
		t.Errorf("verify --binlogs before any damage: exit %d, %v, %q; want OK counting %d segments", res.code, res.err, res.stdout, len(segs))
	}
	seg := segs[len(segs)-1]
	obj := filepath.Join(repoDir, filepath.FromSlash(seg.Object()))
	data, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-10] ^= 0x40 // in the binary log's bytes, after the header line
	if err := os.WriteFile(obj, data, 0o600); err != nil {
		t.Fatal(err)
	}
	named := fmt.Sprintf("segment %d..%d of binary log %s", seg.Start, seg.End, seg.Name)
	res = run(t, "verify", "--repo", repoDir, "--binlogs", "--progress", "none")
	if res.code != ExitCorrupt || !strings.Contains(errText(res.err), named) {
		t.Errorf("verify --binlogs with a damaged segment: exit %d, %v; want exit %d naming %q", res.code, res.err, ExitCorrupt, named)
	}
	res = run(t, "verify", "--repo", repoDir, "--restore-test", "--until", "end", "--progress", "none")
	if res.code != ExitCorrupt || !strings.Contains(res.stdout+errText(res.err), named) {
		t.Errorf("verify --restore-test --until end with a damaged segment: exit %d, %v; want exit %d naming %q\n%s", res.code, res.err, ExitCorrupt, named, res.stdout)
	}
	target := filepath.Join(t.TempDir(), "dd")
	res = run(t, "restore", "--repo", repoDir, "--until", "end", "--target-dir", target)
	if res.code != ExitCorrupt || !strings.Contains(errText(res.err), named) {
		t.Errorf("restore --until end with a damaged segment: exit %d, %v; want exit %d naming %q", res.code, res.err, ExitCorrupt, named)
	}
	if _, err := os.Stat(target); err == nil {
		t.Errorf("a refused restore left %s", target)
	}
}

// writes inserts rows into m.counter for d, one a few milliseconds.
func writes(t *testing.T, db *sql.DB, d time.Duration) {
	t.Helper()
	end := time.Now().Add(d)
	for id := 1; time.Now().Before(end); id++ {
		if _, err := db.Exec("INSERT INTO m.counter VALUES (?)", id); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
