package physical

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The server's DDL log names the tables mariabackup copies as files that
// DDL touched during a backup, with the engine an ALTER gave one; InnoDB's
// DDL, which mariabackup follows in the redo log, is left out; a
// database's own (CREATE, ALTER, DROP DATABASE) is not, nor a table that
// DROP DATABASE drops.
func TestParseDDLLog(t *testing.T) {
	log := "2026-11-25  0:30:16\tRENAME\tAria\t0\tr\taria0\t\tAria\t0\tr\taria0_x\t\n" +
		"2026-11-25  0:30:16\tALTER\tInnoDB\t0\tr\tbig\t\tInnoDB\t0\tr\tbig\t\n" +
		"2026-11-25  0:30:16\tALTER\tAria\t0\tr\taria1\t\tAria\t0\tr\taria1\t\n" +
		"2026-11-25  0:30:16\tTRUNCATE\tMyISAM\t0\tr\tmy@0020t\t\n" +
		"2026-11-25  0:30:16\tRENAME\tAria\t0\tr\taria0_x\t\tAria\t0\tr\taria0\t\n" +
		"2026-11-25  0:30:17\tALTER\tInnoDB\t0\tr\tconv\t\tAria\t0\tr\tconv\t\n" +
		"2026-11-25  0:30:17\tALTER\tAria\t0\tr\tback\t\tInnoDB\t0\tr\tback\t\n" +
		"2026-11-25  0:30:18\tCREATE\tDATABASE\t0\tpe_db1\t\t\t\t0\t\t\t\n" +
		"2026-11-25  0:30:18\tDROP\tMyISAM\t0\tpe_db0\tm\tid\t\t0\t\t\t\n" +
		"2026-11-25  0:30:18\tDROP\tDATABASE\t0\tpe_db0\t\t\t\t0\t\t\t\n" +
		"2026-11-25  0:30:18\tALTER\tDATABASE\t0\tpe_db1\t\t\t\t0\t\t\t\n" +
		"short line\n"
	var got []string
	for _, e := range parseDDLLog([]byte(log)) {
		got = append(got, e.String())
	}
	want := []string{
		"r.aria0 (Aria: RENAME)",
		"r.aria0_x (Aria: RENAME)",
		"r.aria1 (Aria: ALTER)",
		"r.my@0020t (MyISAM: TRUNCATE)",
		"r.conv (InnoDB to Aria: ALTER)",
		"r.back (Aria to InnoDB: ALTER)",
		"pe_db1. (DATABASE: CREATE, ALTER)",
		"pe_db0.m (MyISAM: DROP)",
		"pe_db0. (DATABASE: DROP)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("parseDDLLog:\n got %q\nwant %q", got, want)
	}
	if got := parseDDLLog([]byte("2026-11-25  0:30:16\tCREATE\tInnoDB\t0\tr\tt\t\n")); len(got) != 0 {
		t.Errorf("InnoDB only: %q, want nothing", got)
	}
}

// recorder is a Progress that keeps what a backup reported.
type recorder struct {
	mu           sync.Mutex
	in, out      int64
	total        int64
	passed       int64 // the most bytes in ever were above the total
	backups      []string
	restartedAt  []int64 // bytes in when each Restart came
	stages, logs []string
}

func (r *recorder) In(n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.in += n
	r.passed = max(r.passed, r.in-r.total)
}
func (r *recorder) Out(n int64) { r.mu.Lock(); r.out += n; r.mu.Unlock() }
func (r *recorder) SetTotal(n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total = n
	r.passed = max(r.passed, r.in-r.total)
}
func (r *recorder) SetBackup(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.backups = append(r.backups, id)
}
func (r *recorder) Stage(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stages = append(r.stages, name)
}
func (r *recorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}
func (r *recorder) Restart() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.restartedAt = append(r.restartedAt, r.in)
	r.in, r.out = 0, 0
}

// retries are the lines of logs that say a backup is taken again.
func retries(logs []string) []string {
	return slices.DeleteFunc(slices.Clone(logs), func(l string) bool { return !strings.Contains(l, "taking the backup again") })
}

// A backup that DDL on an Aria table raced is discarded and taken again;
// the progress of the attempt that is committed starts from zero, under a
// stage naming the attempt, so that its bytes are the committed backup's,
// not the sum of both attempts'. The race is made certain: a wrapper of
// mariabackup adds a line to the server's DDL log after its first backup,
// as the server does for DDL during the copy (the next backup's BACKUP
// STAGE START truncates the log again).
func TestBackupRetriedAfterDDLRaceCountsTheAttemptAlone(t *testing.T) {
	srv := sharedServer(t)
	// The shared server may have been loaded a moment ago: db1.aria is
	// closed and its files made old, or the copy's flush writes it and
	// the table is taken again as one written during the copy (which
	// covers the race this test makes).
	if _, err := srv.DB().Exec("FLUSH TABLES db1.aria"); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	files, err := filepath.Glob(filepath.Join(srv.Datadir, "db1", "aria.*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("db1.aria's files: %v %v", files, err)
	}
	for _, f := range files {
		if err := os.Chtimes(f, old, old); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "mariabackup")
	script := `#!/bin/sh
case " $* " in *" --backup "*) ;; *) exec ` + testBinary(t).Path + ` "$@";; esac
` + testBinary(t).Path + ` "$@" || exit $?
if [ ! -e ` + dir + `/raced ]; then
  : >` + dir + `/raced
  printf '2026-11-25  0:30:16\tALTER\tAria\t0\tdb1\taria\t\tAria\t0\tdb1\taria\t\n' >>` + srv.Datadir + `/ddl.log
fi
`
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	b := backupThrough(t, srv, wrapper)
	if b.err != nil {
		t.Fatalf("RunBackup: %v", b.err)
	}
	m, rec := b.m, b.rec
	if want := []string{"streaming", "streaming, attempt 2 of 3", "committing"}; !slices.Equal(rec.stages, want) {
		t.Errorf("stages %q, want %q", rec.stages, want)
	}
	if again := retries(rec.logs); len(again) != 1 || !strings.Contains(again[0], "db1.aria (Aria: ALTER)") || !strings.Contains(again[0], "attempt 2 of 3") {
		t.Errorf("logged %q, want one retry, naming db1.aria and attempt 2 of 3", rec.logs)
	}
	if len(rec.restartedAt) != 1 || rec.restartedAt[0] == 0 {
		t.Errorf("restarts at %v bytes in, want one, after the first attempt's bytes", rec.restartedAt)
	}
	if in := filesBytes(m); rec.in != in || rec.out != m.Stats.StoredBytes {
		t.Errorf("counted %d bytes in, %d out; the committed backup has %d bytes of files, %d stored",
			rec.in, rec.out, in, m.Stats.StoredBytes)
	}
	if len(rec.backups) != 2 || rec.backups[1] != m.ID {
		t.Errorf("progress named backups %q, want two attempts, the second %s", rec.backups, m.ID)
	}
	b.holds(t, m.ID) // the raced attempt is discarded
}

// mariabackup failing while DDL ran (it cannot open a file that a
// table's conversion took away: "Can't open datafile") is the race too:
// the attempt is discarded and taken again, and the line that says so
// names the table and mariabackup's failure. The wrapper fails its first
// backup after adding the DDL log's line.
func TestBackupRetriedWhenMariabackupFailsDuringDDL(t *testing.T) {
	srv := sharedServer(t)
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "mariabackup")
	script := `#!/bin/sh
case " $* " in *" --backup "*) ;; *) exec ` + testBinary(t).Path + ` "$@";; esac
if [ ! -e ` + dir + `/raced ]; then
  : >` + dir + `/raced
  ` + testBinary(t).Path + ` "$@" >/dev/null 2>&1
  printf '2026-11-25  0:30:16\tALTER\tInnoDB\t0\tdb1\tconv\t\tAria\t0\tdb1\tconv\t\n' >>` + srv.Datadir + `/ddl.log
  echo "[00] FATAL ERROR: Can't open datafile db1/conv" >&2
  exit 1
fi
exec ` + testBinary(t).Path + ` "$@"
`
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	b := backupThrough(t, srv, wrapper)
	if b.err != nil {
		t.Fatalf("RunBackup: %v", b.err)
	}
	m, rec := b.m, b.rec
	if len(rec.logs) != 1 || !strings.Contains(rec.logs[0], "db1.conv (InnoDB to Aria: ALTER)") ||
		!strings.Contains(rec.logs[0], "mariabackup failed") || !strings.Contains(rec.logs[0], "attempt 2 of 3") {
		t.Errorf("logged %q, want one line naming db1.conv, mariabackup's failure and attempt 2 of 3", rec.logs)
	}
	b.holds(t, m.ID)
}

// A rename that crossed streams names the table it raced, as the DDL
// log's refusals do, with the files.
func TestTableOfFile(t *testing.T) {
	for in, want := range map[string]string{
		"r/myisam0_x.MYD":   "r.myisam0_x",
		"./r/aria0.MAI":     "r.aria0",
		"db/t#P#p0.ibd":     "db.t#P#p0",
		"ibdata1":           "ibdata1",
		"a/b/c.frm":         "a/b/c.frm",
		"db/t@002dx.frm":    "db.t@002dx",
		"db/no_extension":   "db.no_extension",
		"r/myisam0.MYD.new": "r.myisam0.MYD",
	} {
		if got := tableOfFile(in); got != want {
			t.Errorf("tableOfFile(%q) = %q, want %q", in, got, want)
		}
	}
}
