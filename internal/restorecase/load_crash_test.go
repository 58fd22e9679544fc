package restorecase_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// The target server is killed (SIGKILL) in the middle of a load, then
// started again, and `restore --resume` finishes with every row exactly
// once and every index in place, whatever the engine.
//
// "loading": one data file of an InnoDB, a MyISAM and an Aria table is
// loaded but not yet journaled. The InnoDB file rolled back and is loaded
// once more; the MyISAM and Aria tables kept their file's rows and are
// reloaded from scratch, and so is the MEMORY table the restart emptied;
// the output names each.
//
// "indexing": every data file is journaled and the indexes are being
// added. Only the MEMORY table is reloaded: the others' row counts prove
// them complete, and adding an index that is there already is no error.
// "indexing, marked crashed": the same, but the MyISAM table is marked as
// crashed and the server does not repair it on its own: it is reloaded,
// and the output says why.
func TestLogicalResumeAfterTargetCrash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	// About 11 MiB a table: a load creates a table of 8 MiB or more
	// without its secondary index and adds it after the rows, which is
	// where "indexing" crashes.
	const rows = 20000
	engines := map[string]string{"inno": "InnoDB", "my": "MyISAM", "ar": "Aria", "mem": "MEMORY"}
	for name, engine := range engines {
		for _, q := range []string{
			"CREATE DATABASE IF NOT EXISTS crash",
			fmt.Sprintf("CREATE TABLE crash.%s (id INT NOT NULL PRIMARY KEY, k INT NOT NULL, pad VARCHAR(600) NOT NULL, KEY k_k (k)) ENGINE=%s DEFAULT CHARSET=latin1", name, engine),
			fmt.Sprintf("INSERT INTO crash.%s SELECT seq, seq * 7919 %% 10007, REPEAT(CONCAT(MD5(seq), SHA1(seq)), 8) FROM crash.seq_1_to_%d", name, rows),
		} {
			if _, err := src.DB().ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	// A versioned table's data files hold its history rows too; counting
	// only its current rows would find it short.
	for _, q := range []string{
		"CREATE TABLE crash.hist (id INT NOT NULL PRIMARY KEY, v INT NOT NULL) ENGINE=MyISAM WITH SYSTEM VERSIONING",
		fmt.Sprintf("INSERT INTO crash.hist SELECT seq, seq FROM crash.seq_1_to_%d", rows),
		"UPDATE crash.hist SET v = v + 1 WHERE id % 2 = 0",
	} {
		if _, err := src.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	want := usecasetest.Checksums(t, src)
	wantObjs, err := sandboxtest.DescribeObjects(ctx, src.DB(), "crash")
	if err != nil {
		t.Fatal(err)
	}
	repo := usecasetest.NewLocalRepo(t)
	req := usecasetest.LogicalBackupOf(t, repo, src)
	req.Dump.ChunkBytes, req.Dump.Skip.Users = 64<<10, true
	id := usecasetest.Backup(t, req).Manifest.ID

	// The last data file of three tables is held: its journal row waits
	// in a trigger for a lock the test keeps, after its LOAD DATA ran
	// (and passes the lock on when the test lets go).
	cat := usecasetest.Catalog(t, repo, id)
	var held []string
	files := 0
	for _, td := range cat.Tables {
		files += len(td.Chunks)
		if len(td.Chunks) < 3 {
			t.Fatalf("table %s.%s has %d data files, want several", td.Database, td.Table, len(td.Chunks))
		}
		if td.Table == "inno" || td.Table == "my" || td.Table == "ar" {
			held = append(held, fmt.Sprint(td.Chunks[len(td.Chunks)-1].ID))
		}
	}

	for _, tc := range []struct {
		name, crashIn string
		// markCrashed sets the MyISAM table's crashed flag while the
		// server is down, and the server starts without repairing it.
		markCrashed bool
		reloaded    []string
	}{
		{"loading", "loading", false, []string{"my", "ar", "mem"}},
		{"indexing", "indexing", false, []string{"mem"}},
		{"indexing, marked crashed", "indexing", true, []string{"my", "mem"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dst := sandboxtest.Start(t, sandbox.Options{})
			for _, q := range []string{
				"CREATE DATABASE backstream_load",
				// The journal as the load creates it (it keeps one that exists).
				"CREATE TABLE backstream_load.journal (backup VARCHAR(64) NOT NULL, chunk INT NOT NULL, loaded TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, PRIMARY KEY (backup, chunk)) ENGINE=InnoDB",
				"CREATE TRIGGER backstream_load.hold BEFORE INSERT ON backstream_load.journal FOR EACH ROW IF NEW.chunk IN (" +
					strings.Join(held, ", ") + ") THEN SET @held = GET_LOCK('crash-test-hold', 3600); DO RELEASE_LOCK('crash-test-hold'); END IF",
			} {
				if _, err := dst.DB().ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			hold, err := dst.DB().Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := hold.ExecContext(ctx, "DO GET_LOCK('crash-test-hold', 0)"); err != nil {
				t.Fatal(err)
			}

			// One loader more than held files: it loads all the others.
			first := usecasetest.LoadOf(repo, "", dst)
			first.Parallel = len(held) + 1
			loadCtx, cancel := context.WithCancel(ctx)
			loaded := make(chan error, 1)
			go func() {
				_, err := restorecase.Run(loadCtx, first)
				loaded <- err
			}()
			// wait is what the load ended with; a test that fails first
			// ends it.
			var once sync.Once
			var loadErr error
			wait := func() error {
				once.Do(func() { loadErr = <-loaded })
				return loadErr
			}
			defer func() {
				cancel()
				wait()
			}()
			waitFor := func(n int, state, info string) {
				t.Helper()
				for deadline := time.Now().Add(3 * time.Minute); ; {
					var got int
					dst.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE = ? AND COALESCE(INFO, '') LIKE ?", state, info).Scan(&got)
					if got >= n {
						return
					}
					if time.Now().After(deadline) {
						rows, _ := dst.DB().QueryContext(ctx, "SELECT COALESCE(STATE, ''), COALESCE(INFO, '') FROM information_schema.PROCESSLIST")
						for rows != nil && rows.Next() {
							var st, in string
							rows.Scan(&st, &in)
							t.Logf("process: %q %q", st, in)
						}
						t.Fatalf("the load never had %d connections in state %q", n, state)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			waitFor(len(held), "User lock", "%")
			for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
				var n int
				// Files, held ones aside, and the load's own start.
				dst.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM backstream_load.journal").Scan(&n)
				if n == files-len(held)+1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d journal rows, want %d", n, files-len(held)+1)
				}
			}
			for name := range engines {
				var n int
				if err := dst.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM crash."+name).Scan(&n); err != nil {
					t.Fatal(err)
				}
				// Read committed: InnoDB's held rows do not show, the others' do.
				if name != "inno" && n != rows {
					t.Fatalf("before the crash: crash.%s holds %d rows, want all %d", name, n, rows)
				}
			}
			if tc.crashIn == "indexing" {
				// The InnoDB table's index waits for a lock the test takes;
				// the held files go on and are journaled.
				for _, q := range []string{"START TRANSACTION", "SELECT COUNT(*) FROM crash.inno", "DO RELEASE_LOCK('crash-test-hold')"} {
					if _, err := hold.ExecContext(ctx, q); err != nil {
						t.Fatalf("%s: %v", q, err)
					}
				}
				waitFor(1, "Waiting for table metadata lock", "ALTER TABLE `inno`%")
				// The other tables' ALTERs (a copy, for MyISAM and Aria) must
				// be over: killed mid-copy, the server's DDL recovery
				// replaces the table's files at restart, and a crash mark
				// set on them now would be gone.
				for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
					var n int
					dst.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'ALTER TABLE%' AND INFO NOT LIKE 'ALTER TABLE `inno`%'").Scan(&n)
					var keyed int
					dst.DB().QueryRowContext(ctx, "SELECT COUNT(DISTINCT TABLE_NAME) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = 'crash' AND TABLE_NAME IN ('my', 'ar') AND INDEX_NAME = 'k_k'").Scan(&keyed)
					if n == 0 && keyed == 2 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("the MyISAM and Aria tables' indexes are not added (%d ALTERs running, %d of 2 tables keyed)", n, keyed)
					}
				}
			}
			dst.Kill()
			hold.Close()
			if err := wait(); err == nil {
				t.Fatal("the load succeeded although its server was killed")
			}

			var serverArgs []string
			if tc.markCrashed {
				markCrashed(t, filepath.Join(dst.Datadir, "crash", "my.MYI"))
				serverArgs = []string{"--myisam-recover-options=OFF"}
			}
			dst = sandboxtest.Start(t, sandbox.Options{Dir: dst.Dir, Args: serverArgs})
			if _, err := dst.DB().ExecContext(ctx, "DROP TRIGGER backstream_load.hold"); err != nil {
				t.Fatal(err)
			}
			resume := usecasetest.LoadOf(repo, "", dst)
			resume.Load.Resume, resume.Restore.Resume = true, true // as --resume sets them
			l := usecasetest.Restore(t, resume).Load
			if l == nil {
				t.Fatal("the resumed restore loaded nothing")
			}
			reloaded := strings.Join(l.Reloaded, "\n")
			t.Logf("resume reloaded:\n%s", reloaded)
			for name, engine := range engines {
				line := fmt.Sprintf("table crash.%s (%s) reloaded from scratch", name, engine)
				if got, want := strings.Contains(reloaded, line), slices.Contains(tc.reloaded, name); got != want {
					t.Errorf("%q among the tables reloaded: %v, want %v", line, got, want)
				}
			}
			// Nothing the resumed restore says (what its text prints)
			// names the versioned table.
			if said := strings.Join(slices.Concat(l.Reloaded, l.Kept, l.Dropped, l.DefinitionOnly, l.HistoryLeftOut, l.LeftOut), "\n"); strings.Contains(said, "crash.hist") {
				t.Errorf("the versioned table, complete, was reloaded: %s", said)
			}
			usecasetest.CompareChecksums(t, usecasetest.Checksums(t, dst), want)
			gotObjs, err := sandboxtest.DescribeObjects(ctx, dst.DB(), "crash")
			if err != nil {
				t.Fatal(err)
			}
			usecasetest.CompareDescriptions(t, gotObjs, wantObjs)
			var n int
			if err := dst.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'backstream_load'").Scan(&n); err != nil || n != 0 {
				t.Errorf("the load journal is still there after the load finished (%v)", err)
			}
		})
	}
}

// markCrashed sets STATE_CRASHED in a MyISAM index file's state header:
// the byte "changed" follows the 24-byte file header and the 2-byte open
// count.
func markCrashed(t *testing.T, myi string) {
	t.Helper()
	f, err := os.OpenFile(myi, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, 26); err != nil {
		t.Fatal(err)
	}
	b[0] |= 2
	if _, err := f.WriteAt(b, 26); err != nil {
		t.Fatal(err)
	}
}
