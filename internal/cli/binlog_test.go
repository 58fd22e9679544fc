package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/storage/local"
	"github.com/backstream/backstream/internal/usecasetest"
	"github.com/backstream/backstream/internal/xbstream"
)

// collect keeps the content of every file of a stream.
type collect map[string]*bytes.Buffer

func (c collect) Chunk(ch *xbstream.Chunk) error {
	if ch.Type == xbstream.TypePayload {
		if c[ch.Path] == nil {
			c[ch.Path] = &bytes.Buffer{}
		}
		c[ch.Path].Write(ch.Payload)
	}
	return nil
}

// Closed binary log files are archived byte for byte with their GTID and
// time ranges; a second run adds only what is new.
func TestBinlogArchive(t *testing.T) {
	t.Parallel()
	src := usecasetest.BinlogSource(t, 3)
	repoDir := newRepoDir(t)
	run(t, append([]string{"binlog", "--repo", repoDir}, sandboxConn(src)...)...).mustSucceed(t)
	got := archivedBinlogs(t, repoDir)
	if len(got) < 3 {
		t.Fatalf("%d files archived, want at least 3 (the closed ones)", len(got))
	}
	var datadir string
	src.DB().QueryRow("SELECT @@datadir").Scan(&datadir)
	b, _ := local.New(repoDir)
	r, err := repo.Open(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := r.Binlogs(context.Background())
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
		c := collect{}
		if err := archive.Read(context.Background(), archive.ReadOptions{Input: r.BinlogInput(m), Manifest: m, Sink: c}); err != nil {
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
	// binlog --json: what this run archived, one object.
	out := run(t, append([]string{"binlog", "--repo", repoDir, "--json"}, sandboxConn(src)...)...).mustSucceed(t).stdout
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
	decodeOne(t, "binlog --json", out, &res)
	again := archivedBinlogs(t, repoDir)
	if len(again) != len(got)+1 {
		t.Fatalf("second run: %d files, want %d", len(again), len(got)+1)
	}
	last := again[len(again)-1]
	if a := res.Archived; res.Files != 1 || len(a) != 1 || a[0].Name != last.Name || a[0].Source != last.Source || a[0].Size != last.Size ||
		a[0].LastGTID != last.LastGTID || a[0].StoredBytes <= 0 || res.Bytes != last.Size || res.StoredBytes != a[0].StoredBytes ||
		res.LagBytes == nil || *res.LagBytes <= 0 {
		t.Errorf("binlog --json printed %+v, want %s archived (%d bytes) and the active file's bytes as the lag", res, last.Name, last.Size)
	}
	if r := run(t, "binlog", "--repo", repoDir, "--follow", "--json"); r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), "binlog --follow runs until stopped") {
		t.Errorf("binlog --follow --json: exit %d, %v; want refused", r.code, r.err)
	}
	out = run(t, "list", "--repo", repoDir, "--binlogs").mustSucceed(t).stdout
	if !strings.Contains(out, got[0].Name) || strings.Contains(out, "GAP") {
		t.Errorf("list --binlogs:\n%s", out)
	}
}

// --follow archives each file as the server moves on, survives a server
// restart, and stops cleanly on SIGINT.
func TestBinlogFollow(t *testing.T) {
	t.Parallel()
	src := usecasetest.BinlogSource(t, 1)
	repoDir := newRepoDir(t)
	bin := buildBinary(t)
	cmd := exec.Command(bin, append([]string{"binlog", "--repo", repoDir, "--follow", "--progress", "none"}, sandboxConn(src)...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFiles := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			// The repository appears with the first file.
			if _, err := os.Stat(repoDir); err == nil && len(archivedBinlogs(t, repoDir)) >= n {
				return
			}
		}
		t.Fatalf("fewer than %d files archived after a minute; stderr:\n%s", n, stderr.String())
	}
	waitFiles(1)
	n := len(archivedBinlogs(t, repoDir))
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
	n = len(archivedBinlogs(t, repoDir))
	again.DB().Exec("INSERT INTO m.marks (at) VALUES (NOW(6))")
	again.DB().Exec("FLUSH BINARY LOGS")
	// The stop event closed the file that was active, the restart opened
	// one that the flush closed: both archived.
	waitFiles(n + 2)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("binlog --follow after SIGINT: %v\n%s", err, stderr.String())
	}
}

// expire --keep-pitr deletes the archived binary logs before the oldest
// kept backup's position and keeps the rest; binlog does not bring the
// deleted ones back while the server still has them.
func TestExpireKeepPITR(t *testing.T) {
	t.Parallel()
	src := usecasetest.BinlogSource(t, 2) // files 1 and 2 closed before the backup
	repoDir := newRepoDir(t)
	run(t, append([]string{"backup", "--repo", repoDir}, sandboxConn(src)...)...).mustSucceed(t)
	backupFile := backupListing(t, repoDir)[0].Positions.BinlogFile
	src.DB().Exec("INSERT INTO m.marks (at) VALUES (NOW(6))")
	src.DB().Exec("FLUSH BINARY LOGS")
	run(t, append([]string{"binlog", "--repo", repoDir}, sandboxConn(src)...)...).mustSucceed(t)
	before := archivedBinlogs(t, repoDir)

	out := run(t, "expire", "--repo", repoDir, "--keep-pitr", "1h", "--confirm").mustSucceed(t).stdout
	after := archivedBinlogs(t, repoDir)
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
		t.Errorf("after expire --keep-pitr: %d files starting at %s, want %d starting at %s\n%s", len(after), after[0].Name, len(before)-deleted, backupFile, out)
	}
	if n := len(backupListing(t, repoDir)); n != 1 {
		t.Errorf("%d backups after expire, want 1", n)
	}
	run(t, append([]string{"binlog", "--repo", repoDir}, sandboxConn(src)...)...).mustSucceed(t)
	if again := archivedBinlogs(t, repoDir); len(again) != len(after) {
		t.Errorf("binlog re-archived expired files: %d files, want %d", len(again), len(after))
	}
}

// A damaged manifest of one archived binary log file affects only that
// file: list --binlogs names it with the reason and lists the rest,
// binlog archives on after it, expire --keep-pitr keeps it and deletes
// only what it would without it, and a point-in-time restore exits 3
// naming it only when its replay needs that file.
func TestDamagedBinlogManifestIsContained(t *testing.T) {
	t.Parallel()
	src := usecasetest.BinlogSource(t, 2) // files before the backup, for expire to delete
	repoDir := newRepoDir(t)
	run(t, append([]string{"backup", "--repo", repoDir}, sandboxConn(src)...)...).mustSucceed(t)
	backupFile := backupListing(t, repoDir)[0].Positions.BinlogFile
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
	run(t, append([]string{"binlog", "--repo", repoDir}, sandboxConn(src)...)...).mustSucceed(t)
	before := archivedBinlogs(t, repoDir)
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
	path := filepath.Join(repoDir, filepath.FromSlash(object))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	wrong := gtids[1][:len(gtids[1])-1] + string('0'+(gtids[1][len(gtids[1])-1]-'0'+1)%10)
	bad := bytes.ReplaceAll(data, []byte(`"`+gtids[1]+`"`), []byte(`"`+wrong+`"`))
	if bytes.Equal(bad, data) {
		t.Fatalf("%s does not hold %s", object, gtids[1])
	}
	if err := os.WriteFile(path, bad, 0o600); err != nil {
		t.Fatal(err)
	}

	r := run(t, "list", "--repo", repoDir, "--binlogs").mustSucceed(t)
	for _, f := range before {
		if !strings.Contains(r.stdout, f.Name) {
			t.Errorf("list --binlogs leaves out %s:\n%s", f.Name, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "DAMAGED") || !strings.Contains(r.stderr, object) || !strings.Contains(r.stderr, "checksum mismatch") {
		t.Errorf("list --binlogs does not show %s as damaged with the reason:\n%s\n%s", object, r.stdout, r.stderr)
	}
	var listed []inventory.BinlogEntry
	if err := json.Unmarshal([]byte(run(t, "list", "--repo", repoDir, "--binlogs", "--json").mustSucceed(t).stdout), &listed); err != nil {
		t.Fatal(err)
	}
	for _, e := range listed {
		if (e.Name == damaged.Name) != (e.Damaged && strings.Contains(e.Damage, object)) {
			t.Errorf("list --binlogs --json: %s damaged %v (%s)", e.Name, e.Damaged, e.Damage)
		}
	}

	// binlog goes on after it.
	src.DB().Exec("INSERT INTO m.marks (at) VALUES (NOW(6))")
	src.DB().Exec("FLUSH BINARY LOGS")
	run(t, append([]string{"binlog", "--repo", repoDir}, sandboxConn(src)...)...).mustSucceed(t)
	if again := archivedBinlogs(t, repoDir); len(again) != len(before)+1 {
		t.Errorf("binlog after the damage: %d files, want %d", len(again), len(before)+1)
	}

	// A restore whose replay ends before the damaged file works; one
	// that needs it is damage naming it, and writes nothing.
	run(t, "restore", "--repo", repoDir, "--until-gtid", gtids[0], "--target-dir", filepath.Join(t.TempDir(), "before")).mustSucceed(t)
	target := filepath.Join(t.TempDir(), "through")
	r = run(t, "restore", "--repo", repoDir, "--until-gtid", gtids[2], "--target-dir", target)
	if r.code != ExitCorrupt || r.err == nil || !strings.Contains(r.err.Error(), object) {
		t.Errorf("restore through the damaged file: exit %d (%v); want %d naming %s", r.code, r.err, ExitCorrupt, object)
	}
	if _, err := os.Stat(filepath.Join(target, "ibdata1")); err == nil {
		t.Error("a refused point-in-time restore wrote a datadir")
	}

	out := run(t, "expire", "--repo", repoDir, "--keep-pitr", "1h", "--confirm").mustSucceed(t).stdout
	if !strings.Contains(out, damaged.Name) || !strings.Contains(out, "damaged manifest") {
		t.Errorf("expire's plan does not say why %s is kept:\n%s", damaged.Name, out)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, bad) {
		t.Error("expire changed the damaged manifest")
	}
	after := map[string]bool{}
	for _, f := range archivedBinlogs(t, repoDir) {
		after[f.Name] = true
	}
	for _, f := range before {
		if want := f.Name >= backupFile; after[f.Name] != want {
			t.Errorf("after expire --keep-pitr: %s kept %v, want %v\n%s", f.Name, after[f.Name], want, out)
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
	repoDir := newRepoDir(t)
	run(t, append([]string{"binlog", "--repo", repoDir}, sandboxConn(again)...)...).mustSucceed(t)
	var found *archive.BinlogFile
	files := archivedBinlogs(t, repoDir)
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
