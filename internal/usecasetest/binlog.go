package usecasetest

import (
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"testing"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

var binlogName = regexp.MustCompile(`^mariadb-bin\.[0-9]+$`)

// BinlogTool is the mariadb-binlog of basedir, or the host's.
func BinlogTool(basedir string) string {
	if basedir == "" {
		return "mariadb-binlog"
	}
	return filepath.Join(basedir, "bin", "mariadb-binlog")
}

// BinlogFiles are the source's binary logs, oldest first (not 11.4's
// GTID indexes, mariadb-bin.000001.idx).
func BinlogFiles(t *testing.T, src *sandbox.Server) []string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join(src.Datadir, "mariadb-bin.[0-9]*"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range all {
		if binlogName.MatchString(filepath.Base(f)) {
			files = append(files, f)
		}
	}
	sort.Strings(files)
	return files
}

// ReplayBinlogWith applies the source's binary logs from file:pos onward
// to the restored server with the mariadb-binlog and mariadb client of
// basedir (the host's for "").
func ReplayBinlogWith(t *testing.T, basedir string, src, restored *sandbox.Server, file string, pos uint64) {
	t.Helper()
	var from []string
	for _, f := range BinlogFiles(t, src) {
		if filepath.Base(f) >= file {
			from = append(from, f)
		}
	}
	if len(from) == 0 {
		t.Fatalf("no binary log from %s in %s", file, src.Datadir)
	}
	client := "mariadb"
	if basedir != "" {
		client = filepath.Join(basedir, "bin", "mariadb")
	}
	dump := exec.Command(BinlogTool(basedir), append([]string{"--no-defaults", fmt.Sprintf("--start-position=%d", pos)}, from...)...)
	load := exec.Command(client, "--no-defaults", "--socket="+restored.Socket, "--user=root", "--binary-mode")
	var dumpErr, loadOut bytes.Buffer
	pipe, err := dump.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	load.Stdin = pipe
	dump.Stderr, load.Stdout, load.Stderr = &dumpErr, &loadOut, &loadOut
	if err := load.Start(); err != nil {
		t.Fatal(err)
	}
	// The client holds the pipe now: if it stops (a statement of the
	// replay failed), mariadb-binlog must see the pipe close rather than
	// block on it for ever.
	pipe.(io.Closer).Close()
	dumpErr2 := dump.Run()
	if err := load.Wait(); err != nil {
		t.Fatalf("replay from %s:%d: %v: %s", file, pos, err, loadOut.String())
	}
	if dumpErr2 != nil {
		t.Fatalf("mariadb-binlog: %v: %s", dumpErr2, dumpErr.String())
	}
}

// ReplayBinlog applies the source's binary logs from file:pos onward to
// the restored server, with the host's mariadb-binlog and mariadb client.
func ReplayBinlog(t *testing.T, src, restored *sandbox.Server, file string, pos uint64) {
	t.Helper()
	ReplayBinlogWith(t, "", src, restored, file, pos)
}

// BinlogSource is a sandbox with a table and a few binary log files.
func BinlogSource(t *testing.T, files int) *sandbox.Server {
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
