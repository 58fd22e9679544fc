package binlog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/retention"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/usecasetest"
)

// listing is what `list --binlogs` prints of b: the archived files and
// each server's window on stdout, the warnings on stderr.
func listing(t *testing.T, b inventory.Binlogs) (stdout, stderr string) {
	t.Helper()
	var out, warn strings.Builder
	if err := b.WriteText(&out, &warn, false); err != nil {
		t.Fatal(err)
	}
	return out.String(), warn.String()
}

// planText is what `expire` prints of its plan res.
func planText(t *testing.T, res retention.Result) string {
	t.Helper()
	var out strings.Builder
	if err := res.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// Closed binary log files are archived byte for byte with their GTID and
// time ranges; a second run adds only what is new.
func TestBinlogArchive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := usecasetest.BinlogSource(t, 3)
	r := usecasetest.NewLocalRepo(t)
	usecasetest.ArchiveBinlogs(t, r, src)
	got := usecasetest.ArchivedBinlogs(t, r)
	if len(got) < 3 {
		t.Fatalf("%d files archived, want at least 3 (the closed ones)", len(got))
	}
	var datadir string
	src.DB().QueryRow("SELECT @@datadir").Scan(&datadir)
	rp := r.Open(t)
	entries, err := rp.Binlogs(ctx)
	if err != nil || len(entries) == 0 {
		t.Fatalf("archived binary logs: %d, %v", len(entries), err)
	}
	var ms []*archive.Manifest
	for _, e := range entries {
		if e.Damage != nil {
			t.Fatalf("%s: %v", e.Name, e.Damage)
		}
		ms = append(ms, e.Manifest)
	}
	for i, m := range ms {
		f := m.Binlog
		c := usecasetest.Payloads{}
		if err := archive.Read(ctx, archive.ReadOptions{Input: rp.BinlogInput(m), Manifest: m, Sink: c}); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		want, err := os.ReadFile(filepath.Join(datadir, f.Name))
		if err != nil {
			t.Fatal(err)
		}
		if c[f.Name] == nil || !bytes.Equal(c[f.Name].Bytes(), want) {
			t.Errorf("%s: archived content differs from the server's file", f.Name)
		}
		if !f.Closed || f.FirstTime.IsZero() || f.Size != int64(len(want)) {
			t.Errorf("%s: index %+v", f.Name, f)
		}
		if i > 0 && f.FirstGTID != "" && ms[i-1].Binlog.LastGTID != "" {
			if next, prev := usecasetest.SeqOf(t, f.FirstGTID), usecasetest.SeqOf(t, ms[i-1].Binlog.LastGTID); next != prev+1 {
				t.Errorf("%s starts at GTID %s, the file before ends at %s", f.Name, f.FirstGTID, ms[i-1].Binlog.LastGTID)
			}
		}
	}
	if _, err := src.DB().Exec("INSERT INTO m.marks (at) VALUES (NOW(6))"); err != nil {
		t.Fatal(err)
	}
	src.DB().Exec("FLUSH BINARY LOGS")
	// What this run archived, as binlog --json prints it: one object.
	printed, err := json.Marshal(usecasetest.ArchiveBinlogs(t, r, src))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Archived []struct {
			Source      string `json:"source"`
			Name        string `json:"name"`
			Size        int64  `json:"size"`
			LastGTID    string `json:"last_gtid"`
			StoredBytes int64  `json:"stored_bytes"`
		} `json:"archived"`
		Files       int    `json:"files"`
		Bytes       int64  `json:"bytes"`
		StoredBytes int64  `json:"stored_bytes"`
		LagBytes    *int64 `json:"lag_bytes"`
	}
	if err := json.Unmarshal(printed, &res); err != nil {
		t.Fatalf("binlog --json: %v\n%s", err, printed)
	}
	again := usecasetest.ArchivedBinlogs(t, r)
	if len(again) != len(got)+1 {
		t.Fatalf("second run: %d files, want %d", len(again), len(got)+1)
	}
	last := again[len(again)-1]
	if a := res.Archived; res.Files != 1 || len(a) != 1 || a[0].Name != last.Name || a[0].Source != last.Source || a[0].Size != last.Size ||
		a[0].LastGTID != last.LastGTID || a[0].StoredBytes <= 0 || res.Bytes != last.Size || res.StoredBytes != a[0].StoredBytes ||
		res.LagBytes == nil || *res.LagBytes <= 0 {
		t.Errorf("binlog --json printed %+v, want %s archived (%d bytes) and the active file's bytes as the lag", res, last.Name, last.Size)
	}
	b := usecasetest.ListBinlogs(t, r)
	out, _ := listing(t, b)
	if !strings.Contains(out, got[0].Name) || strings.Contains(out, "GAP") {
		t.Errorf("list --binlogs:\n%s", out)
	}
	for _, v := range b.Overviews {
		if len(v.Gaps) > 0 {
			t.Errorf("gaps recorded on %s: %+v", v.Source, v.Gaps)
		}
	}
}

// --follow archives each file as the server moves on, survives a server
// restart, and stops cleanly when stopped (SIGINT).
func TestBinlogFollow(t *testing.T) {
	t.Parallel()
	src := usecasetest.BinlogSource(t, 1)
	r := usecasetest.NewLocalRepo(t)
	a := usecasetest.ArchiverOf(t, r, src)
	var said testkit.SyncBuffer // what binlog --follow says
	a.Log = func(msg string) { fmt.Fprintln(&said, msg) }
	stop := usecasetest.Follow(t, a)
	waitFiles := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if len(usecasetest.ArchivedBinlogs(t, r)) >= n {
				return
			}
		}
		t.Fatalf("fewer than %d files archived after a minute; binlog --follow said:\n%s", n, said.String())
	}
	waitFiles(1)
	n := len(usecasetest.ArchivedBinlogs(t, r))
	for i := range 2 {
		src.DB().Exec(fmt.Sprintf("INSERT INTO m.marks (at) VALUES (NOW(6)) /* %d */", i))
		src.DB().Exec("FLUSH BINARY LOGS")
	}
	waitFiles(n + 2)

	// A restart of the server (same datadir, server_id and socket): the
	// archiver reconnects and goes on.
	var serverID int
	src.DB().QueryRow("SELECT @@server_id").Scan(&serverID)
	if err := src.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	again, err := sandbox.Start(context.Background(), sandbox.Options{Dir: src.Dir, Args: []string{fmt.Sprintf("--server-id=%d", serverID)}})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if again.Socket != src.Socket {
		t.Fatalf("the restarted server listens on %s, not %s", again.Socket, src.Socket)
	}
	n = len(usecasetest.ArchivedBinlogs(t, r))
	again.DB().Exec("INSERT INTO m.marks (at) VALUES (NOW(6))")
	again.DB().Exec("FLUSH BINARY LOGS")
	// The stop event closed the file that was active, the restart opened
	// one that the flush closed: both archived.
	waitFiles(n + 2)
	if err := stop(); err != nil {
		t.Errorf("binlog --follow stopped: %v\n%s", err, said.String())
	}
}

// A damaged manifest of one archived binary log file affects only that
// file: list --binlogs names it with the reason and lists the rest,
// binlog archives on after it, expire --keep-pitr keeps it and deletes
// only what it would without it, and a point-in-time restore is damage
// (exit 3) naming it only when its replay needs that file.
func TestDamagedBinlogManifestIsContained(t *testing.T) {
	t.Parallel()
	src := usecasetest.BinlogSource(t, 2) // files before the backup, for expire to delete
	r := usecasetest.NewLocalRepo(t)
	usecasetest.Backup(t, usecasetest.BackupOf(t, r, src))
	backupFile := usecasetest.List(t, r)[0].Positions.BinlogFile
	var gtids []string
	for i := range 3 {
		if _, err := src.DB().Exec(fmt.Sprintf("INSERT INTO m.marks (at) VALUES (NOW(6)) /* %d */", i)); err != nil {
			t.Fatal(err)
		}
		var g string
		src.DB().QueryRow("SELECT @@gtid_binlog_pos").Scan(&g)
		gtids = append(gtids, g)
		src.DB().Exec("FLUSH BINARY LOGS")
	}
	usecasetest.ArchiveBinlogs(t, r, src)
	before := usecasetest.ArchivedBinlogs(t, r)
	var damaged archive.BinlogFile
	for i, f := range before {
		if f.Name == backupFile && i+1 < len(before) {
			damaged = before[i+1] // the file after the backup's: holds gtids[1]
		}
	}
	if damaged.Name == "" || damaged.LastGTID != gtids[1] {
		t.Fatalf("no archived file after the backup's %s ending at %s: %+v", backupFile, gtids[1], before)
	}
	// A changed GTID: still JSON, still a valid manifest, but not the
	// bytes its checksum covers.
	object := "binlogs/" + damaged.Source + "/" + damaged.Name + "/manifest.json"
	data := r.Read(t, object)
	wrong := gtids[1][:len(gtids[1])-1] + string('0'+(gtids[1][len(gtids[1])-1]-'0'+1)%10)
	bad := bytes.ReplaceAll(data, []byte(`"`+gtids[1]+`"`), []byte(`"`+wrong+`"`))
	if bytes.Equal(bad, data) {
		t.Fatalf("%s does not hold %s", object, gtids[1])
	}
	r.Write(t, object, bad)

	b := usecasetest.ListBinlogs(t, r)
	out, warn := listing(t, b)
	for _, f := range before {
		if !strings.Contains(out, f.Name) {
			t.Errorf("list --binlogs leaves out %s:\n%s", f.Name, out)
		}
	}
	if !strings.Contains(out, "DAMAGED") || !strings.Contains(warn, object) || !strings.Contains(warn, "checksum mismatch") {
		t.Errorf("list --binlogs does not show %s as damaged with the reason:\n%s\n%s", object, out, warn)
	}
	for _, f := range b.Files {
		if isDamaged := f.Damage != nil && strings.Contains(f.Damage.Error(), object) && strings.Contains(f.Damage.Error(), "checksum mismatch"); (f.Name == damaged.Name) != isDamaged {
			t.Errorf("list --binlogs: %s damaged: %v", f.Name, f.Damage)
		}
	}
	for _, e := range b.Entries() {
		if (e.Name == damaged.Name) != (e.Damaged && strings.Contains(e.Damage, object)) {
			t.Errorf("list --binlogs --json: %s damaged %v (%s)", e.Name, e.Damaged, e.Damage)
		}
	}

	// binlog goes on after it.
	src.DB().Exec("INSERT INTO m.marks (at) VALUES (NOW(6))")
	src.DB().Exec("FLUSH BINARY LOGS")
	usecasetest.ArchiveBinlogs(t, r, src)
	if again := usecasetest.ArchivedBinlogs(t, r); len(again) != len(before)+1 {
		t.Errorf("binlog after the damage: %d files, want %d", len(again), len(before)+1)
	}

	// A restore whose replay ends before the damaged file works; one
	// that needs it is damage naming it, and writes nothing.
	req := usecasetest.PointInTimeOf(r, filepath.Join(t.TempDir(), "before"))
	req.UntilGTID = gtids[0]
	usecasetest.Restore(t, req)
	target := filepath.Join(t.TempDir(), "through")
	req = usecasetest.PointInTimeOf(r, target)
	req.UntilGTID = gtids[2]
	if _, err := restorecase.Run(context.Background(), req); !archive.IsCorrupt(err) || usecasetest.Refused(err) || !strings.Contains(err.Error(), object) {
		t.Errorf("restore through the damaged file: %v; want damage (exit 3) naming %s", err, object)
	}
	if _, err := os.Stat(filepath.Join(target, "ibdata1")); err == nil {
		t.Error("a refused point-in-time restore wrote a datadir")
	}

	res, err := usecasetest.Expire(t, r, retention.Request{Policy: retention.Policy{KeepPITR: time.Hour}, Confirm: true})
	if err != nil {
		t.Fatalf("expire --keep-pitr 1h: %v", err)
	}
	plan := planText(t, res)
	if !strings.Contains(plan, damaged.Name) || !strings.Contains(plan, "damaged manifest") {
		t.Errorf("expire's plan does not say why %s is kept:\n%s", damaged.Name, plan)
	}
	kept := false
	for _, e := range res.Entries {
		kept = kept || (e.ID == damaged.Source+"/"+damaged.Name && e.Keep && !e.Deleted && e.Damaged != "" &&
			strings.Contains(strings.Join(e.Reasons, ", "), "damaged manifest"))
	}
	if !kept {
		t.Errorf("expire's plan does not keep %s for its damaged manifest: %+v", damaged.Name, res.Entries)
	}
	if got := r.Read(t, object); !bytes.Equal(got, bad) {
		t.Error("expire changed the damaged manifest")
	}
	after := map[string]bool{}
	for _, f := range usecasetest.ArchivedBinlogs(t, r) {
		after[f.Name] = true
	}
	for _, f := range before {
		if want := f.Name >= backupFile; after[f.Name] != want {
			t.Errorf("after expire --keep-pitr: %s kept %v, want %v\n%s", f.Name, after[f.Name], want, plan)
		}
	}
}

// A file the server never closed (it was killed while writing it) is
// archived whole once the server has moved on to a newer file, as the
// server has it, marked not closed; archiving goes on after it.
func TestBinlogArchivesFileLeftOpenByCrash(t *testing.T) {
	t.Parallel()
	src := usecasetest.BinlogSource(t, 1)
	var serverID int
	src.DB().QueryRow("SELECT @@server_id").Scan(&serverID)
	if _, err := src.DB().Exec("INSERT INTO m.marks (at) VALUES (NOW(6))"); err != nil {
		t.Fatal(err)
	}
	var crashed string
	src.DB().QueryRow("SHOW MASTER STATUS").Scan(&crashed, new(int64), new(string), new(string))
	src.Kill()
	again, err := sandbox.Start(context.Background(), sandbox.Options{Dir: src.Dir, Args: []string{fmt.Sprintf("--server-id=%d", serverID)}})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	again.DB().Exec("INSERT INTO m.marks (at) VALUES (NOW(6))")
	again.DB().Exec("FLUSH BINARY LOGS")
	r := usecasetest.NewLocalRepo(t)
	usecasetest.ArchiveBinlogs(t, r, again)
	var found *archive.BinlogFile
	files := usecasetest.ArchivedBinlogs(t, r)
	for i, f := range files {
		if f.Name == crashed {
			found = &files[i]
		}
	}
	if found == nil || found.Closed || found.LastGTID == "" {
		t.Fatalf("the file left open by the crash, %s: %+v; archived: %+v", crashed, found, files)
	}
	if last := files[len(files)-1]; last.Name <= crashed || !last.Closed {
		t.Errorf("nothing closed archived after %s: %+v", crashed, files)
	}
}
