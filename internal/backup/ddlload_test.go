package backup_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/toolpath"
	"github.com/backstream/backstream/internal/usecasetest"
)

// DDL a busy server runs all day, during a full and an incremental
// physical backup (issue 28 item 12), on 10.11 and 11.8: in a loop,
// databases created (with an InnoDB and a MyISAM table) and dropped, a
// table's engine changed from InnoDB to Aria and MyISAM and back, Aria
// and InnoDB tables renamed away, written and renamed back, InnoDB
// tables rebuilt. Both backups commit, and each, restored and started, is
// the source as it stood at the backup's binary log position (the
// source's binary log replayed from there onto it gives the source's
// every table; the loop's DDL is written so that a replay onto any other
// state fails: no IF [NOT] EXISTS, renames of names that must exist).
// Before backstream took such tables again under BLOCK_COMMIT, these
// backups were refused after three attempts, and before the refusal they
// restored tables without their data files (docs/architecture.md, "DDL
// during a physical backup"). Both versions' backups and restores search
// 11.8's basedir first for their tools (MariadbPath): for the host's
// 10.11, whose tools are in PATH, the first mariabackup found is the
// wrong one.
func TestPhysicalBackupUnderRoutineDDL(t *testing.T) {
	b118 := sandboxtest.Basedir(t, "11.8")
	t.Parallel()
	mariadbPath := toolpath.Path{b118}
	for _, c := range []struct{ version, basedir string }{
		{"10.11", ""}, // the host's, in PATH
		{"11.8", b118},
	} {
		t.Run(c.version, func(t *testing.T) {
			t.Parallel()
			backupUnderRoutineDDL(t, c.version, c.basedir, mariadbPath)
		})
	}
}

// backupUnderRoutineDDL is TestPhysicalBackupUnderRoutineDDL on a server
// of version from basedir, the tools looked for in mariadbPath first.
func backupUnderRoutineDDL(t *testing.T, version, basedir string, mariadbPath toolpath.Path) {
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{Basedir: basedir})
	usecasetest.RequireVersion(t, src, version)
	db := src.DB()
	usecasetest.ExecAll(t, db,
		"CREATE DATABASE r",
		// InnoDB data that takes a moment to copy, so that the DDL meets
		// the copy.
		"CREATE TABLE r.big (id INT PRIMARY KEY, b LONGBLOB) ENGINE=InnoDB",
		"INSERT INTO r.big SELECT seq, REPEAT(MD5(seq), 1000) FROM r.seq_1_to_3000",
		"CREATE TABLE r.conv (id INT PRIMARY KEY, v VARCHAR(64)) ENGINE=InnoDB",
		"INSERT INTO r.conv SELECT seq, MD5(seq) FROM r.seq_1_to_2000",
		"CREATE TABLE r.inno (id INT PRIMARY KEY, v VARCHAR(64)) ENGINE=InnoDB",
		"INSERT INTO r.inno SELECT seq, MD5(seq) FROM r.seq_1_to_2000",
		"CREATE TABLE r.aria (id INT PRIMARY KEY, v VARCHAR(64)) ENGINE=Aria",
		"INSERT INTO r.aria SELECT seq, MD5(seq) FROM r.seq_1_to_2000",
	)
	repo := usecasetest.NewLocalRepo(t)
	round := 0
	// underDDL takes a backup (an incremental if incremental) while the
	// DDL loop runs, and returns it as the repository lists it.
	underDDL := func(what string, incremental bool) inventory.Backup {
		t.Helper()
		req := usecasetest.BackupOf(t, repo, src)
		req.Physical.MariadbPath = mariadbPath
		if incremental {
			req.Physical.Incremental = &backup.Incremental{}
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var loopErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			round, loopErr = routineDDL(ctx, db, round, stop)
		}()
		res, err := backup.Run(ctx, req)
		close(stop)
		wg.Wait()
		if loopErr != nil {
			t.Fatalf("the DDL loop: %v", loopErr)
		}
		t.Logf("%s under DDL (%d rounds so far): %v", what, round, err)
		if err != nil {
			t.Fatalf("%s backup under DDL: %v", what, err)
		}
		entries := usecasetest.List(t, repo)
		if last := entries[len(entries)-1]; last.ID != res.Manifest.ID {
			t.Fatalf("the repository lists %s last, not the backup made, %s", last.ID, res.Manifest.ID)
		}
		return entries[len(entries)-1]
	}
	check := func(what string, m inventory.Backup) {
		t.Helper()
		target := filepath.Join(t.TempDir(), "datadir")
		r := usecasetest.RestoreOf(repo, m.ID)
		r.Restore.TargetDir, r.Restore.Options.Prepare = target, true
		r.Restore.Options.MariadbPath, r.MariadbPath = mariadbPath, mariadbPath
		usecasetest.Restore(t, r)
		restored := sandboxtest.Start(t, sandbox.Options{Basedir: basedir, Datadir: target})
		usecasetest.ReplayBinlogWith(t, basedir, src, restored, m.Positions.BinlogFile, m.Positions.BinlogPosition)
		t.Logf("%s: backup %s replayed from %s:%d", what, m.ID, m.Positions.BinlogFile, m.Positions.BinlogPosition)
		usecasetest.CompareChecksums(t, usecasetest.Checksums(t, restored), usecasetest.Checksums(t, src))
		restored.Close()
	}
	full := underDDL("full", false)
	check("the full", full)
	for i := 1; i <= 2; i++ {
		inc := underDDL("incremental", true)
		if inc.Depth != i {
			t.Fatalf("backup %d is %+v, want an incremental of depth %d", i+1, inc, i)
		}
		check(fmt.Sprintf("incremental %d", i), inc)
	}
}

// routineDDL runs rounds of DDL from round n on until stop closes and
// returns the next round's number: each round creates database pe_db<n>
// with an InnoDB and a MyISAM table and drops the round before's (the
// first round's is dropped by the next call's first round), adds a
// column to r.conv and drops it again (a table rebuild), changes
// r.conv's engine to Aria or MyISAM and back to InnoDB, and renames the
// InnoDB table r.inno and the Aria table r.aria away and back, with
// writes in between. A statement that fails is returned: the loop's
// state is known at every step.
func routineDDL(ctx context.Context, db *sql.DB, n int, stop <-chan struct{}) (int, error) {
	for ; ; n++ {
		select {
		case <-stop:
			return n, nil
		case <-time.After(50 * time.Millisecond):
		}
		qs := []string{
			fmt.Sprintf("CREATE DATABASE pe_db%d", n),
			fmt.Sprintf("CREATE TABLE pe_db%d.t (id INT PRIMARY KEY, v VARCHAR(40)) ENGINE=InnoDB", n),
			fmt.Sprintf("INSERT INTO pe_db%d.t VALUES (%d, 'round %d')", n, n, n),
			fmt.Sprintf("CREATE TABLE pe_db%d.m (id INT PRIMARY KEY, v VARCHAR(40)) ENGINE=MyISAM", n),
			fmt.Sprintf("INSERT INTO pe_db%d.m VALUES (%d, 'round %d')", n, n, n),
		}
		if n > 0 {
			qs = append(qs, fmt.Sprintf("DROP DATABASE pe_db%d", n-1))
		}
		qs = append(qs,
			fmt.Sprintf("ALTER TABLE r.conv ADD COLUMN c%d INT NOT NULL DEFAULT %d", n, n),
			fmt.Sprintf("UPDATE r.conv SET v = MD5(CONCAT(v, %d)) WHERE id %% 10 = %d", n, n%10),
			fmt.Sprintf("ALTER TABLE r.conv DROP COLUMN c%d, FORCE", n),
			"ALTER TABLE r.conv ENGINE="+[]string{"Aria", "MyISAM"}[n%2],
			fmt.Sprintf("UPDATE r.conv SET v = MD5(CONCAT(v, 'e%d')) WHERE id %% 7 = %d", n, n%7),
			"ALTER TABLE r.conv ENGINE=InnoDB",
			"RENAME TABLE r.inno TO r.inno_away",
			fmt.Sprintf("INSERT INTO r.inno_away VALUES (%d, 'round %d')", 10000+n, n),
			"RENAME TABLE r.inno_away TO r.inno",
			"RENAME TABLE r.aria TO r.aria_away",
			fmt.Sprintf("INSERT INTO r.aria_away VALUES (%d, 'round %d')", 10000+n, n),
			"RENAME TABLE r.aria_away TO r.aria",
		)
		for _, q := range qs {
			if _, err := db.ExecContext(ctx, q); err != nil {
				return n, fmt.Errorf("round %d: %s: %w", n, q, err)
			}
		}
	}
}
