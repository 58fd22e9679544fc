package binlog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/binlog"
	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/usecasetest"
)

// Binary logs purged on the source while binlog was not running: the next
// run fails (exit 1) naming the missing files and records a gap marker;
// list --binlogs shows it; a restore past it fails before writing
// anything, naming it; --allow-gap archives on past it, and the restore
// is still refused, naming the recorded gap.
func TestBinlogGapPurged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := usecasetest.BinlogSource(t, 1)
	r := usecasetest.NewLocalRepo(t)
	usecasetest.Backup(t, usecasetest.BackupOf(t, r, src))
	usecasetest.ArchiveBinlogs(t, r, src)
	before := usecasetest.ArchivedBinlogs(t, r)
	newest := before[len(before)-1].Name

	// Three files written and purged while binlog is not running.
	for range 3 {
		src.DB().Exec("INSERT INTO m.marks (at) VALUES (NOW(6))")
		src.DB().Exec("FLUSH BINARY LOGS")
	}
	var current string
	var pos int64
	if err := src.DB().QueryRow("SHOW MASTER STATUS").Scan(&current, &pos, new(string), new(string)); err != nil {
		t.Fatal(err)
	}
	// The server keeps a file until its binlog checkpoint passes it:
	// purge until it has gone.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if _, err := src.DB().Exec("PURGE BINARY LOGS TO '" + current + "'"); err != nil {
			t.Fatal(err)
		}
		var oldest string
		if err := src.DB().QueryRow("SHOW BINARY LOGS").Scan(&oldest, new(int64)); err != nil {
			t.Fatal(err)
		}
		if oldest == current {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("PURGE BINARY LOGS TO %s leaves %s", current, oldest)
		}
	}
	base := strings.TrimSuffix(newest, filepath.Ext(newest))
	var n, cur int
	fmt.Sscanf(filepath.Ext(newest), ".%d", &n)
	fmt.Sscanf(filepath.Ext(current), ".%d", &cur)
	if cur < n+3 {
		t.Fatalf("the server is at %s, the archive at %s: want at least two files between", current, newest)
	}
	missing := fmt.Sprintf("%s.%06d .. %s.%06d", base, n+1, base, cur-1)

	_, err := usecasetest.ArchiverOf(t, r, src).RunOnce(ctx)
	var gapErr *binlog.GapError
	if !usecasetest.Failed(err) || !errors.As(err, &gapErr) || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "--allow-gap") {
		t.Fatalf("binlog after a purge: %v; want a gap (exit 1) naming %s and --allow-gap", err, missing)
	}
	marker := "binlogs/" + before[0].Source + "/gaps/" + current + ".json"
	data := r.Read(t, marker)
	var g struct{ After, Before, Missing string }
	if err := json.Unmarshal(data, &g); err != nil || g.After != newest || g.Before != current || g.Missing != missing {
		t.Errorf("gap marker %s: %+v, %v", data, g, err)
	}
	if got := usecasetest.ArchivedBinlogs(t, r); len(got) != len(before) {
		t.Errorf("binlog archived past the gap without --allow-gap: %d files, had %d", len(got), len(before))
	}
	b := usecasetest.ListBinlogs(t, r)
	list, _ := listing(t, b)
	if !strings.Contains(list, "GAP: "+missing+" were purged on the server before they were archived") {
		t.Errorf("list --binlogs does not show the gap:\n%s", list)
	}
	if len(b.Overviews) != 1 || len(b.Overviews[0].Gaps) != 1 || b.Overviews[0].Gaps[0].Missing != missing || b.Overviews[0].Gaps[0].Allowed ||
		b.Overviews[0].Gaps[0].Object() != marker {
		t.Errorf("list --binlogs: windows %+v; want one gap of %s at %s, not allowed", b.Overviews, missing, marker)
	}

	refused := func(what string) {
		t.Helper()
		target := filepath.Join(t.TempDir(), "target")
		req := usecasetest.PointInTimeOf(r, target)
		req.Until = "end"
		if _, err := restorecase.Run(ctx, req); err == nil || !strings.Contains(err.Error(), marker) || !strings.Contains(err.Error(), missing) {
			t.Errorf("%s: restore --until end: %v; want a refusal naming the gap %s", what, err, marker)
		}
		if entries, _ := os.ReadDir(target); len(entries) > 0 {
			t.Errorf("%s: the refused restore wrote %d entries into the target", what, len(entries))
		}
	}
	refused("gap not allowed")

	src.DB().Exec("INSERT INTO m.marks (at) VALUES (NOW(6))")
	src.DB().Exec("FLUSH BINARY LOGS")
	a := usecasetest.ArchiverOf(t, r, src)
	a.AllowGap = true
	var said testkit.SyncBuffer // what binlog says on stderr
	a.Log = func(msg string) { fmt.Fprintln(&said, msg) }
	if _, err := a.RunOnce(ctx); err != nil || !strings.Contains(said.String(), missing) {
		t.Fatalf("binlog --allow-gap: %v; want success and a warning naming %s:\n%s", err, missing, said.String())
	}
	b = usecasetest.ListBinlogs(t, r)
	list, _ = listing(t, b)
	if !strings.Contains(list, current) || !strings.Contains(list, "GAP: "+missing) || !strings.Contains(list, "archived on past it (--allow-gap)") {
		t.Errorf("list --binlogs after --allow-gap:\n%s", list)
	}
	if len(b.Overviews) != 1 || len(b.Overviews[0].Gaps) != 1 || !b.Overviews[0].Gaps[0].Allowed {
		t.Errorf("list --binlogs after --allow-gap: windows %+v; want the gap allowed", b.Overviews)
	}
	refused("gap allowed")
	// The gap was allowed: a later run goes on without --allow-gap.
	usecasetest.ArchiveBinlogs(t, r, src)
}

// A source killed (SIGKILL) and restarted on the same datadir while
// binlog --follow runs: it reconnects, reports its lag in --progress json,
// list --binlogs shows the window and the lag; after it is stopped, a
// later run archives the rest, and a restore to the end equals the source:
// no gap, no duplicate.
func TestBinlogFollowSourceKilled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := usecasetest.BinlogSource(t, 1)
	var serverID int
	src.DB().QueryRow("SELECT @@server_id").Scan(&serverID)
	r := usecasetest.NewLocalRepo(t)
	usecasetest.Backup(t, usecasetest.BackupOf(t, r, src))
	// binlog --follow --flush-interval 200ms --progress json: its
	// progress, lag and what it says go to the tracker (Archiver.Track,
	// as the command wires them).
	a := usecasetest.ArchiverOf(t, r, src)
	a.FlushInterval = 200 * time.Millisecond
	var stderr usecasetest.JSONProgress
	tr := stderr.Tracker("binlog", 0)
	a.Track(tr)
	stop := usecasetest.Follow(t, a)
	for i := range 20 {
		src.DB().Exec(fmt.Sprintf("INSERT INTO m.marks (at) VALUES (NOW(6)) /* before %d */", i))
	}
	usecasetest.WaitFor(t, "a segment or file archived", &stderr.SyncBuffer, func() bool {
		segs, _ := filepath.Glob(filepath.Join(r.Location, "binlogs", "*", "*", "segments", "*.seg"))
		return len(segs) > 0
	})
	src.Kill()
	again, err := sandbox.Start(ctx, sandbox.Options{Dir: src.Dir, Args: []string{fmt.Sprintf("--server-id=%d", serverID)}})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	for i := range 20 {
		if _, err := again.DB().Exec(fmt.Sprintf("INSERT INTO m.marks (at) VALUES (NOW(6)) /* after %d */", i)); err != nil {
			t.Fatal(err)
		}
	}
	// A lag measure after the restart, caught up: the follower
	// reconnected and holds what the restarted server wrote.
	usecasetest.WaitFor(t, "a progress event caught up after the restart", &stderr.SyncBuffer, func() bool {
		lines := strings.Split(stderr.String(), "\n")
		for i := len(lines) - 1; i >= 0; i-- {
			var e struct {
				Event      string   `json:"event"`
				LagSeconds *float64 `json:"lag_seconds"`
				LagBytes   *int64   `json:"lag_bytes"`
			}
			if json.Unmarshal([]byte(lines[i]), &e) == nil && e.Event == "progress" && e.LagBytes != nil && e.LagSeconds != nil {
				return *e.LagBytes == 0 && *e.LagSeconds == 0 && strings.Contains(stderr.String(), "reconnecting")
			}
		}
		return false
	})
	b := usecasetest.ListBinlogs(t, r)
	list, _ := listing(t, b)
	if !strings.Contains(list, "recoverable: from backup ") || !strings.Contains(list, "lag: ") || !strings.Contains(list, "binlog --follow, measured") {
		t.Errorf("list --binlogs does not show the window and the lag:\n%s", list)
	}
	checkStatusJSON(t, b)
	err = stop()
	tr.Finish(err)
	if err != nil {
		t.Errorf("binlog --follow stopped: %v\n%s", err, stderr.String())
	}
	// Stopped, the follower says so: its last lag is not shown as live.
	if out, err := json.Marshal(usecasetest.ListBinlogs(t, r).JSON(true)); err != nil || !strings.Contains(string(out), `"following":false`) {
		t.Errorf("after binlog --follow stopped, list --binlogs --status --json: %v\n%s\nwant following false", err, out)
	}
	for i := range 5 {
		again.DB().Exec(fmt.Sprintf("INSERT INTO m.marks (at) VALUES (NOW(6)) /* later %d */", i))
	}
	again.DB().Exec("FLUSH BINARY LOGS")
	usecasetest.ArchiveBinlogs(t, r, again)
	b = usecasetest.ListBinlogs(t, r)
	if list, _ := listing(t, b); strings.Contains(list, "GAP") {
		t.Errorf("a gap after a restart of the source:\n%s", list)
	}
	for _, v := range b.Overviews {
		if len(v.Gaps) > 0 || len(v.Breaks) > 0 {
			t.Errorf("a gap after a restart of the source on %s: gaps %+v, breaks %+v", v.Source, v.Gaps, v.Breaks)
		}
	}
	target := filepath.Join(t.TempDir(), "target")
	req := usecasetest.PointInTimeOf(r, target)
	req.Until = "end"
	restored := usecasetest.Restore(t, req)
	if restored.PointInTime == nil {
		t.Fatalf("restore --until end: %+v, not a point in time", restored)
	}
	// What restore --until end --json prints of it.
	out, err := json.Marshal(restored.PointInTime.JSON())
	var res struct {
		Backup  string   `json:"backup"`
		Binlogs []string `json:"binlogs"`
		Target  string   `json:"target"`
	}
	if err == nil {
		err = json.Unmarshal(out, &res)
	}
	if err != nil || res.Backup == "" || len(res.Binlogs) == 0 || res.Target != target {
		t.Errorf("restore --until end --json: %v, %+v:\n%s", err, res, out)
	}
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, usecasetest.ServerOn(t, target)), usecasetest.Checksums(t, again))
}

// checkStatusJSON checks that list --binlogs --status --json gives, for
// the one server archived while binlog --follow runs, what the text shows:
// the window from the backup to the newest segment, with times and GTIDs,
// the lag measured by the follower, and the file held only as segments.
func checkStatusJSON(t *testing.T, b inventory.Binlogs) {
	t.Helper()
	out, err := json.Marshal(b.JSON(true))
	if err != nil {
		t.Fatal(err)
	}
	var views []struct {
		Source     string `json:"source"`
		FromBackup string `json:"from_backup"`
		From, To   struct {
			File string    `json:"file"`
			Time time.Time `json:"time"`
			GTID string    `json:"gtid"`
		}
		Status *struct {
			Updated    time.Time `json:"updated"`
			Following  bool      `json:"following"`
			LagSeconds *float64  `json:"lag_seconds"`
			LagBytes   *int64    `json:"lag_bytes"`
		} `json:"status"`
		SegmentOnly []struct {
			File     string `json:"file"`
			End      int64  `json:"end"`
			Segments int    `json:"segments"`
		} `json:"segment_only"`
	}
	if err := json.Unmarshal(out, &views); err != nil {
		t.Fatalf("list --binlogs --status --json: %v\n%s", err, out)
	}
	if len(views) != 1 {
		t.Fatalf("list --binlogs --status --json: %d servers, want 1:\n%s", len(views), out)
	}
	v := views[0]
	// Event times are whole seconds; the backup's, where the window
	// starts, is not.
	if v.FromBackup == "" || v.From.GTID == "" || v.From.Time.IsZero() || v.To.GTID == "" || v.To.Time.Before(v.From.Time.Truncate(time.Second)) || v.To.File < v.From.File {
		t.Errorf("list --binlogs --status --json: window:\n%s", out)
	}
	if s := v.Status; s == nil || !s.Following || s.Updated.IsZero() || s.LagSeconds == nil || s.LagBytes == nil {
		t.Errorf("list --binlogs --status --json: status:\n%s", out)
	}
	if n := len(v.SegmentOnly); n == 0 || v.SegmentOnly[n-1].File != v.To.File || v.SegmentOnly[n-1].End <= 0 || v.SegmentOnly[n-1].Segments == 0 {
		t.Errorf("list --binlogs --status --json: no file held only as segments up to the window's end:\n%s", out)
	}
}

// A server restarted with another server_id carries on its history under
// a new source key: the archive cannot be continuous across it, so the
// next binlog run records the gap and stops unless --allow-gap. Another
// server that merely shares the host (its own GTIDs) starts a series of
// its own, with no gap.
func TestBinlogServerIDChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := usecasetest.BinlogSource(t, 1)
	other := usecasetest.BinlogSource(t, 1)
	r := usecasetest.NewLocalRepo(t)
	usecasetest.ArchiveBinlogs(t, r, src)
	usecasetest.ArchiveBinlogs(t, r, other)

	if err := src.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := sandbox.Start(ctx, sandbox.Options{Dir: src.Dir, Args: []string{"--server-id=4242"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { again.Close() })
	again.DB().Exec("INSERT INTO m.marks (at) VALUES (NOW(6))")
	again.DB().Exec("FLUSH BINARY LOGS")
	// The files the old server_id wrote are gone from the server's list.
	var current string
	again.DB().QueryRow("SHOW MASTER STATUS").Scan(&current, new(int64), new(string), new(string))
	again.DB().Exec("PURGE BINARY LOGS TO '" + current + "'")
	if _, err := usecasetest.ArchiverOf(t, r, again).RunOnce(ctx); err == nil || !strings.Contains(err.Error(), "server_id changed to 4242") || !strings.Contains(err.Error(), "--allow-gap") {
		t.Errorf("binlog after a server_id change: %v; want a refusal naming the change and --allow-gap", err)
	}
}

// RESET MASTER makes the server number its binary logs from 000001 again:
// names the archive already holds, with other transactions. The next
// binlog run refuses (--allow-gap or not) rather than take the new files
// for archived ones and silently leave them out.
func TestBinlogNumberingRestarted(t *testing.T) {
	t.Parallel()
	src := usecasetest.BinlogSource(t, 2)
	r := usecasetest.NewLocalRepo(t)
	usecasetest.ArchiveBinlogs(t, r, src)
	before := usecasetest.ArchivedBinlogs(t, r)
	for _, q := range []string{"RESET MASTER", "INSERT INTO m.marks (at) VALUES (NOW(6))", "FLUSH BINARY LOGS"} {
		if _, err := src.DB().Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, allowGap := range []bool{false, true} {
		a := usecasetest.ArchiverOf(t, r, src)
		a.AllowGap = allowGap
		if _, err := a.RunOnce(context.Background()); err == nil || !strings.Contains(err.Error(), "numbering went back") {
			t.Errorf("binlog (--allow-gap %v) after RESET MASTER: %v; want a refusal saying the numbering went back", allowGap, err)
		}
	}
	if after := usecasetest.ArchivedBinlogs(t, r); len(after) != len(before) {
		t.Errorf("%d archived files after the refusals, %d before", len(after), len(before))
	}
}
