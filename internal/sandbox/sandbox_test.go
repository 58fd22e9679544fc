package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/backstream/backstream/internal/testkit"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// processesUsing returns the pids of live processes whose argv mentions s.
func processesUsing(t *testing.T, s string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("read /proc: %v", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if bytes.Contains(cmdline, []byte(s)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func processGone(pid int) bool {
	err := syscall.Kill(pid, 0)
	return errors.Is(err, syscall.ESRCH)
}

func TestTwoServersSampleChecksums(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	var a, b *Server
	var g errgroup.Group
	g.Go(func() (err error) { a, err = Start(ctx, Options{}); return err })
	g.Go(func() (err error) { b, err = Start(ctx, Options{NoBinlog: true}); return err })
	err := g.Wait()
	for _, s := range []*Server{a, b} {
		if s != nil {
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
				if _, err := os.Stat(s.Dir); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("working dir %s not removed: %v", s.Dir, err)
				}
			})
		}
	}
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	if a.Port == b.Port || a.Socket == b.Socket || a.Datadir == b.Datadir {
		t.Fatalf("servers share port/socket/datadir: %+v %+v", a, b)
	}
	if a.Port == 3306 || b.Port == 3306 {
		t.Fatalf("sandbox on the system port 3306")
	}

	// The default server logs binlogs; the NoBinlog one does not.
	for _, tc := range []struct {
		s    *Server
		want string
	}{{a, "1"}, {b, "0"}} {
		var v string
		if err := tc.s.DB().QueryRowContext(ctx, "SELECT @@log_bin").Scan(&v); err != nil {
			t.Fatalf("log_bin: %v", err)
		}
		if v != tc.want {
			t.Errorf("server %s: log_bin = %s, want %s", tc.s.Dir, v, tc.want)
		}
	}
	var serverID int
	if err := a.DB().QueryRowContext(ctx, "SELECT @@server_id").Scan(&serverID); err != nil || serverID != a.Port {
		t.Errorf("server_id = %d, %v; want the port %d", serverID, err, a.Port)
	}

	opt := SampleOptions{Tables: 3, BigTableMB: 20, Blobs: true}
	g = errgroup.Group{}
	g.Go(func() error { return LoadSample(ctx, a.DB(), opt) })
	g.Go(func() error { return LoadSample(ctx, b.DB(), opt) })
	if err := g.Wait(); err != nil {
		t.Fatalf("load sample: %v", err)
	}

	sumA, err := ChecksumTables(ctx, a.DB())
	if err != nil {
		t.Fatal(err)
	}
	sumB, err := ChecksumTables(ctx, b.DB())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"sample.big", "sample.blobs", "sample.small_01", "sample.small_02", "sample.small_03"}
	for _, k := range want {
		if sumA[k] == "" || sumA[k] == "0" {
			t.Errorf("checksum of %s = %q, want a non-zero checksum", k, sumA[k])
		}
	}
	if len(sumA) != len(want) {
		t.Errorf("checksums cover %v, want exactly %v", sumA, want)
	}
	if !maps.Equal(sumA, sumB) {
		t.Errorf("same sample, different checksums:\n%v\n%v", sumA, sumB)
	}

	// A change to one row must show up in the checksum.
	if _, err := b.DB().ExecContext(ctx, "UPDATE sample.small_02 SET note = 'changed' WHERE id = 7"); err != nil {
		t.Fatal(err)
	}
	sumB2, err := ChecksumTables(ctx, b.DB())
	if err != nil {
		t.Fatal(err)
	}
	if sumB2["sample.small_02"] == sumA["sample.small_02"] {
		t.Errorf("checksum did not change after an update")
	}

	checkSampleContents(t, ctx, a.DB(), opt)
}

func checkSampleContents(t *testing.T, ctx context.Context, db *sql.DB, opt SampleOptions) {
	t.Helper()
	for i := 1; i <= opt.Tables; i++ {
		var n, nulls int
		q := fmt.Sprintf("SELECT COUNT(*), SUM(note IS NULL) FROM sample.small_%02d", i)
		if err := db.QueryRowContext(ctx, q).Scan(&n, &nulls); err != nil {
			t.Fatal(err)
		}
		if n != SmallTableRows(i) || nulls == 0 {
			t.Errorf("small_%02d: %d rows (%d NULL notes), want %d rows and some NULLs", i, n, nulls, SmallTableRows(i))
		}
	}
	var emoji, tabs, literalN int
	err := db.QueryRowContext(ctx, `SELECT SUM(name LIKE '%😀%'), SUM(note LIKE '%\t%'), SUM(note = '\\N') FROM sample.small_01`).Scan(&emoji, &tabs, &literalN)
	if err != nil {
		t.Fatal(err)
	}
	if emoji == 0 || tabs == 0 || literalN == 0 {
		t.Errorf("small_01 lacks special values: emoji %d, tabs %d, literal \\N %d", emoji, tabs, literalN)
	}

	var size int64
	if err := db.QueryRowContext(ctx, `SELECT DATA_LENGTH + INDEX_LENGTH FROM information_schema.TABLES
		WHERE TABLE_SCHEMA = 'sample' AND TABLE_NAME = 'big'`).Scan(&size); err != nil {
		t.Fatal(err)
	}
	target := int64(opt.BigTableMB) << 20
	t.Logf("big table: %d bytes for a target of %d", size, target)
	if size < target*3/4 || size > target*3/2 {
		t.Errorf("big table is %d bytes, want about %d", size, target)
	}

	seen := make(map[byte]bool)
	var large int
	rows, err := db.QueryContext(ctx, "SELECT b FROM sample.blobs WHERE b IS NOT NULL")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			t.Fatal(err)
		}
		for _, c := range b {
			seen[c] = true
		}
		if len(b) >= 1<<20 {
			large++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 256 || large < 2 {
		t.Errorf("blobs hold %d distinct byte values and %d blobs of 1 MiB or more, want 256 and at least 2", len(seen), large)
	}
}

func TestRestartKeepsData(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dir := t.TempDir()
	// NoTemplate: the one test that runs mariadb-install-db itself.
	s, err := Start(ctx, Options{Dir: dir, NoTemplate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.DB().ExecContext(ctx, `CREATE DATABASE keep;
		CREATE TABLE keep.t (id INT PRIMARY KEY, v VARCHAR(20));
		INSERT INTO keep.t VALUES (1, 'one'), (2, 'two 😀')`); err != nil {
		t.Fatal(err)
	}
	before, err := ChecksumTables(ctx, s.DB())
	if err != nil {
		t.Fatal(err)
	}
	pid := s.Pid()
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("second stop: %v", err)
	}
	if !processGone(pid) {
		t.Fatalf("mariadbd %d still running after Stop", pid)
	}
	if err := s.DB().PingContext(ctx); err == nil {
		t.Errorf("DB() still works after Stop")
	}
	log, err := os.ReadFile(s.ErrorLog)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(log, []byte("Shutdown complete")) {
		t.Errorf("no clean shutdown in the error log:\n%s", tail(log, 20))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Datadir); err != nil {
		t.Fatalf("Close removed a caller's Dir: %v", err)
	}

	// Start again on the same datadir, from a different working dir.
	s2, err := Start(ctx, Options{Datadir: s.Datadir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s2.Close(); err != nil {
			t.Errorf("close restarted server: %v", err)
		}
	})
	after, err := ChecksumTables(ctx, s2.DB())
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 1 || !maps.Equal(before, after) {
		t.Errorf("checksums before restart %v, after %v", before, after)
	}
	var v string
	if err := s2.DB().QueryRowContext(ctx, "SELECT v FROM keep.t WHERE id = 2").Scan(&v); err != nil || v != "two 😀" {
		t.Errorf("row 2 after restart = %q, %v", v, err)
	}
	ver, err := s2.Version(ctx)
	if err != nil || !strings.Contains(ver, "MariaDB") {
		t.Errorf("Version() = %q, %v", ver, err)
	}
}

// Kill ends the server without a shutdown; a server started on its
// working dir recovers what was committed, and closing the killed one
// afterwards is no error and removes the directory it created.
func TestKillThenRestart(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.DB().ExecContext(ctx, `CREATE DATABASE keep;
		CREATE TABLE keep.t (id INT PRIMARY KEY) ENGINE=InnoDB;
		INSERT INTO keep.t VALUES (1), (2)`); err != nil {
		t.Fatal(err)
	}
	pid := s.Pid()
	s.Kill()
	if !processGone(pid) {
		t.Fatalf("mariadbd %d still running after Kill", pid)
	}
	s2, err := Start(ctx, Options{Dir: s.Dir})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s2.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM keep.t").Scan(&n); err != nil || n != 2 {
		t.Errorf("after the restart keep.t holds %d rows (%v), want 2", n, err)
	}
	if err := s2.Close(); err != nil {
		t.Errorf("close restarted server: %v", err)
	}
	if log, err := os.ReadFile(s.ErrorLog); err != nil || !bytes.Contains(log, []byte("crash recovery")) {
		t.Errorf("no crash recovery in the error log (%v):\n%s", err, tail(log, 20))
	}
	if err := s.Close(); err != nil {
		t.Errorf("close killed server: %v", err)
	}
	if _, err := os.Stat(s.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the killed server's working dir is still there: %v", err)
	}
}

func TestFailedStartLeavesNothing(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dir := t.TempDir()
	s, err := Start(ctx, Options{Dir: dir, Args: []string{"--no-such-option-for-sandbox"}})
	if err == nil {
		s.Close()
		t.Fatal("Start with a bad option succeeded")
	}
	if !strings.Contains(err.Error(), "unknown option '--no-such-option-for-sandbox'") {
		t.Errorf("error lacks the error log's tail: %v", err)
	}
	if pids := processesUsing(t, dir); len(pids) > 0 {
		t.Errorf("processes left behind: %v", pids)
	}
}

// TestServerDiesWithParent starts a server from a child test process, kills
// that process with SIGKILL (no cleanup runs) and expects the server to go
// too, thanks to Pdeathsig.
func TestServerDiesWithParent(t *testing.T) {
	t.Parallel()
	if os.Getenv("SANDBOX_HELPER_DIR") != "" {
		t.Skip("helper process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperStartAndHang$", "-test.v")
	cmd.Env = append(os.Environ(), "SANDBOX_HELPER_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	sc := bufio.NewScanner(out)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "sandbox_test.go:"); ok {
			if _, p, ok := strings.Cut(v, "mariadbd pid "); ok {
				pid, _ = strconv.Atoi(p)
				break
			}
		}
	}
	if pid == 0 {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper did not report a server pid:\n%s", strings.Join(lines, "\n"))
	}
	if processGone(pid) {
		t.Fatalf("server %d not running while its parent lives", pid)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("server %d outlived its killed parent", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHelperStartAndHang is the child of TestServerDiesWithParent.
func TestHelperStartAndHang(t *testing.T) {
	dir := os.Getenv("SANDBOX_HELPER_DIR")
	if dir == "" {
		t.Skip("only run as a helper process")
	}
	s, err := Start(t.Context(), Options{Dir: dir, NoBinlog: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("mariadbd pid %d", s.Pid())
	time.Sleep(time.Minute)
}

func TestNotADatadir(t *testing.T) {
	t.Parallel()
	_, err := Start(testContext(t), Options{Datadir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "not a MariaDB datadir") {
		t.Fatalf("Start on an empty Datadir: %v", err)
	}
}

// TestLongDirAndPortCollision replaces pickPort and so must not run in
// parallel with other tests that start servers.
func TestLongDirAndPortCollision(t *testing.T) {
	ctx := testContext(t)
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))

	// The first port offered is held by us, so the server's bind fails and
	// Start must retry with another.
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	heldPort := held.Addr().(*net.TCPAddr).Port
	calls := 0
	pickPort = func() (int, error) {
		calls++
		if calls == 1 {
			return heldPort, nil
		}
		return freePort()
	}
	t.Cleanup(func() { pickPort = freePort })

	var stderr testkit.SyncBuffer
	s, err := Start(ctx, Options{Dir: long, NoBinlog: true, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() }) // on failure; the test checks Close itself
	if len(s.Socket) > maxSocketPath {
		t.Errorf("socket path is %d bytes: %s", len(s.Socket), s.Socket)
	}
	if calls < 2 || s.Port == heldPort {
		t.Errorf("port %d after %d picks; want a retry away from %d", s.Port, calls, heldPort)
	}
	if _, err := s.Version(ctx); err != nil {
		t.Fatal(err)
	}
	socketDir := filepath.Dir(s.Socket)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(socketDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket dir %s not removed: %v", socketDir, err)
	}
	if !strings.Contains(stderr.String(), "ready for connections") {
		t.Errorf("Stderr copy lacks the server's start message:\n%s", stderr.String())
	}
}

func TestTail(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 3, ""},
		{"a", 3, "a"},
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb\nc", 1, "c"},
		{"a\nb\nc", 0, ""},
		{"a\n\n\n", 5, "a"},
		{"a\n\nb", 2, "\nb"},
	} {
		if got := tail([]byte(tc.in), tc.n); got != tc.want {
			t.Errorf("tail(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// A failed start's error shows the errors logged before the last lines,
// which a long shutdown (a Galera node's) pushes out of them, and the
// lines a child of the server wrote there (an SST script's).
func TestLogTailSinceKeepsEarlierErrors(t *testing.T) {
	dir := t.TempDir()
	s := &Server{ErrorLog: filepath.Join(dir, "error.log")}
	var log strings.Builder
	log.WriteString("2026-11-28 0 [ERROR] from an earlier start\n")
	offset := int64(log.Len())
	log.WriteString("backstream: joiner: the script's own reason\n")
	log.WriteString("2026-11-28 0 [ERROR] WSREP: the reason it failed\n")
	log.WriteString("\tan indented line of a note\n")
	for i := range 2 * errorLogTailLines {
		fmt.Fprintf(&log, "2026-11-28 0 [Note] shutting down %d\n", i)
	}
	if err := os.WriteFile(s.ErrorLog, []byte(log.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	got := s.logTailSince(offset)
	if !strings.Contains(got, "the reason it failed") || !strings.Contains(got, "the script's own reason") || !strings.HasSuffix(got, fmt.Sprintf("shutting down %d", 2*errorLogTailLines-1)) {
		t.Errorf("logTailSince lost the error or the last lines:\n%s", got)
	}
	if strings.Contains(got, "earlier start") || strings.Contains(got, "indented") {
		t.Errorf("logTailSince shows what was logged before the start:\n%s", got)
	}
	if err := os.WriteFile(s.ErrorLog, []byte("a\n[ERROR] b\nc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := s.logTailSince(0); got != "a\n[ERROR] b\nc" {
		t.Errorf("a short log is not shown as it is: %q", got)
	}
}

func FuzzTail(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), 2)
	f.Add([]byte("\n\n"), 1)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		n %= 50
		got := tail(b, n)
		trimmed := strings.TrimRight(string(b), "\n")
		if !strings.HasSuffix(trimmed, got) {
			t.Fatalf("tail %q is not a suffix of %q", got, trimmed)
		}
		if n <= 0 {
			if got != "" {
				t.Fatalf("tail(_, %d) = %q", n, got)
			}
			return
		}
		lines := strings.Count(got, "\n") + 1
		if lines > n {
			t.Fatalf("tail(_, %d) has %d lines", n, lines)
		}
		if lines < n && got != trimmed {
			t.Fatalf("tail(_, %d) = %q: fewer lines but not everything", n, got)
		}
		if got != trimmed && !strings.HasSuffix(trimmed, "\n"+got) {
			t.Fatalf("tail %q does not start at a line boundary", got)
		}
	})
}

func TestIsFormatOption(t *testing.T) {
	for arg, want := range map[string]bool{
		"--innodb-page-size=4k":          true,
		"--innodb_log_file_size=10M":     true,
		"--loose-innodb-page-size=8k":    true,
		"--innodb-buffer-pool-size=256M": false,
		"--log-bin":                      false,
	} {
		if got := isFormatOption(arg); got != want {
			t.Errorf("isFormatOption(%q) = %v", arg, got)
		}
	}
}
