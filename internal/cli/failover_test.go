package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/binlog"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// A failover: the primary's binary logs are archived, the primary dies,
// its replica (GTID replication, log_slave_updates) is promoted and
// written to. binlog on the new primary records that it continues the old
// one's archive after its last GTID, and a point-in-time restore from the
// old primary's backup to the end replays both, from the one into the
// other: the restored server equals the new primary, with no transaction
// lost or applied twice.
func TestBinlogFailoverByGTID(t *testing.T) {
	t.Parallel()
	primary := sandboxtest.Start(t, sandbox.Options{})
	replica := sandboxtest.Start(t, sandbox.Options{Args: []string{"--log-slave-updates=ON"}})
	exec := func(s *sandbox.Server, qs ...string) {
		t.Helper()
		for _, q := range qs {
			if _, err := s.DB().Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	exec(primary, "CREATE USER 'repl'@'%' IDENTIFIED BY 'replpw'", "GRANT REPLICATION SLAVE ON *.* TO 'repl'@'%'")
	exec(replica, fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='repl', MASTER_PASSWORD='replpw', MASTER_USE_GTID=slave_pos", primary.Port),
		"START SLAVE")
	exec(primary, "CREATE DATABASE m", "CREATE TABLE m.marks (id INT PRIMARY KEY, note VARCHAR(20))")
	for i := range 5 {
		exec(primary, fmt.Sprintf("INSERT INTO m.marks VALUES (%d, 'before backup')", i))
	}
	repoDir := newRepoDir(t)
	run(t, append([]string{"backup", "--repo", repoDir}, sandboxConn(primary)...)...).mustSucceed(t)
	for i := range 5 {
		exec(primary, fmt.Sprintf("INSERT INTO m.marks VALUES (%d, 'primary')", 10+i))
	}
	exec(primary, "UPDATE m.marks SET note = 'updated' WHERE id < 3", "FLUSH BINARY LOGS")
	run(t, append([]string{"binlog", "--repo", repoDir}, sandboxConn(primary)...)...).mustSucceed(t)
	var pos string
	primary.DB().QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var got string
		replica.DB().QueryRow("SELECT @@gtid_slave_pos").Scan(&got)
		if got == pos {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica did not reach the primary's %s (at %q)", pos, got)
		}
	}
	primary.Kill()
	exec(replica, "STOP SLAVE", "RESET SLAVE ALL")
	for i := range 5 {
		exec(replica, fmt.Sprintf("INSERT INTO m.marks VALUES (%d, 'promoted')", 20+i))
	}
	exec(replica, "DELETE FROM m.marks WHERE id = 11", "UPDATE m.marks SET note = 'after failover' WHERE id = 12", "FLUSH BINARY LOGS")

	r := run(t, append([]string{"binlog", "--repo", repoDir}, sandboxConn(replica)...)...).mustSucceed(t)
	var host string
	var id uint32
	replica.DB().QueryRow("SELECT @@hostname, @@server_id").Scan(&host, &id)
	link, err := os.ReadFile(filepath.Join(repoDir, "binlogs", binlog.SourceKey(host, id), "continues.json"))
	if err != nil || !strings.Contains(string(link), `"gtid": "`+pos+`"`) {
		t.Fatalf("binlog on the promoted replica recorded no link after GTID %s: %v\n%s\n%s", pos, err, link, r.stderr)
	}
	if list := run(t, "list", "--repo", repoDir, "--binlogs").mustSucceed(t).stdout; strings.Contains(list, "GAP") || !strings.Contains(list, "continues ") {
		t.Errorf("list --binlogs after the failover: a gap, or no link:\n%s", list)
	}
	target := filepath.Join(t.TempDir(), "target")
	run(t, "restore", "--repo", repoDir, "--until", "end", "--target-dir", target).mustSucceed(t)
	restored := usecasetest.ServerOn(t, target)
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, restored), usecasetest.Checksums(t, replica))
	var n int
	restored.DB().QueryRow("SELECT COUNT(*) FROM m.marks").Scan(&n)
	if n != 14 {
		t.Errorf("restored %d rows, want 14", n)
	}
}
