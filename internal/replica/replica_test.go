package replica

import (
	"context"
	"crypto/sha1"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// replPassword has every character that quoting must get right: quotes,
// backslashes (also before a quote and at the end), LIKE wildcards, a tab,
// and non-ASCII.
const replPassword = `it's a \'pass\" %_ ü\t€\`

// nativePasswordHash is mysql_native_password's stored form of pw.
func nativePasswordHash(pw string) string {
	h1 := sha1.Sum([]byte(pw))
	h2 := sha1.Sum(h1[:])
	return "*" + strings.ToUpper(hex.EncodeToString(h2[:]))
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.ExecContext(t.Context(), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// startPrimary starts a sandbox with a replication account "repl".
func startPrimary(t *testing.T) (*sandbox.Server, Primary) {
	t.Helper()
	s := sandboxtest.Start(t, sandbox.Options{})
	db := s.DB()
	// The account is created from the password's hash (SET PASSWORD and
	// CREATE USER take no parameters), so the odd password reaches the
	// primary without relying on the quoting under test.
	mustExec(t, db, "CREATE USER 'repl'@'%' IDENTIFIED BY PASSWORD '"+nativePasswordHash(replPassword)+"'")
	mustExec(t, db, "GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO 'repl'@'%'")
	return s, Primary{Host: "127.0.0.1", Port: s.Port, User: "repl", Password: replPassword}
}

// primaryCoordinates writes a binlog info file for the primary's current
// position into a new directory, as mariabackup would have left it in a
// restored datadir, and returns the directory.
func primaryCoordinates(t *testing.T, db *sql.DB, name string, withGTID bool) string {
	t.Helper()
	var file, pos, doDB, ignoreDB, gtid string
	if err := db.QueryRowContext(t.Context(), "SHOW MASTER STATUS").Scan(&file, &pos, &doDB, &ignoreDB); err != nil {
		t.Fatalf("SHOW MASTER STATUS: %v", err)
	}
	if err := db.QueryRowContext(t.Context(), "SELECT @@gtid_binlog_pos").Scan(&gtid); err != nil {
		t.Fatalf("gtid_binlog_pos: %v", err)
	}
	line := file + "\t" + pos + "\n"
	if withGTID {
		if gtid == "" {
			t.Fatal("primary has an empty gtid_binlog_pos after loading data")
		}
		line = file + "\t" + pos + "\t" + gtid + "\n"
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(line), 0o640); err != nil {
		t.Fatal(err)
	}
	return dir
}

func checksums(t *testing.T, s *sandbox.Server) map[string]string {
	t.Helper()
	m, err := sandbox.ChecksumTables(t.Context(), s.DB())
	if err != nil {
		t.Fatalf("checksum tables on %s: %v", s.Socket, err)
	}
	return m
}

func countRows(t *testing.T, db *sql.DB, table string) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// writeBatch changes the primary in ways a replica must follow: DDL, inserts,
// updates and deletes in the sample tables.
func writeBatch(t *testing.T, db *sql.DB, n int) {
	t.Helper()
	mustExec(t, db, fmt.Sprintf("CREATE TABLE sample.batch_%d (id INT PRIMARY KEY, note VARCHAR(100))", n))
	mustExec(t, db, fmt.Sprintf("INSERT INTO sample.batch_%d SELECT seq, CONCAT('row ', seq, ' tab\there') FROM sample.seq_1_to_500", n))
	mustExec(t, db, "UPDATE sample.small_01 SET qty = qty + ?, note = CONCAT(note, ?) WHERE id % 7 = 0", n, fmt.Sprintf(" batch %d\\ '", n))
	mustExec(t, db, "DELETE FROM sample.small_02 WHERE id % 11 = ?", n)
}

func TestSetupReplicatesAndCatchesUp(t *testing.T) {
	ctx := testContext(t)
	primary, p := startPrimary(t)
	sample := sandbox.SampleOptions{Tables: 2}
	if err := sandbox.LoadSample(ctx, primary.DB(), sample); err != nil {
		t.Fatal(err)
	}
	// The replicas get the same deterministic data, standing in for a restore.
	gtidReplica := sandboxtest.Start(t, sandbox.Options{})
	fileReplica := sandboxtest.Start(t, sandbox.Options{})
	for _, r := range []*sandbox.Server{gtidReplica, fileReplica} {
		if err := sandbox.LoadSample(ctx, r.DB(), sample); err != nil {
			t.Fatal(err)
		}
	}
	want := checksums(t, primary)
	if got := checksums(t, gtidReplica); !maps.Equal(got, want) {
		t.Fatalf("replica loaded differently from primary before replication:\n got %v\nwant %v", got, want)
	}
	gtidDir := primaryCoordinates(t, primary.DB(), "xtrabackup_binlog_info", true)
	fileDir := primaryCoordinates(t, primary.DB(), "mariadb_backup_binlog_info", false)

	res, err := Setup(ctx, gtidReplica.DB(), p, Options{Datadir: gtidDir, WaitTimeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("Setup by GTID: %v", err)
	}
	if !res.UsingGTID || res.Replaced || len(res.Notes) != 0 {
		t.Errorf("Setup by GTID: UsingGTID=%v Replaced=%v Notes=%q", res.UsingGTID, res.Replaced, res.Notes)
	}
	if res.From != filepath.Join(gtidDir, "xtrabackup_binlog_info") {
		t.Errorf("From = %q", res.From)
	}
	st := res.Status
	if !st.IORunning || !st.SQLRunning || st.UsingGTID != "Slave_Pos" || st.MasterPort != primary.Port || st.MasterUser != "repl" {
		t.Errorf("status after Setup by GTID: %+v", st)
	}
	if st.GTIDSlavePos == "" {
		t.Errorf("gtid_slave_pos empty after Setup by GTID")
	}

	writeBatch(t, primary.DB(), 1)
	// CatchUp inside Setup must have applied batch 1 before Setup returns.
	res, err = Setup(ctx, fileReplica.DB(), p, Options{Datadir: fileDir, WaitTimeout: 30 * time.Second, CatchUp: true})
	if err != nil {
		t.Fatalf("Setup by file and position: %v", err)
	}
	if res.UsingGTID || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "no GTID") {
		t.Errorf("Setup without GTID: UsingGTID=%v Notes=%q", res.UsingGTID, res.Notes)
	}
	if res.Status.UsingGTID != "No" {
		t.Errorf("Using_Gtid = %q after file/position setup", res.Status.UsingGTID)
	}
	if n := countRows(t, fileReplica.DB(), "sample.batch_1"); n != 500 {
		t.Errorf("after Setup with CatchUp the replica has %d rows of batch_1, want 500", n)
	}

	writeBatch(t, primary.DB(), 2)
	for _, r := range []*sandbox.Server{gtidReplica, fileReplica} {
		st, err := CatchUp(ctx, r.DB(), p, Options{CatchUpTimeout: time.Minute})
		if err != nil {
			t.Fatalf("CatchUp on %s: %v", r.Socket, err)
		}
		if !st.IORunning || !st.SQLRunning {
			t.Errorf("status after CatchUp: %+v", st)
		}
	}
	want = checksums(t, primary)
	if len(want) < 4 {
		t.Fatalf("primary has only %d tables: %v", len(want), slices.Sorted(maps.Keys(want)))
	}
	for _, r := range []*sandbox.Server{gtidReplica, fileReplica} {
		if got := checksums(t, r); !maps.Equal(got, want) {
			t.Errorf("replica %s differs from primary after catching up:\n got %v\nwant %v", r.Socket, got, want)
		}
	}
}

func TestSetupFailures(t *testing.T) {
	ctx := testContext(t)
	primary, p := startPrimary(t)
	replica := sandboxtest.Start(t, sandbox.Options{})
	coords := primaryCoordinates(t, primary.DB(), "xtrabackup_binlog_info", true)

	notConfigured := func(t *testing.T) {
		t.Helper()
		st, err := ReadStatus(ctx, replica.DB(), "")
		if err != nil {
			t.Fatal(err)
		}
		if st.Configured {
			t.Errorf("replication got configured by a failed Setup: %+v", st)
		}
	}

	t.Run("missing binlog info", func(t *testing.T) {
		empty := t.TempDir()
		_, err := Setup(ctx, replica.DB(), p, Options{Datadir: empty})
		if err == nil {
			t.Fatal("Setup succeeded without a binlog info file")
		}
		for _, name := range BinlogInfoNames {
			if !strings.Contains(err.Error(), filepath.Join(empty, name)) {
				t.Errorf("error does not name %s: %v", name, err)
			}
		}
		notConfigured(t)
	})

	t.Run("missing binlog info in the server's datadir", func(t *testing.T) {
		_, err := Setup(ctx, replica.DB(), p, Options{})
		if err == nil || !strings.Contains(err.Error(), filepath.Join(replica.Datadir, "xtrabackup_binlog_info")) {
			t.Errorf("want an error naming %s, got %v", replica.Datadir, err)
		}
		notConfigured(t)
	})

	t.Run("invalid settings never echo the password", func(t *testing.T) {
		secret := "s3cr3t-Value"
		cases := []Primary{
			{Host: "127.0.0.1", Port: primary.Port, User: "repl", Password: secret + strings.Repeat("x", MaxPasswordLength)},
			{Host: "127.0.0.1", Port: primary.Port, User: "repl", Password: secret + "\n"},
			// Too long for MASTER_HOST: the server's error quotes the statement.
			{Host: strings.Repeat("h", 300), Port: primary.Port, User: "repl", Password: secret},
		}
		for i, bad := range cases {
			_, err := Setup(ctx, replica.DB(), bad, Options{Datadir: coords, WaitTimeout: 5 * time.Second})
			if err == nil {
				t.Errorf("case %d: Setup succeeded", i)
				continue
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("case %d: error shows the password: %v", i, err)
			}
		}
	})

	t.Run("wrong password", func(t *testing.T) {
		wrong := p
		wrong.Password = "not-the-password"
		start := time.Now()
		_, err := Setup(ctx, replica.DB(), wrong, Options{Datadir: coords, WaitTimeout: 20 * time.Second, ConnectRetry: time.Second})
		elapsed := time.Since(start)
		if err == nil {
			t.Fatal("Setup succeeded with a wrong password")
		}
		msg := err.Error()
		wantPrefix := fmt.Sprintf("replication cannot connect to primary 127.0.0.1:%d as repl: ", primary.Port)
		if !strings.HasPrefix(msg, wantPrefix) || !strings.Contains(msg, "Access denied") {
			t.Errorf("error = %q, want it to start %q and carry the IO error", msg, wantPrefix)
		}
		if strings.Contains(msg, wrong.Password) {
			t.Errorf("error shows the password: %v", err)
		}
		if elapsed > 15*time.Second {
			t.Errorf("took %s to report an access error", elapsed)
		}
		st, err := ReadStatus(ctx, replica.DB(), "")
		if err != nil {
			t.Fatal(err)
		}
		if !st.Configured || st.IORunning || st.IOState != "No" || st.LastIOErrno != 1045 {
			t.Errorf("after a failed Setup replication should be configured and stopped with error 1045: %+v", st)
		}
	})

	t.Run("right password after a wrong one, NO_BACKSLASH_ESCAPES", func(t *testing.T) {
		// The quoting must follow the session's sql_mode, and a stale
		// access error from the previous attempt must not fail this one.
		var mode string
		if err := replica.DB().QueryRowContext(ctx, "SELECT @@global.sql_mode").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		mustExec(t, replica.DB(), "SET GLOBAL sql_mode = ?", mode+",NO_BACKSLASH_ESCAPES")
		t.Cleanup(func() {
			if _, err := replica.DB().ExecContext(context.Background(), "SET GLOBAL sql_mode = ?", mode); err != nil {
				t.Errorf("restore sql_mode: %v", err)
			}
		})
		db, err := replica.Open("")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		res, err := Setup(ctx, db, p, Options{Datadir: coords, WaitTimeout: 30 * time.Second, CatchUp: true})
		if err != nil {
			t.Fatalf("Setup: %v", err)
		}
		if !res.Replaced || !res.Status.IORunning || !res.Status.SQLRunning || res.Status.LastIOErrno != 0 {
			t.Errorf("Replaced=%v status %+v", res.Replaced, res.Status)
		}
	})

	t.Run("already replicating", func(t *testing.T) {
		_, err := Setup(ctx, replica.DB(), p, Options{Datadir: coords})
		if !errors.Is(err, ErrAlreadyReplicating) {
			t.Fatalf("want ErrAlreadyReplicating, got %v", err)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("127.0.0.1:%d", primary.Port)) {
			t.Errorf("error does not name the current primary: %v", err)
		}
		st, err := ReadStatus(ctx, replica.DB(), "")
		if err != nil {
			t.Fatal(err)
		}
		if !st.IORunning || !st.SQLRunning {
			t.Errorf("a refused Setup disturbed running replication: %+v", st)
		}
		res, err := Setup(ctx, replica.DB(), p, Options{Datadir: coords, Force: true, WaitTimeout: 30 * time.Second})
		if err != nil {
			t.Fatalf("Setup with Force: %v", err)
		}
		if !res.Replaced {
			t.Error("Replaced = false after replacing a running replica")
		}
	})

	t.Run("replicated write arrives", func(t *testing.T) {
		mustExec(t, primary.DB(), "CREATE DATABASE arrived")
		if _, err := CatchUp(ctx, replica.DB(), p, Options{CatchUpTimeout: 30 * time.Second}); err != nil {
			t.Fatal(err)
		}
		var name string
		err := replica.DB().QueryRowContext(ctx, "SELECT schema_name FROM information_schema.schemata WHERE schema_name = 'arrived'").Scan(&name)
		if err != nil {
			t.Fatalf("database created on the primary is not on the replica: %v", err)
		}
	})
}
