package cli

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// DDL a busy server runs all day, during a full and an incremental
// physical backup (issue 28 item 12), on 10.11 and 11.8. InnoDB tables
// renamed away and back and rebuilt in a loop: both backups commit, and
// each, restored and started, is the source as it stood at the backup's
// binary log position (the source's binary log replayed from there onto
// it gives the source's every table; the loop's DDL is written so that a
// replay onto any other state fails: no IF [NOT] EXISTS, renames of names
// that must exist). Databases created and dropped in the same loop: the
// backup is refused, naming them, and commits nothing, because
// mariabackup's incremental prepare then failed removing a dropped
// database's directory (docs/architecture.md, "DDL during a physical
// backup").
func TestPhysicalBackupUnderRoutineDDL(t *testing.T) {
	b118 := sandboxtest.Basedir(t, "11.8")
	t.Parallel()
	useMariadbPath(t, b118)
	for _, c := range []struct{ version, basedir string }{
		{"10.11", ""}, // the host's, in PATH
		{"11.8", b118},
	} {
		t.Run(c.version, func(t *testing.T) {
			t.Parallel()
			backupUnderRoutineDDL(t, c.version, c.basedir)
		})
	}
}

func backupUnderRoutineDDL(t *testing.T, version, basedir string) {
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{Basedir: basedir})
	requireVersion(t, src, version)
	db := src.DB()
	for _, q := range []string{
		"CREATE DATABASE r",
		// InnoDB data that takes a moment to copy, so that the DDL meets
		// the copy.
		"CREATE TABLE r.big (id INT PRIMARY KEY, b LONGBLOB) ENGINE=InnoDB",
		"INSERT INTO r.big SELECT seq, REPEAT(MD5(seq), 1000) FROM r.seq_1_to_3000",
		"CREATE TABLE r.conv (id INT PRIMARY KEY, v VARCHAR(64)) ENGINE=InnoDB",
		"INSERT INTO r.conv SELECT seq, MD5(seq) FROM r.seq_1_to_2000",
		"CREATE TABLE r.inno (id INT PRIMARY KEY, v VARCHAR(64)) ENGINE=InnoDB",
		"INSERT INTO r.inno SELECT seq, MD5(seq) FROM r.seq_1_to_2000",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	repoDir := newRepoDir(t)
	backup := append([]string{"backup", "--repo", repoDir, "--parallel", "2"}, sandboxConn(src)...)
	round := 0
	underDDL := func(what string, databases bool, args ...string) result {
		t.Helper()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var loopErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			round, loopErr = routineDDL(ctx, db, round, databases, stop)
		}()
		r := run(t, args...)
		close(stop)
		wg.Wait()
		if loopErr != nil {
			t.Fatalf("the DDL loop: %v", loopErr)
		}
		t.Logf("%s under DDL (%d rounds so far): exit %d, %v", what, round, r.code, r.err)
		return r
	}
	latest := func() inventory.Backup {
		t.Helper()
		entries := backupListing(t, repoDir)
		return entries[len(entries)-1]
	}
	check := func(what string, m inventory.Backup) {
		t.Helper()
		target := filepath.Join(t.TempDir(), "datadir")
		run(t, "restore", m.ID, "--repo", repoDir, "--target-dir", target, "--prepare").mustSucceed(t)
		restored := sandboxtest.Start(t, sandbox.Options{Basedir: basedir, Datadir: target})
		replayBinlogWith(t, basedir, src, restored, m.Positions.BinlogFile, m.Positions.BinlogPosition)
		t.Logf("%s: backup %s replayed from %s:%d", what, m.ID, m.Positions.BinlogFile, m.Positions.BinlogPosition)
		compareChecksums(t, checksums(t, restored), checksums(t, src))
		restored.Close()
	}
	underDDL("full", false, backup...).mustSucceed(t)
	full := latest()
	check("the full", full)
	underDDL("incremental", false, append(backup, "--incremental")...).mustSucceed(t)
	inc := latest()
	if inc.Depth != 1 {
		t.Fatalf("the second backup is %+v, want an incremental", inc)
	}
	check("the incremental", inc)

	r := underDDL("incremental with databases created and dropped", true, append(backup, "--incremental")...)
	if r.code == ExitOK || !strings.Contains(fmt.Sprint(r.err), "(DATABASE: ") || !strings.Contains(fmt.Sprint(r.err), "nothing was committed") {
		t.Errorf("a backup while databases were created and dropped: exit %d, %v; want it refused naming them", r.code, r.err)
	}
	if got := latest(); got.ID != inc.ID {
		t.Errorf("the refused backup committed %s", got.ID)
	}
}

// routineDDL runs rounds of DDL from round n on until stop closes and
// returns the next round's number: each round adds a column to r.conv
// and drops it again (a table rebuild), and renames the InnoDB table
// r.inno away and back, with writes in between; with databases, it also
// creates database pe_db<n> with an InnoDB table and drops the previous
// round's. A statement that fails is returned: the loop's state is known
// at every step.
func routineDDL(ctx context.Context, db *sql.DB, n int, databases bool, stop <-chan struct{}) (int, error) {
	for first := n; ; n++ {
		select {
		case <-stop:
			return n, nil
		case <-time.After(50 * time.Millisecond):
		}
		var qs []string
		if databases {
			qs = append(qs,
				fmt.Sprintf("CREATE DATABASE pe_db%d", n),
				fmt.Sprintf("CREATE TABLE pe_db%d.t (id INT PRIMARY KEY, v VARCHAR(40)) ENGINE=InnoDB", n),
				fmt.Sprintf("INSERT INTO pe_db%d.t VALUES (%d, 'round %d')", n, n, n))
			if n > first {
				qs = append(qs, fmt.Sprintf("DROP DATABASE pe_db%d", n-1))
			}
		}
		qs = append(qs,
			fmt.Sprintf("ALTER TABLE r.conv ADD COLUMN c%d INT NOT NULL DEFAULT %d", n, n),
			fmt.Sprintf("UPDATE r.conv SET v = MD5(CONCAT(v, %d)) WHERE id %% 10 = %d", n, n%10),
			fmt.Sprintf("ALTER TABLE r.conv DROP COLUMN c%d, FORCE", n),
			"RENAME TABLE r.inno TO r.inno_away",
			fmt.Sprintf("INSERT INTO r.inno_away VALUES (%d, 'round %d')", 10000+n, n),
			"RENAME TABLE r.inno_away TO r.inno",
		)
		for _, q := range qs {
			if _, err := db.ExecContext(ctx, q); err != nil {
				return n, fmt.Errorf("round %d: %s: %w", n, q, err)
			}
		}
	}
}

// binlogTool is the mariadb-binlog of basedir, or the host's.
func binlogTool(basedir string) string {
	if basedir == "" {
		return "mariadb-binlog"
	}
	return filepath.Join(basedir, "bin", "mariadb-binlog")
}

// binlogFiles are the source's binary logs, oldest first (not 11.4's
// GTID indexes, mariadb-bin.000001.idx).
func binlogFiles(t *testing.T, src *sandbox.Server) []string {
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

var binlogName = regexp.MustCompile(`^mariadb-bin\.[0-9]+$`)

// replayBinlogWith applies the source's binary logs from file:pos onward
// to the restored server with the mariadb-binlog and mariadb client of
// basedir (the host's for "").
func replayBinlogWith(t *testing.T, basedir string, src, restored *sandbox.Server, file string, pos uint64) {
	t.Helper()
	var from []string
	for _, f := range binlogFiles(t, src) {
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
	dump := exec.Command(binlogTool(basedir), append([]string{"--no-defaults", fmt.Sprintf("--start-position=%d", pos)}, from...)...)
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
	if err := dump.Run(); err != nil {
		t.Fatalf("mariadb-binlog: %v: %s", err, dumpErr.String())
	}
	if err := load.Wait(); err != nil {
		t.Fatalf("replay from %s:%d: %v: %s", file, pos, err, loadOut.String())
	}
}
