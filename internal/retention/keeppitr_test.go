package retention_test

import (
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/retention"
	"github.com/backstream/backstream/internal/usecasetest"
)

// expire --keep-pitr deletes the archived binary logs before the oldest
// kept backup's position and keeps the rest; binlog does not bring the
// deleted ones back while the server still has them.
func TestExpireKeepPITR(t *testing.T) {
	t.Parallel()
	src := usecasetest.BinlogSource(t, 2) // files 1 and 2 closed before the backup
	r := usecasetest.NewLocalRepo(t)
	usecasetest.Backup(t, usecasetest.BackupOf(t, r, src))
	backupFile := usecasetest.List(t, r)[0].Positions.BinlogFile
	src.DB().Exec("INSERT INTO m.marks (at) VALUES (NOW(6))")
	src.DB().Exec("FLUSH BINARY LOGS")
	usecasetest.ArchiveBinlogs(t, r, src)
	before := usecasetest.ArchivedBinlogs(t, r)

	res, err := usecasetest.Expire(t, r, retention.Request{Policy: retention.Policy{KeepPITR: time.Hour}, Confirm: true})
	if err != nil {
		t.Fatalf("expire --keep-pitr 1h: %v", err)
	}
	var plan strings.Builder // what expire prints
	if err := res.WriteText(&plan); err != nil {
		t.Fatal(err)
	}
	after := usecasetest.ArchivedBinlogs(t, r)
	var deleted int
	for _, f := range before {
		if f.Name < backupFile {
			deleted++
		}
	}
	if deleted == 0 {
		t.Fatalf("no archived file before the backup's %s: the test proves nothing (%v)", backupFile, before)
	}
	if len(after) != len(before)-deleted || after[0].Name != backupFile {
		t.Errorf("after expire --keep-pitr: %d files starting at %s, want %d starting at %s\n%s", len(after), after[0].Name, len(before)-deleted, backupFile, plan.String())
	}
	if n := len(usecasetest.List(t, r)); n != 1 {
		t.Errorf("%d backups after expire, want 1", n)
	}
	usecasetest.ArchiveBinlogs(t, r, src)
	if again := usecasetest.ArchivedBinlogs(t, r); len(again) != len(after) {
		t.Errorf("binlog re-archived expired files: %d files, want %d", len(again), len(after))
	}
}
