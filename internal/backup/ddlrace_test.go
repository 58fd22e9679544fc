package backup_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// DDL on Aria and MyISAM tables (renames, ALTERs, TRUNCATE, CREATE ...
// SELECT, DROP, changes of engine from and to InnoDB) while physical
// backups run (issue 21 item 7, issue 28 item 12): a backup
// either commits and then stands exactly for its recorded binary log
// position (restored, prepared, and the source's binary log replayed from
// that position onward, it equals the source), or it fails naming a table
// the DDL touched, and commits nothing. The scenario repeats, because the
// copy and the DDL race: on the code before the check, restores came back
// with a table empty, missing or under its old name in about half the
// runs.
func TestPhysicalBackupRacingNonTransactionalDDL(t *testing.T) {
	t.Parallel()
	racingDDL(t, usecasetest.NewLocalRepo(t), 8, 3)
}

// The same race into a deduplicating repository (issue 33): its streams
// are cut into blocks as the DDL renames, removes and rewrites the files
// under them, and each committed backup still restores to exactly its
// binary log position.
func TestDedupBackupRacingNonTransactionalDDL(t *testing.T) {
	t.Parallel()
	racingDDL(t, usecasetest.NewDedupRepo(t), 5, 2)
}

// racingDDL is the scenario of TestPhysicalBackupRacingNonTransactionalDDL:
// runs backups into repo while raceDDL runs, the last bursty of them
// with pauses.
func racingDDL(t *testing.T, repo usecasetest.Repo, runs, bursty int) {
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	db := src.DB()
	usecasetest.ExecAll(t, db,
		"CREATE DATABASE r",
		// InnoDB data that takes a moment to copy, so that the DDL meets
		// the copy of the other engines' files.
		"CREATE TABLE r.big (id INT PRIMARY KEY, b LONGBLOB) ENGINE=InnoDB",
		"INSERT INTO r.big SELECT seq, REPEAT(MD5(seq), 1000) FROM r.seq_1_to_2000")
	for _, e := range []string{"Aria", "MyISAM"} {
		for i := range 3 {
			usecasetest.ExecAll(t, db,
				fmt.Sprintf("CREATE TABLE r.%s%d (id INT PRIMARY KEY, v VARCHAR(100)) ENGINE=%s", strings.ToLower(e), i, e),
				fmt.Sprintf("INSERT INTO r.%s%d SELECT seq, MD5(seq) FROM r.seq_1_to_3000", strings.ToLower(e), i))
		}
	}
	// A table whose engine changes between InnoDB and the others:
	// mariabackup restores it without its data files (issue 28 item 12).
	usecasetest.ExecAll(t, db,
		"CREATE TABLE r.conv (id INT PRIMARY KEY, v VARCHAR(100)) ENGINE=InnoDB",
		"INSERT INTO r.conv SELECT seq, MD5(seq) FROM r.seq_1_to_2000")
	committed, refused := 0, 0
	for n := range runs {
		before := usecasetest.List(t, repo)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			raceDDL(ctx, db, n, n >= runs-bursty, stop)
		}()
		res, err := backup.Run(ctx, usecasetest.BackupOf(t, repo, src))
		close(stop)
		wg.Wait()
		t.Logf("run %d: backup: %v", n, err)
		entries := usecasetest.List(t, repo)
		if err != nil {
			refused++
			if !strings.Contains(err.Error(), "r.") {
				t.Errorf("run %d: backup failed: %v; want success or a refusal naming the raced tables", n, err)
			}
			if len(entries) != len(before) {
				t.Errorf("run %d: the refused backup committed: %d backups before, %d after", n, len(before), len(entries))
			}
			continue
		}
		committed++
		m := entries[len(entries)-1]
		if m.ID != res.Manifest.ID {
			t.Fatalf("run %d: the repository lists %s last, not the backup made, %s", n, m.ID, res.Manifest.ID)
		}
		target := filepath.Join(t.TempDir(), "datadir")
		r := usecasetest.RestoreOf(repo, m.ID)
		r.Restore.TargetDir, r.Restore.Options.Prepare = target, true
		usecasetest.Restore(t, r)
		restored := usecasetest.ServerOn(t, target)
		usecasetest.ReplayBinlog(t, src, restored, m.Positions.BinlogFile, m.Positions.BinlogPosition)
		want, got := usecasetest.TableState(t, db, "r"), usecasetest.TableState(t, restored.DB(), "r")
		if got != want {
			t.Errorf("run %d: backup %s, restored and replayed from %s:%d, differs from the source:\nrestored: %s\n  source: %s",
				n, m.ID, m.Positions.BinlogFile, m.Positions.BinlogPosition, got, want)
		}
		restored.Close()
	}
	t.Logf("%d backups committed and exact, %d refused", committed, refused)
}

// raceDDL runs DDL on the Aria and MyISAM tables of database r until stop
// closes, each round leaving the same tables under the same names; bursty,
// it pauses up to 1.2 s between rounds.
func raceDDL(ctx context.Context, db *sql.DB, run int, bursty bool, stop <-chan struct{}) {
	for i := 0; ; i++ {
		pause := time.Duration(0)
		if bursty {
			pause = time.Duration(i%4) * 400 * time.Millisecond
		}
		select {
		case <-stop:
			return
		case <-time.After(pause):
		}
		n := fmt.Sprintf("%d_%d", run, i)
		for _, q := range []string{
			"RENAME TABLE r.aria0 TO r.aria0_x, r.myisam0 TO r.myisam0_x",
			"RENAME TABLE r.aria0_x TO r.aria0, r.myisam0_x TO r.myisam0",
			"ALTER TABLE r.aria1 ADD COLUMN c" + n + " INT",
			"ALTER TABLE r.aria1 DROP COLUMN c" + n,
			"TRUNCATE TABLE r.myisam1",
			"INSERT INTO r.myisam1 SELECT seq, MD5(seq + " + fmt.Sprint(i) + ") FROM r.seq_1_to_3000",
			"CREATE TABLE r.tmp" + n + " ENGINE=Aria SELECT * FROM r.aria2",
			"DROP TABLE IF EXISTS r.tmp" + n,
			"UPDATE r.myisam2 SET v = MD5(v) WHERE id % 7 = " + fmt.Sprint(i%7),
			"ALTER TABLE r.conv ENGINE=" + []string{"Aria", "MyISAM"}[i%2],
			"UPDATE r.conv SET v = MD5(v) WHERE id % 5 = " + fmt.Sprint(i%5),
			"ALTER TABLE r.conv ENGINE=InnoDB",
		} {
			db.ExecContext(ctx, q)
		}
	}
}
