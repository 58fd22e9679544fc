package cli

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	repoDir := newRepoDir(t)
	run(t, append([]string{"backup", "--repo", repoDir}, sandboxConn(src)...)...).mustSucceed(t)

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
	run(t, "binlog", "--repo", repoDir, "--socket", src.Socket, "--user", "root", "--no-defaults").mustSucceed(t)
	if n := len(archivedBinlogs(t, repoDir)); n < 4 {
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
	until := times[3].Add(time.Second).Format(time.DateTime)
	target := filepath.Join(t.TempDir(), "until-time")
	run(t, "restore", "--repo", repoDir, "--until", until, "--target-dir", target).mustSucceed(t)
	if got := markers(target); strings.Join(got, ",") != "1,2,3" {
		t.Errorf("--until %s (between markers 3 and 4): markers %v, want 1,2,3", until, got)
	}
	// Marker 5 came after the restart, in another file.
	target = filepath.Join(t.TempDir(), "until-gtid")
	run(t, "restore", "--repo", repoDir, "--until-gtid", gtids[5], "--target-dir", target).mustSucceed(t)
	if got := markers(target); strings.Join(got, ",") != "1,2,3,4,5" {
		t.Errorf("--until-gtid %s (marker 5): markers %v, want 1..5", gtids[5], got)
	}
	res := run(t, "verify", "--repo", repoDir, "--restore-test", "--until-gtid", gtids[5], "--progress", "none")
	if res.code != ExitOK || !strings.Contains(res.stdout, "replayed to GTID "+gtids[5]) || !strings.Contains(res.stdout, "restore test passed") {
		t.Errorf("restore test of --until-gtid %s: exit %d, %v\n%s", gtids[5], res.code, res.err, res.stdout)
	}

	for _, c := range []struct{ name, until, want string }{
		{"before the backup", "2001-01-01 00:00:00", "before the first usable backup"},
		{"past the archive", times[6].Add(time.Hour).Format(time.DateTime), "past the archived binary logs"},
	} {
		target := filepath.Join(t.TempDir(), "bad")
		r := run(t, "restore", "--repo", repoDir, "--until", c.until, "--target-dir", target)
		if r.code == ExitOK || !strings.Contains(r.err.Error(), c.want) {
			t.Errorf("%s: exit %d, %v; want an error saying %q", c.name, r.code, r.err, c.want)
		}
		if _, err := os.Stat(filepath.Join(target, "ibdata1")); err == nil {
			t.Errorf("%s: a refused restore left a datadir", c.name)
		}
	}

	// A corrupted binary log object: caught while fetching it (exit 3),
	// and the restored datadir is emptied again.
	files := archivedBinlogs(t, repoDir)
	second := filepath.Join(repoDir, "binlogs", files[1].Source, files[1].Name, "streams", "00000.xbs.zst")
	data, err := os.ReadFile(second)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x40
	if err := os.WriteFile(second, data, 0o600); err != nil {
		t.Fatal(err)
	}
	target = filepath.Join(t.TempDir(), "corrupt")
	r := run(t, "restore", "--repo", repoDir, "--until-gtid", gtids[5], "--target-dir", target)
	if r.code != ExitCorrupt || !strings.Contains(r.err.Error(), files[1].Name) {
		t.Errorf("a corrupted binary log: exit %d, %v; want exit %d naming %s", r.code, r.err, ExitCorrupt, files[1].Name)
	}
	if _, err := os.Stat(filepath.Join(target, "ibdata1")); err == nil {
		t.Error("a failed point-in-time restore left a datadir that looks ready")
	}
	// A gap: the file is no longer archived at all.
	os.Remove(filepath.Join(repoDir, "binlogs", files[1].Source, files[1].Name, "manifest.json"))
	r = run(t, "restore", "--repo", repoDir, "--until-gtid", gtids[5], "--target-dir", filepath.Join(t.TempDir(), "gap"))
	if r.code == ExitOK || !strings.Contains(r.err.Error(), "gap") || !strings.Contains(r.err.Error(), files[1].Name) {
		t.Errorf("a gap in the archive: exit %d, %v; want an error naming the gap", r.code, r.err)
	}
}
