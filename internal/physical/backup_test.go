package physical

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/xbstream"
)

// TestBackupRestoreEndToEnd takes a real backup of a sandbox, extracts it
// twice at once (our DatadirWriter into A, stock mbstream -x into B),
// requires identical trees, prepares A, fixes ownership and starts a server
// on A that must hold the same data as the source.
func TestBackupRestoreEndToEnd(t *testing.T) {
	srv := sharedServer(t)
	bin := testBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	want, err := sandbox.ChecksumTables(ctx, srv.DB())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := want["db1.t"]; !ok {
		t.Fatalf("source checksums lack db1.t: %v", want)
	}
	var binlogFile string
	var binlogPos uint64
	var ignore1, ignore2 any
	if err := srv.DB().QueryRowContext(ctx, "SHOW MASTER STATUS").Scan(&binlogFile, &binlogPos, &ignore1, &ignore2); err != nil {
		t.Fatal(err)
	}
	var gtid string
	if err := srv.DB().QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&gtid); err != nil {
		t.Fatal(err)
	}

	dirA := filepath.Join(t.TempDir(), "A")
	dirB := filepath.Join(t.TempDir(), "B")
	if err := os.Mkdir(dirB, 0o750); err != nil {
		t.Fatal(err)
	}

	var log testkit.SyncBuffer
	var events []Event
	b, err := StartBackup(ctx, BackupOptions{
		Binary: bin, Conn: testConn(srv), Datadir: srv.Datadir, Parallel: 2,
		Log: &log, OnProgress: func(e Event) { events = append(events, e) },
	})
	if err != nil {
		t.Fatal(err)
	}

	mb := exec.CommandContext(ctx, "mbstream", "-x", "-C", dirB)
	mbIn, err := mb.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var mbOut bytes.Buffer
	mb.Stdout, mb.Stderr = &mbOut, &mbOut
	if err := mb.Start(); err != nil {
		t.Fatal(err)
	}

	w, err := NewDatadirWriter(dirA)
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string][]byte{}
	r := xbstream.NewReader(io.TeeReader(b.Stdout, mbIn))
	var streamErr error
	for {
		c, _, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			streamErr = err
			break
		}
		if IsMetadata(c.Path) && c.Type == xbstream.TypePayload {
			meta[c.Path] = append(meta[c.Path], c.Payload...)
		}
		if err := w.Chunk(&c); err != nil {
			streamErr = err
			break
		}
	}
	if streamErr != nil {
		cancel()
	}
	res, waitErr := b.Wait()
	mbIn.Close()
	mbErr := mb.Wait()
	if streamErr != nil {
		t.Fatalf("stream: %v (wait: %v)\n%s", streamErr, waitErr, log.String())
	}
	if waitErr != nil {
		t.Fatalf("Wait: %v", waitErr)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("writer close: %v", err)
	}
	if mbErr != nil {
		t.Fatalf("mbstream -x: %v: %s", mbErr, mbOut.String())
	}

	// What mariabackup really writes, for the parser tests.
	t.Logf("checkpoints (%s):\n%s", res.CheckpointsName, res.RawCheckpoints)
	t.Logf("info (%s):\n%s", res.InfoName, res.RawInfo)
	for name, b := range meta {
		t.Logf("stream metadata %s: %q", name, b)
	}

	if res.Checkpoints.BackupType != "full-backuped" || res.Checkpoints.FromLSN != 0 || res.Checkpoints.ToLSN == 0 {
		t.Errorf("checkpoints = %+v, want a full backup with to_lsn > 0", res.Checkpoints)
	}
	if res.Info["tool_name"] == "" || !strings.Contains(res.Info["tool_version"], "10.11") {
		t.Errorf("info lacks tool_name/tool_version 10.11: %v", res.Info)
	}
	if strings.Contains(string(res.RawInfo), testPassword) {
		t.Errorf("the password appears in %s", res.InfoName)
	}
	raw, ok := meta["xtrabackup_binlog_info"]
	if !ok {
		raw, ok = meta["mariadb_backup_binlog_info"]
	}
	if !ok {
		t.Errorf("no binlog info in the stream; metadata seen: %v", keys(meta))
	} else {
		bi, err := ParseBinlogInfo(raw)
		if err != nil {
			t.Errorf("ParseBinlogInfo(%q): %v", raw, err)
		}
		if bi.File != binlogFile || bi.Position != binlogPos || bi.GTID != gtid {
			t.Errorf("binlog info %+v, server said %s %d %q", bi, binlogFile, binlogPos, gtid)
		}
	}
	if !strings.Contains(log.String(), "completed OK!") {
		t.Errorf("log lacks completed OK!:\n%s", log.String())
	}
	if !hasEvent(events, EventFileStart, "db1/t.ibd") || !hasEvent(events, EventCompleted, "") {
		t.Errorf("events lack file start of db1/t.ibd or completed: %+v", events)
	}
	// mariabackup says it waits for the redo log copier only when the
	// copier is behind at the end of the copy, which depends on timing.
	if strings.Contains(log.String(), "Waiting for log copy thread") && !hasEvent(events, EventWaitLog, "") {
		t.Errorf("the log waits for the log copy thread, but no wait-log event was seen: %+v", events)
	}

	compareTrees(t, dirA, dirB)
	if t.Failed() {
		return
	}

	var prepLog bytes.Buffer
	if err := Prepare(ctx, bin, dirA, "", "256M", "", &prepLog); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if !strings.Contains(prepLog.String(), "completed OK!") {
		t.Errorf("prepare log lacks completed OK!")
	}

	mysqlUser, err := user.Lookup("mysql")
	if err != nil {
		t.Fatalf("no mysql user for the ownership step (scripts/deps.sh creates it): %v", err)
	}
	if err := SetOwnership(dirA, "mysql"); err != nil {
		t.Fatalf("SetOwnership: %v", err)
	}
	checkOwnership(t, dirA, mysqlUser, 20)

	restored, err := sandbox.Start(ctx, sandbox.Options{Datadir: dirA})
	if err != nil {
		t.Fatalf("start server on restored datadir: %v", err)
	}
	defer func() {
		if err := restored.Close(); err != nil {
			t.Errorf("close restored server: %v", err)
		}
	}()
	got, err := sandbox.ChecksumTables(ctx, restored.DB())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("restored tables %v, source %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("checksum of %s: restored %q, source %q", k, got[k], v)
		}
	}
	var n int
	if err := restored.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM db1.t").Scan(&n); err != nil || n != tableRows {
		t.Errorf("restored db1.t has %d rows (%v), want %d", n, err, tableRows)
	}
}

func hasEvent(evs []Event, k EventKind, path string) bool {
	for _, e := range evs {
		if e.Kind == k && (path == "" || e.Path == path) {
			return true
		}
	}
	return false
}

func keys(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// compareTrees requires a and b to hold the same names, types, sizes and bytes.
func compareTrees(t *testing.T, a, b string) {
	t.Helper()
	ta, tb := tree(t, a), tree(t, b)
	if len(ta) < 10 {
		t.Errorf("tree %s has only %d entries: %v", a, len(ta), ta)
	}
	for name, ea := range ta {
		eb, ok := tb[name]
		if !ok {
			t.Errorf("%s exists only in our extraction", name)
			continue
		}
		if ea != eb {
			t.Errorf("%s differs: ours %s, mbstream %s", name, ea, eb)
		}
	}
	for name := range tb {
		if _, ok := ta[name]; !ok {
			t.Errorf("%s exists only in mbstream's extraction", name)
		}
	}
}

// tree maps each relative path to "type size sha" for comparison.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		if d.IsDir() {
			m[rel] = "dir"
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		m[rel] = "file " + strconv.Itoa(len(data)) + " " + sha(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func checkOwnership(t *testing.T, dir string, u *user.User, minEntries int) {
	t.Helper()
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if n := testkit.CheckTree(t, "restored datadir", dir, DirMode, FileMode, uid, gid); n < minEntries {
		t.Errorf("only %d entries checked in %s, want at least %d", n, dir, minEntries)
	}
}

// TestBackupWrongPassword: a refused login makes Wait fail, promptly and
// saying why.
func TestBackupWrongPassword(t *testing.T) {
	srv := sharedServer(t)
	bin := testBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := testConn(srv)
	conn.Password = "wrong-password"
	var log testkit.SyncBuffer
	b, err := StartBackup(ctx, BackupOptions{Binary: bin, Conn: conn, Datadir: srv.Datadir, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, b.Stdout)
	start := time.Now()
	res, err := b.Wait()
	if err == nil {
		t.Fatalf("Wait succeeded with a wrong password (%d bytes streamed, result %+v)", n, res)
	}
	if time.Since(start) > 20*time.Second {
		t.Errorf("Wait took %v", time.Since(start))
	}
	t.Logf("Wait error, as the user sees it:\n%v", err)
	msg := err.Error()
	for _, want := range []string{"access denied", "Access denied for user", "mariabackup --backup failed"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if strings.Contains(msg, "wrong-password") {
		t.Errorf("error shows the password: %v", err)
	}
	if !strings.Contains(log.String(), "Access denied") {
		t.Errorf("log lacks mariabackup's stderr: %q", log.String())
	}
	if _, err := os.Stat(b.tmp); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("temporary directory %s left behind: %v", b.tmp, err)
	}
}

// TestBackupCancelAndCredentials stops reading mid-stream, so mariabackup
// blocks on its pipe, checks the credentials are not on its argv but in a
// private option file, then cancels: Wait must return an error promptly and
// leave no process and no temporary files.
func TestBackupCancelAndCredentials(t *testing.T) {
	srv := sharedServer(t)
	bin := testBinary(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b, err := StartBackup(ctx, BackupOptions{Binary: bin, Conn: testConn(srv), Datadir: srv.Datadir})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	if _, err := io.ReadFull(b.Stdout, buf); err != nil {
		t.Fatalf("first bytes of the stream: %v", err)
	}
	if !bytes.HasPrefix(buf, []byte("XBSTCK01")) {
		t.Errorf("stream starts with %q", buf[:16])
	}

	pid := b.Pid()
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if strings.Contains(string(cmdline), testPassword) || strings.Contains(string(cmdline), "password") || strings.Contains(string(cmdline), testUser) {
		t.Errorf("credentials on mariabackup's command line: %q", args)
	}
	if len(args) < 2 || !strings.HasPrefix(args[1], "--defaults-extra-file=") {
		t.Fatalf("--defaults-extra-file is not the first argument: %q", args)
	}
	cnf := strings.TrimPrefix(args[1], "--defaults-extra-file=")
	if fi, err := os.Stat(cnf); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("option file %s: %v, mode %v", cnf, err, fi.Mode())
	}
	if fi, err := os.Stat(filepath.Dir(cnf)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("option file directory: %v, mode %v", err, fi.Mode())
	}
	if data, err := os.ReadFile(cnf); err != nil || !strings.Contains(string(data), testPassword) {
		t.Errorf("option file does not carry the password: %v", err)
	}

	cancel()
	start := time.Now()
	_, err = b.Wait()
	if err == nil {
		t.Fatal("Wait succeeded after cancel")
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Wait error does not wrap context.Canceled: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Wait took %v after cancel", d)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("mariabackup pid %d still exists after Wait: %v", pid, err)
	}
	if _, err := os.Stat(filepath.Dir(cnf)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("temporary directory with credentials left behind: %v", err)
	}
	// The reader must not hang either.
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, b.Stdout); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Error("reading Stdout hangs after cancel")
	}
}
