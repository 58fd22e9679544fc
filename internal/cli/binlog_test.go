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
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/storage/local"
	"github.com/backstream/backstream/internal/xbstream"
)

// binlogSource is a sandbox with a table and a few binary log files.
func binlogSource(t *testing.T, files int) *sandbox.Server {
	t.Helper()
	src := sandboxtest.Start(t, sandbox.Options{})
	exec := func(q string) {
		if _, err := src.DB().Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE DATABASE m")
	exec("CREATE TABLE m.marks (id INT AUTO_INCREMENT PRIMARY KEY, at DATETIME(6))")
	for range files {
		for range 5 {
			exec("INSERT INTO m.marks (at) VALUES (NOW(6))")
		}
		exec("FLUSH BINARY LOGS")
	}
	return src
}

func archivedBinlogs(t *testing.T, repoDir string) []archive.BinlogFile {
	t.Helper()
	var out []archive.BinlogFile
	if err := json.Unmarshal([]byte(run(t, "list", "--repo", repoDir, "--binlogs", "--json").mustSucceed(t).stdout), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

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
	src := binlogSource(t, 3)
	repoDir := filepath.Join(t.TempDir(), "repo")
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
	ms, err := r.Binlogs(context.Background())
	if err != nil || len(ms) == 0 {
		t.Fatalf("archived binary logs: %d, %v", len(ms), err)
	}
	for i, m := range ms {
		f := m.Binlog
		c := collect{}
		if err := archive.Read(context.Background(), archive.ReadOptions{Input: r.BinlogInput(f.Source, f.Name), Manifest: m, Sink: c}); err != nil {
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
			if next, prev := seqOf(t, f.FirstGTID), seqOf(t, ms[i-1].Binlog.LastGTID); next != prev+1 {
				t.Errorf("%s starts at GTID %s, the file before ends at %s", f.Name, f.FirstGTID, ms[i-1].Binlog.LastGTID)
			}
		}
	}
	if _, err := src.DB().Exec("INSERT INTO m.marks (at) VALUES (NOW(6))"); err != nil {
		t.Fatal(err)
	}
	src.DB().Exec("FLUSH BINARY LOGS")
	run(t, append([]string{"binlog", "--repo", repoDir}, sandboxConn(src)...)...).mustSucceed(t)
	if again := archivedBinlogs(t, repoDir); len(again) != len(got)+1 {
		t.Errorf("second run: %d files, want %d", len(again), len(got)+1)
	}
	out := run(t, "list", "--repo", repoDir, "--binlogs").mustSucceed(t).stdout
	if !strings.Contains(out, got[0].Name) || strings.Contains(out, "GAP") {
		t.Errorf("list --binlogs:\n%s", out)
	}
}

// --follow archives each file as the server moves on, survives a server
// restart, and stops cleanly on SIGINT.
func TestBinlogFollow(t *testing.T) {
	t.Parallel()
	src := binlogSource(t, 1)
	repoDir := filepath.Join(t.TempDir(), "repo")
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
	src := binlogSource(t, 2) // files 1 and 2 closed before the backup
	repoDir := filepath.Join(t.TempDir(), "repo")
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
