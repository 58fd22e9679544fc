package binlog_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/binlog"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/testkit"
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
	r := usecasetest.NewLocalRepo(t)
	usecasetest.Backup(t, usecasetest.BackupOf(t, r, primary))
	for i := range 5 {
		exec(primary, fmt.Sprintf("INSERT INTO m.marks VALUES (%d, 'primary')", 10+i))
	}
	exec(primary, "UPDATE m.marks SET note = 'updated' WHERE id < 3", "FLUSH BINARY LOGS")
	usecasetest.ArchiveBinlogs(t, r, primary)
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

	a := usecasetest.ArchiverOf(t, r, replica)
	var said testkit.SyncBuffer // what binlog says on stderr
	a.Log = func(msg string) { fmt.Fprintln(&said, msg) }
	if _, err := a.RunOnce(t.Context()); err != nil {
		t.Fatalf("binlog on the promoted replica: %v\n%s", err, said.String())
	}
	var host string
	var id uint32
	replica.DB().QueryRow("SELECT @@hostname, @@server_id").Scan(&host, &id)
	link := r.Read(t, "binlogs/"+binlog.SourceKey(host, id)+"/continues.json")
	if !strings.Contains(string(link), `"gtid": "`+pos+`"`) {
		t.Fatalf("binlog on the promoted replica recorded no link after GTID %s:\n%s\n%s", pos, link, said.String())
	}
	b := usecasetest.ListBinlogs(t, r)
	if list, _ := listing(t, b); strings.Contains(list, "GAP") || !strings.Contains(list, "continues ") {
		t.Errorf("list --binlogs after the failover: a gap, or no link:\n%s", list)
	}
	linked := false
	for _, v := range b.Overviews {
		if len(v.Gaps) > 0 {
			t.Errorf("list --binlogs after the failover: gaps on %s: %+v", v.Source, v.Gaps)
		}
		linked = linked || (v.Source == binlog.SourceKey(host, id) && v.Continues != nil && v.Continues.GTID == pos)
	}
	if !linked {
		t.Errorf("list --binlogs after the failover: no window of %s continues after GTID %s: %+v", binlog.SourceKey(host, id), pos, b.Overviews)
	}
	target := filepath.Join(t.TempDir(), "target")
	req := usecasetest.PointInTimeOf(r, target)
	req.Until = "end"
	usecasetest.Restore(t, req)
	restored := usecasetest.ServerOn(t, target)
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, restored), usecasetest.Checksums(t, replica))
	var n int
	restored.DB().QueryRow("SELECT COUNT(*) FROM m.marks").Scan(&n)
	if n != 14 {
		t.Errorf("restored %d rows, want 14", n)
	}
}
