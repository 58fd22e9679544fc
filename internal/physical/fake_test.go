package physical

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/testkit"
)

// fakeScript is a stand-in mariabackup: it finds --extra-lsndir among its
// arguments (as LSNDIR) and then runs body.
const fakeScriptHead = `#!/bin/sh
for a in "$@"; do
  case "$a" in --extra-lsndir=*) LSNDIR="${a#--extra-lsndir=}";; esac
done
`

const writeMeta = `printf 'backup_type = full-backuped\nfrom_lsn = 0\nto_lsn = 10\nlast_lsn = 12\n' > "$LSNDIR/xtrabackup_checkpoints"
printf 'tool_name = mariabackup\n' > "$LSNDIR/xtrabackup_info"
`

func fakeBinary(t *testing.T, body string) *Binary {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mariabackup")
	if err := os.WriteFile(p, []byte(fakeScriptHead+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return &Binary{Path: p, Version: "10.11.19-MariaDB", Major: 10, Minor: 11}
}

// TestBackupOutcomes runs fake children to cover the exit code, "completed
// OK!", known failures, the metadata names and the stderr drain.
func TestBackupOutcomes(t *testing.T) {
	cases := []struct {
		name      string
		body      string
		wantErr   []string // empty: success
		wantOut   string
		checkInfo string
	}{
		{
			name:    "success",
			body:    writeMeta + "printf 'XBSTCK01' ; echo '[00] 2026-11-21 19:29:16 completed OK!' >&2\n",
			wantOut: "XBSTCK01",
		},
		{
			name: "new metadata names (11.1+)",
			body: `printf 'backup_type = full-backuped\nfrom_lsn = 0\nto_lsn = 10\n' > "$LSNDIR/mariadb_backup_checkpoints"
printf 'tool_name = mariadb-backup\n' > "$LSNDIR/mariadb_backup_info"
echo 'completed OK!' >&2
`,
			checkInfo: "mariadb-backup",
		},
		{
			name: "lots of stderr before any stdout",
			// 2 MB of stderr would block a child whose stderr is not drained.
			body:    writeMeta + "i=0; while [ $i -lt 20000 ]; do echo \"[01] 2026-11-21 19:29:16 Streaming ./db/t$i.ibd padding padding padding padding padding padding\" >&2; i=$((i+1)); done; printf data; echo 'completed OK!' >&2\n",
			wantOut: "data",
		},
		{
			name:    "exit 1 despite completed OK",
			body:    writeMeta + "echo 'completed OK!' >&2; exit 1\n",
			wantErr: []string{"mariabackup --backup failed (exit status 1)", "completed OK!"},
		},
		{
			name:    "exit 0 without completed OK",
			body:    writeMeta + "echo 'all fine, trust me' >&2\n",
			wantErr: []string{`never said "completed OK!"`, "all fine, trust me"},
		},
		{
			name:    "log copy too slow",
			body:    "echo '[00] 2026-11-21 09:15:57 Was only able to copy log from 58087 to 59916, not 68968; try increasing' >&2; echo 'innodb_log_file_size' >&2; exit 1\n",
			wantErr: []string{"increase innodb_log_file_size", "Was only able to copy log from 58087"},
		},
		{
			name:    "lock wait timeout",
			body:    "echo '[00] Error: failed to execute query BACKUP STAGE BLOCK_COMMIT: Lock wait timeout exceeded; try restarting transaction' >&2; exit 1\n",
			wantErr: []string{"timed out waiting for a lock", "Lock wait timeout exceeded"},
		},
		{
			name:    "no checkpoints",
			body:    "echo 'completed OK!' >&2\n",
			wantErr: []string{"extra-lsndir", "xtrabackup_checkpoints", "mariadb_backup_checkpoints"},
		},
		{
			name:    "bad checkpoints",
			body:    "echo 'garbage' > \"$LSNDIR/xtrabackup_checkpoints\"; echo 'completed OK!' >&2\n",
			wantErr: []string{"xtrabackup_checkpoints", "no '='"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var log testkit.SyncBuffer
			b, err := StartBackup(ctx, BackupOptions{Binary: fakeBinary(t, tc.body), Conn: mariadb.Config{User: "u"}, Log: &log})
			if err != nil {
				t.Fatal(err)
			}
			out, err := io.ReadAll(b.Stdout)
			if err != nil {
				t.Fatalf("read stdout: %v", err)
			}
			res, err := b.Wait()
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Wait: %v", err)
				}
				if string(out) != tc.wantOut {
					t.Errorf("stdout = %q, want %q", out, tc.wantOut)
				}
				if res.Checkpoints.ToLSN != 10 {
					t.Errorf("checkpoints %+v", res.Checkpoints)
				}
				if tc.checkInfo != "" && (res.Info["tool_name"] != tc.checkInfo || res.InfoName != "mariadb_backup_info" || res.CheckpointsName != "mariadb_backup_checkpoints") {
					t.Errorf("result %+v", res)
				}
				if !strings.HasSuffix(log.String(), "completed OK!\n") {
					t.Errorf("log does not end with completed OK!: %q", lastBytes(log.String(), 200))
				}
				return
			}
			if err == nil {
				t.Fatalf("Wait succeeded, want an error with %q", tc.wantErr)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
		})
	}
}

func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// TestBackupCancelKillsGroup: a grandchild holding the pipes must die with
// the child when ctx is cancelled, and Wait must return promptly.
func TestBackupCancelKillsGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "grandchild.pid")
	bin := fakeBinary(t, "sleep 300 &\necho $! > "+pidFile+"\nprintf started\nwait\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b, err := StartBackup(ctx, BackupOptions{Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if _, err := io.ReadFull(b.Stdout, buf); err != nil || string(buf) != "started" {
		t.Fatalf("read: %q, %v", buf, err)
	}
	var grandchild int
	for i := 0; i < 100; i++ {
		if data, err := os.ReadFile(pidFile); err == nil && len(bytes.TrimSpace(data)) > 0 {
			grandchild = atoiOrZero(string(bytes.TrimSpace(data)))
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if grandchild == 0 {
		t.Fatal("no grandchild pid")
	}
	cancel()
	start := time.Now()
	if _, err := b.Wait(); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Wait took %v", d)
	}
	// The grandchild was reparented; give init a moment to reap it.
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(grandchild, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(grandchild, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("grandchild %d survives: %v", grandchild, err)
	}
}

func atoiOrZero(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func TestStartBackupNoBinary(t *testing.T) {
	if _, err := StartBackup(context.Background(), BackupOptions{}); err == nil {
		t.Error("StartBackup without a binary succeeded")
	}
	_, err := StartBackup(context.Background(), BackupOptions{Binary: &Binary{Path: filepath.Join(t.TempDir(), "missing")}})
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing binary: %v", err)
	}
}

func TestPrepareFails(t *testing.T) {
	fake := fakeBinary(t, "echo 'InnoDB: something broke' >&2; exit 3\n")
	var log bytes.Buffer
	err := Prepare(context.Background(), fake, t.TempDir(), "", "1G", "", &log)
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "something broke") {
		t.Errorf("Prepare = %v", err)
	}
	if !strings.Contains(log.String(), "something broke") {
		t.Errorf("log = %q", log.String())
	}
	fake = fakeBinary(t, "echo 'done, I think'\n")
	if err := Prepare(context.Background(), fake, t.TempDir(), "", "", "", nil); err == nil || !strings.Contains(err.Error(), "completed OK!") {
		t.Errorf("Prepare without completed OK = %v", err)
	}
	// The arguments mariabackup gets.
	dir := t.TempDir()
	fake = fakeBinary(t, "echo \"$@\" > "+filepath.Join(dir, "args")+"; echo 'completed OK!' >&2\n")
	if err := Prepare(context.Background(), fake, dir, "", "2G", "", nil); err != nil {
		t.Fatal(err)
	}
	args, _ := os.ReadFile(filepath.Join(dir, "args"))
	if strings.TrimSpace(string(args)) != "--prepare --target-dir="+dir+" --use-memory=2G" {
		t.Errorf("args = %q", args)
	}
}

// mariabackup --prepare runs with libeatmydata preloaded (scripts/deps.sh
// installs it), its own syncs made redundant by the restore's final one,
// and keeps an LD_PRELOAD the environment already had.
func TestPrepareWithoutItsOwnSyncs(t *testing.T) {
	lib := SyncFreeLibrary()
	if lib == "" {
		t.Fatal("libeatmydata is not installed (scripts/deps.sh installs the eatmydata package)")
	}
	dir := t.TempDir()
	fake := fakeBinary(t, "echo \"$LD_PRELOAD\" > "+filepath.Join(dir, "preload")+"; echo 'completed OK!' >&2\n")
	if err := Prepare(context.Background(), fake, dir, "", "", "", nil); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "preload"))
	if strings.TrimSpace(string(got)) != lib {
		t.Errorf("mariabackup --prepare ran with LD_PRELOAD=%q, want %q", strings.TrimSpace(string(got)), lib)
	}
	if env := preload([]string{"A=1", "LD_PRELOAD=/x.so", "B=2"}, lib); strings.Join(env, " ") != "A=1 B=2 LD_PRELOAD="+lib+":/x.so" {
		t.Errorf("preload with one there already: %q", env)
	}
}

// TestPrepareRealFailure: the real mariabackup refuses to prepare a
// directory that is not a backup, and Prepare reports it.
func TestPrepareRealFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("runs mariabackup")
	}
	if _, err := exec.LookPath("mariabackup"); err != nil {
		t.Fatalf("mariabackup not installed (scripts/deps.sh installs it): %v", err)
	}
	bin := testBinary(t)
	var log bytes.Buffer
	err := Prepare(context.Background(), bin, t.TempDir(), "", "", "", &log)
	if err == nil {
		t.Fatalf("Prepare of an empty directory succeeded; log:\n%s", log.String())
	}
	if !strings.Contains(err.Error(), "does not hold a mariabackup backup") {
		t.Errorf("Prepare error does not explain: %v", err)
	}
}

// A backup that mariabackup (11.8) fails because a non-InnoDB table's
// file was gone when it came to copy it is a DDL race, which another
// attempt can miss, naming the table.
func TestBackupVanishedFileIsADDLRace(t *testing.T) {
	body := "echo '[01] 2026-11-29 01:36:17 Copied file ./r/conv.frm' >&2\n" +
		"echo '[01] 2026-11-29 01:36:17 Error 2 on file ./r/conv.MYD open during `r`.`conv` table copy: No such file or directory' >&2\n" +
		"echo '[00] 2026-11-29 01:36:17 Data files backup process is finished with error' >&2\nexit 1\n"
	b, err := StartBackup(context.Background(), BackupOptions{Binary: fakeBinary(t, body), Conn: mariadb.Config{User: "u"}})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, b.Stdout)
	_, err = b.Wait()
	var race *DDLRaceError
	if !errors.As(err, &race) || len(race.Tables) != 1 || !strings.Contains(race.Tables[0], "r.conv (its file r/conv.MYD vanished") {
		t.Errorf("Wait = %v, want a DDL race naming r.conv", err)
	}

	// The same line beside a known failure: that failure is the cause.
	body = "echo '[01] Error 2 on file ./r/conv.MYD open during `r`.`conv` table copy: No such file or directory' >&2\n" +
		"echo '[00] Error writing file: No space left on device' >&2\nexit 1\n"
	b, err = StartBackup(context.Background(), BackupOptions{Binary: fakeBinary(t, body), Conn: mariadb.Config{User: "u"}})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, b.Stdout)
	if _, err = b.Wait(); errors.As(err, &race) || err == nil || !strings.Contains(err.Error(), "a disk is full") {
		t.Errorf("Wait = %v, want the full disk named, not a DDL race", err)
	}
}
