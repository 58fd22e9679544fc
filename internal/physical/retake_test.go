package physical

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/mariadb"
)

// A hold runs its function while mariabackup is stopped right after it
// reported BLOCK_COMMIT, and not at all when mariabackup had let go of
// the lock (a line of blockCommitLeft) before it could be stopped.
func TestHoldAtBlockCommit(t *testing.T) {
	const held = "echo '[00] 2026-11-28 12:38:31 Acquired locks for BACKUP STAGE BLOCK_COMMIT' >&2\n"
	for _, tc := range []struct {
		name, body string
		ran        bool
	}{
		// The script would print "BACKUP STAGE END" 0.3 s after the lock,
		// had it not been stopped: the function runs first.
		{"stopped in time", held + "sleep 0.3; echo '[00] Executing BACKUP STAGE END' >&2\n", true},
		// Both lines in one write: it let go before it could be stopped.
		{"let go already", "printf '[00] Acquired locks for BACKUP STAGE BLOCK_COMMIT\\n[00] Finishing BACKUP STAGE BLOCK_COMMIT\\n' >&2; sleep 0.3\n", false},
		// The same, and gone before it could be stopped (the stderr
		// pipe is read late under load): still not held, no error.
		{"ended already", "printf '[00] Acquired locks for BACKUP STAGE BLOCK_COMMIT\\n[00] Finishing BACKUP STAGE BLOCK_COMMIT\\n' >&2\n", false},
		{"never held", "echo '[00] Acquired locks for BACKUP STAGE START' >&2\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var b *Backup
			started := make(chan struct{})
			ran := false
			fn := func() error {
				ran = true
				<-started
				if !allStopped(b.Pid()) {
					t.Error("the function ran while mariabackup was not stopped")
				}
				if b.sink.completedOK() {
					t.Error("the function ran after mariabackup completed")
				}
				time.Sleep(500 * time.Millisecond) // longer than the script's sleep: it must stay stopped
				b.sink.mu.Lock()
				defer b.sink.mu.Unlock()
				for _, l := range b.sink.tail {
					if slices.ContainsFunc(blockCommitLeft, func(s string) bool { return strings.Contains(l, s) }) {
						t.Errorf("mariabackup went on while held: %q", l)
					}
				}
				return nil
			}
			var err error
			b, err = StartBackup(ctx, BackupOptions{Binary: fakeBinary(t, tc.body+writeMeta+"echo 'completed OK!' >&2\n"), Conn: mariadb.Config{User: "u"}, AtBlockCommit: fn})
			if err != nil {
				t.Fatal(err)
			}
			close(started)
			if _, err := io.ReadAll(b.Stdout); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Wait(); err != nil {
				t.Fatal(err)
			}
			got, _, err := b.Held()
			if err != nil || got != tc.ran || ran != tc.ran {
				t.Errorf("Held = %v, %v (function ran: %v); want %v", got, err, ran, tc.ran)
			}
		})
	}
}

// The files a retake takes for a table: its .frm and data files, its
// partitions', never InnoDB's (mariabackup follows those in the redo
// log), never another table's whose name starts alike.
func TestOwnFile(t *testing.T) {
	for name, want := range map[string]bool{
		"t.frm": true, "t.MAI": true, "t.MAD": true, "t.MYD": true, "t.MYI": true, "t.par": true, "t.TRG": true,
		"t#P#p0.MAD": true, "t#p#p1.MYI": true, "t#P#p0#SP#s0.MYD": true,
		"t.ibd": false, "t.isl": false, "t.new": false, "t.ibd.delta": false, "t.ibd.meta": false, "t#P#p0.ibd": false,
		"t2.frm": false, "tx.MAI": false, "t@002ex.frm": false, "db.opt": false, "t": false,
	} {
		if got := ownFile(name, "t"); got != want {
			t.Errorf("ownFile(%q, t) = %v, want %v", name, got, want)
		}
	}
	alter := databaseOwner(ddlEntry{DB: "d", Stmts: []string{"ALTER"}})
	created := databaseOwner(ddlEntry{DB: "d", Stmts: []string{"CREATE", "ALTER"}})
	for name, want := range map[string][2]bool{
		"db.opt": {true, true}, "t.frm": {false, true}, "m.MYD": {false, true}, "t.ibd": {false, false},
	} {
		if got := [2]bool{alter(name), created(name)}; got != want {
			t.Errorf("database owners of %q: ALTER %v, CREATE %v; want %v", name, got[0], got[1], want)
		}
	}
}

// take copies what the DDL log names as it stands, each file once, and
// notes a database that is gone; and every table whose data files were
// written since the backup began (the DDL log misses a MyISAM TRUNCATE),
// but not the server's log tables.
func TestRetakeTake(t *testing.T) {
	dir := t.TempDir()
	write := func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("r/conv.frm", "frm")
	write("r/conv.MAI", "index")
	write("r/conv.MAD", "data")
	write("r/conv.ibd", "innodb")
	write("r/other.MAI", "untouched")
	write("r/trunc.MYD", "truncated") // written during the copy, not in the DDL log (TRUNCATE of MyISAM is not)
	write("r/trunc.MYI", "index")
	write("r/p#P#p1.MAD", "partition") // a partition written during the copy
	write("mysql/general_log.CSV", "log")
	write("new/db.opt", "opt")
	write("new/m.MYD", "rows")
	write("new/m.frm", "frm")
	write("new/t.ibd", "innodb")
	write(ddlLogName,
		"2026-11-25  0:30:17\tALTER\tInnoDB\t0\tr\tconv\t\tAria\t0\tr\tconv\t\n"+
			"2026-11-25  0:30:18\tCREATE\tDATABASE\t0\tnew\t\t\t\t0\t\t\t\n"+
			"2026-11-25  0:30:18\tCREATE\tMyISAM\t0\tnew\tm\t\t\t0\t\t\t\n"+
			"2026-11-25  0:30:18\tDROP\tDATABASE\t0\told\t\t\t\t0\t\t\t\n")
	// Untouched since before the backup.
	long := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "r/other.MAI"), long, long); err != nil {
		t.Fatal(err)
	}
	r := &retake{datadir: dir, launched: time.Now().Add(-time.Minute)}
	defer r.remove()
	if err := r.take(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range r.files {
		b, err := os.ReadFile(f.copy)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, f.path+"="+string(b))
	}
	slices.Sort(got)
	want := []string{"new/db.opt=opt", "new/m.MYD=rows", "new/m.frm=frm", "r/conv.MAD=data", "r/conv.MAI=index", "r/conv.frm=frm",
		"r/p#P#p1.MAD=partition", "r/trunc.MYD=truncated", "r/trunc.MYI=index"}
	if !slices.Equal(got, want) {
		t.Errorf("retaken %q, want %q", got, want)
	}
	if !slices.Equal(r.gone, []string{"old"}) {
		t.Errorf("gone %q, want [old]", r.gone)
	}
	if !r.covers(ddlEntry{DB: "r", Table: "conv"}) || r.covers(ddlEntry{DB: "r", Table: "other"}) {
		t.Error("covers: r.conv should be covered, r.other not")
	}
	if !r.owns("old", "x.frm") || !r.owns("new", "t.frm") || r.owns("new", "t.ibd") || r.owns("r", "other.MAI") || r.owns("r", "conv.ibd") {
		t.Error("owns: wrong files claimed")
	}
}
