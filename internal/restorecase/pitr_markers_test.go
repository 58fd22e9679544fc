package restorecase_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/pitr"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// Marker rows with known times and GTIDs, across several binary log files
// and a server restart; a restore to a time between two markers has
// exactly the markers before it, and one to a marker's GTID has it and
// those before. Targets outside the archive are refused, naming why.
func TestPointInTimeRestore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	var serverID int
	src.DB().QueryRow("SELECT @@server_id").Scan(&serverID)
	must := func(db *sql.DB, q string) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	must(src.DB(), "CREATE DATABASE m")
	must(src.DB(), "CREATE TABLE m.marks (id INT PRIMARY KEY, at DATETIME)")
	r := usecasetest.NewLocalRepo(t)
	usecasetest.Backup(t, usecasetest.BackupOf(t, r, src))

	db := src.DB()
	times := map[int]time.Time{}
	gtids := map[int]string{}
	for i := 1; i <= 6; i++ {
		time.Sleep(1100 * time.Millisecond) // binary log times have whole seconds
		must(db, fmt.Sprintf("INSERT INTO m.marks VALUES (%d, UTC_TIMESTAMP())", i))
		var at string
		db.QueryRow(fmt.Sprintf("SELECT DATE_FORMAT(at, '%%Y-%%m-%%d %%H:%%i:%%s') FROM m.marks WHERE id = %d", i)).Scan(&at)
		var err error
		if times[i], err = time.Parse(time.DateTime, at); err != nil {
			t.Fatalf("marker %d time %q: %v", i, at, err)
		}
		var g string
		db.QueryRow("SELECT @@gtid_binlog_pos").Scan(&g)
		gtids[i] = g
		switch i {
		case 2, 5:
			must(db, "FLUSH BINARY LOGS")
		case 4:
			if err := src.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			again, err := sandbox.Start(ctx, sandbox.Options{Dir: src.Dir, Args: []string{fmt.Sprintf("--server-id=%d", serverID)}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { again.Close() })
			db = again.DB()
		}
	}
	must(db, "FLUSH BINARY LOGS")
	usecasetest.ArchiveBinlogs(t, r, src) // the restarted server answers on src's socket
	if n := len(usecasetest.ArchivedBinlogs(t, r)); n < 4 {
		t.Fatalf("%d binary log files archived, want at least 4", n)
	}

	markers := func(target string) []string {
		t.Helper()
		dst := usecasetest.ServerOn(t, target)
		var ids string
		if err := dst.DB().QueryRow("SELECT COALESCE(GROUP_CONCAT(id ORDER BY id), '') FROM m.marks").Scan(&ids); err != nil {
			t.Fatal(err)
		}
		return strings.Split(ids, ",")
	}
	// Between markers 3 and 4: the second after marker 3's.
	req := usecasetest.PointInTimeOf(r, filepath.Join(t.TempDir(), "until-time"))
	req.Until = times[3].Add(time.Second).Format(time.DateTime)
	usecasetest.Restore(t, req)
	if got := markers(req.Restore.TargetDir); strings.Join(got, ",") != "1,2,3" {
		t.Errorf("Until %s (between markers 3 and 4): markers %v, want 1,2,3", req.Until, got)
	}
	// Marker 5 came after the restart, in another file.
	req = usecasetest.PointInTimeOf(r, filepath.Join(t.TempDir(), "until-gtid"))
	req.UntilGTID = gtids[5]
	usecasetest.Restore(t, req)
	if got := markers(req.Restore.TargetDir); strings.Join(got, ",") != "1,2,3,4,5" {
		t.Errorf("UntilGTID %s (marker 5): markers %v, want 1..5", gtids[5], got)
	}
	rep, err := usecasetest.RestoreTestTo(t, r, pitr.Target{GTID: gtids[5]})
	if err != nil || rep.Backup == "" || rep.Until != "GTID "+gtids[5] || !rep.Passed {
		t.Errorf("restore test to GTID %s: %+v, %v; want a backup replayed to GTID %s, passed", gtids[5], rep, err, gtids[5])
	}

	for _, c := range []struct{ name, until, want string }{
		{"before the backup", "2001-01-01 00:00:00", "before the first usable backup"},
		{"past the archive", times[6].Add(time.Hour).Format(time.DateTime), "past the archived binary logs"},
	} {
		req := usecasetest.PointInTimeOf(r, filepath.Join(t.TempDir(), "bad"))
		req.Until = c.until
		if _, err := restorecase.Run(ctx, req); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error saying %q", c.name, err, c.want)
		}
		if _, err := os.Stat(filepath.Join(req.Restore.TargetDir, "ibdata1")); err == nil {
			t.Errorf("%s: a refused restore left a datadir", c.name)
		}
	}

	// A corrupted binary log object: caught while fetching it (corrupt,
	// what the command exits 3 for), and the restored datadir is emptied
	// again.
	files := usecasetest.ArchivedBinlogs(t, r)
	dir := "binlogs/" + files[1].Source + "/" + files[1].Name
	second := dir + "/streams/00000.xbs.zst"
	data := r.Read(t, second)
	data[len(data)/2] ^= 0x40
	r.Write(t, second, data)
	req = usecasetest.PointInTimeOf(r, filepath.Join(t.TempDir(), "corrupt"))
	req.UntilGTID = gtids[5]
	_, err = restorecase.Run(ctx, req)
	if !archive.IsCorrupt(err) || usecasetest.Refused(err) || !strings.Contains(err.Error(), files[1].Name) {
		t.Errorf("a corrupted binary log: %v; want corruption naming %s", err, files[1].Name)
	}
	if _, err := os.Stat(filepath.Join(req.Restore.TargetDir, "ibdata1")); err == nil {
		t.Error("a failed point-in-time restore left a datadir that looks ready")
	}
	// A gap: the file is no longer archived at all.
	if err := r.Backend.Delete(ctx, dir+"/manifest.json"); err != nil {
		t.Fatal(err)
	}
	req = usecasetest.PointInTimeOf(r, filepath.Join(t.TempDir(), "gap"))
	req.UntilGTID = gtids[5]
	if _, err := restorecase.Run(ctx, req); err == nil || !strings.Contains(err.Error(), "gap") || !strings.Contains(err.Error(), files[1].Name) {
		t.Errorf("a gap in the archive: %v; want an error naming the gap", err)
	}
}
