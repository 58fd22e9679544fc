package cli

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// A logical round trip on every backend: a dump in small chunks over two
// connections, list, verify, a load into a fresh server, and CHECKSUM
// TABLE of every table equal to the source's.
func TestLogicalRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 3, BigTableMB: 8, Blobs: true}); err != nil {
		t.Fatal(err)
	}
	want, err := sandbox.ChecksumTables(ctx, src.DB())
	if err != nil {
		t.Fatal(err)
	}
	forEachBackend(t, func(t *testing.T, tr testRepo) {
		r := run(t, append([]string{"backup", "--logical", "--repo", tr.Location, "--parallel", "2", "--chunk-size", "256KiB", "--skip-users"}, sandboxConn(src)...)...).mustSucceed(t)
		if !strings.Contains(r.stdout, "logical") {
			t.Errorf("backup printed %q", r.stdout)
		}
		entries := backupListing(t, tr.Location)
		if len(entries) != 1 || entries[0].Kind != "logical" || entries[0].Positions.GTID == "" {
			t.Fatalf("listing %+v, want one logical backup with its GTID position", entries)
		}
		run(t, "verify", "--repo", tr.Location).mustSucceed(t)

		dst := sandboxtest.Start(t, sandbox.Options{})
		run(t, append([]string{"restore", "--repo", tr.Location, "--parallel", "2"}, sandboxConn(dst)...)...).mustSucceed(t)
		got, err := sandbox.ChecksumTables(ctx, dst.DB())
		if err != nil {
			t.Fatal(err)
		}
		usecasetest.CompareChecksums(t, got, want)
	})
}

// Transfers between rows of two different tables run before, during and
// after the dump, each keeping the sum over both tables; the restored sum
// is exact, and the restored transfer log is exactly as long as the GTID
// position recorded in the manifest says.
func TestLogicalConsistencyUnderWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	db := src.DB()
	const rows, initial = 2000, 1000
	for _, q := range []string{
		"CREATE DATABASE bank",
		"CREATE TABLE bank.checking (id INT PRIMARY KEY, balance BIGINT NOT NULL) ENGINE=InnoDB",
		"CREATE TABLE bank.savings (id INT PRIMARY KEY, balance BIGINT NOT NULL) ENGINE=InnoDB",
		fmt.Sprintf("INSERT INTO bank.checking SELECT seq, %d FROM bank.seq_1_to_%d", initial, rows),
		fmt.Sprintf("INSERT INTO bank.savings SELECT seq, %d FROM bank.seq_1_to_%d", initial, rows),
		"CREATE TABLE bank.transfers (id BIGINT AUTO_INCREMENT PRIMARY KEY, src INT, dst INT, amount INT) ENGINE=InnoDB",
		// Bulk, dumped first, so that the dump takes a while.
		"CREATE TABLE bank.filler (id INT PRIMARY KEY, pad VARCHAR(200)) ENGINE=InnoDB",
		"INSERT INTO bank.filler SELECT seq, REPEAT(MD5(seq), 6) FROM bank.seq_1_to_300000",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	startSeq := usecasetest.GTIDSeq(t, db)
	load := usecasetest.StartLoad(2, func(rng *rand.Rand) error {
		from, to := "bank.checking", "bank.savings"
		if rng.IntN(2) == 0 {
			from, to = to, from
		}
		return usecasetest.Transfer(ctx, db, from, to, rng.IntN(rows)+1, rng.IntN(rows)+1, rng.IntN(50)+1)
	})
	load.More(t, 50)
	repoDir := newRepoDir(t)
	before := load.Committed.Load()
	run(t, append([]string{"backup", "--logical", "--repo", repoDir, "--parallel", "2", "--chunk-size", "256KiB", "--skip-users"}, sandboxConn(src)...)...).mustSucceed(t)
	during := load.Committed.Load() - before
	load.More(t, 50)
	load.Finish(t)
	if during == 0 {
		t.Fatal("no transfer committed while the dump ran: the test proves nothing")
	}
	e := backupListing(t, repoDir)[0]
	wantTransfers := usecasetest.SeqOf(t, e.Positions.GTID) - startSeq

	dst := sandboxtest.Start(t, sandbox.Options{})
	run(t, append([]string{"restore", "--repo", repoDir}, sandboxConn(dst)...)...).mustSucceed(t)
	var total, n int64
	if err := dst.DB().QueryRowContext(ctx, "SELECT (SELECT SUM(balance) FROM bank.checking) + (SELECT SUM(balance) FROM bank.savings), (SELECT COUNT(*) FROM bank.transfers)").Scan(&total, &n); err != nil {
		t.Fatal(err)
	}
	if total != 2*rows*initial {
		t.Errorf("restored total %d, want %d: the tables come from different moments", total, 2*rows*initial)
	}
	if n != wantTransfers {
		t.Errorf("restored %d transfers, the manifest's GTID says %d", n, wantTransfers)
	}
	t.Logf("%d transfers committed while the dump ran; %d in the backup", during, n)
}

// Filters and renaming load exactly what was asked for.
func TestLogicalFiltersAndRename(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	for _, q := range []string{
		"CREATE DATABASE a", "CREATE DATABASE b",
		"CREATE TABLE a.t1 (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO a.t1 SELECT seq, seq FROM a.seq_1_to_1000",
		"CREATE TABLE a.log (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO a.log SELECT seq, seq FROM a.seq_1_to_500",
		"CREATE TABLE b.t2 (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO b.t2 SELECT seq, seq FROM b.seq_1_to_700",
		"CREATE VIEW a.v1 AS SELECT id FROM a.t1 WHERE id < 10",
	} {
		if _, err := src.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	want, err := sandbox.ChecksumTables(ctx, src.DB())
	if err != nil {
		t.Fatal(err)
	}
	repoDir := newRepoDir(t)
	run(t, append([]string{"backup", "--logical", "--repo", repoDir, "--skip-users"}, sandboxConn(src)...)...).mustSucceed(t)

	for _, c := range []struct {
		name  string
		args  []string
		want  map[string]string // target table -> source table
		views []string
	}{
		{"database", []string{"--database", "b"}, map[string]string{"b.t2": "b.t2"}, nil},
		{"exclude-table", []string{"--exclude-table", "a.log", "--database", "a"}, map[string]string{"a.t1": "a.t1"}, []string{"a.v1"}},
		{"table", []string{"--table", "a.log"}, map[string]string{"a.log": "a.log"}, nil},
		{"exclude-database", []string{"--exclude-database", "a"}, map[string]string{"b.t2": "b.t2"}, nil},
		// Every filter narrows what the others pick: --table inside
		// --database, exclusions last.
		{"database and table", []string{"--database", "a", "--table", "a.log"}, map[string]string{"a.log": "a.log"}, nil},
		{"table and exclude-table", []string{"--table", "a.t1,a.log", "--exclude-table", "a.log"}, map[string]string{"a.t1": "a.t1"}, nil},
		{"database and exclude-database", []string{"--database", "a,b", "--exclude-database", "a"}, map[string]string{"b.t2": "b.t2"}, nil},
		// The plural names of backup's old flags still work.
		{"old names", []string{"--tables", "a.log"}, map[string]string{"a.log": "a.log"}, nil},
		{"rename", []string{"--database", "a", "--rename-database", "a:a_copy"}, map[string]string{"a_copy.t1": "a.t1", "a_copy.log": "a.log"}, []string{"a_copy.v1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst := sandboxtest.Start(t, sandbox.Options{})
			run(t, append(append([]string{"restore", "--repo", repoDir}, c.args...), sandboxConn(dst)...)...).mustSucceed(t)
			got, err := sandbox.ChecksumTables(ctx, dst.DB())
			if err != nil {
				t.Fatal(err)
			}
			for table, from := range c.want {
				if got[table] != want[from] {
					t.Errorf("%s: checksum %q, want %q (of %s)", table, got[table], want[from], from)
				}
			}
			for table := range got {
				if _, ok := c.want[table]; !ok {
					t.Errorf("%s restored, not asked for", table)
				}
			}
			rows, err := dst.DB().QueryContext(ctx, "SELECT CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) FROM information_schema.VIEWS WHERE TABLE_SCHEMA NOT IN ('mysql', 'sys')")
			if err != nil {
				t.Fatal(err)
			}
			var views []string
			for rows.Next() {
				var v string
				rows.Scan(&v)
				views = append(views, v)
			}
			rows.Close()
			if fmt.Sprint(views) != fmt.Sprint(c.views) {
				t.Errorf("views %v, want %v", views, c.views)
			}
		})
	}
}

// A load killed mid-way refuses to start over by accident, then continues
// with --resume and ends with exact checksums; the journal is gone after.
func TestLogicalResumeAfterKill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 2, BigTableMB: 40}); err != nil {
		t.Fatal(err)
	}
	want, err := sandbox.ChecksumTables(ctx, src.DB())
	if err != nil {
		t.Fatal(err)
	}
	repoDir := newRepoDir(t)
	run(t, append([]string{"backup", "--logical", "--repo", repoDir, "--chunk-size", "128KiB", "--skip-users"}, sandboxConn(src)...)...).mustSucceed(t)

	dst := sandboxtest.Start(t, sandbox.Options{})
	bin := buildBinary(t)
	cmd := exec.Command(bin, append([]string{"restore", "--repo", repoDir, "--parallel", "2", "--progress", "none"}, sandboxConn(dst)...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	loaded := func() int {
		var n int
		dst.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM backstream_load.journal").Scan(&n)
		return n
	}
	for deadline := time.Now().Add(2 * time.Minute); loaded() < 20; {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the load did not get going")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	done := loaded()
	// The small tables are created with their indexes; versions before
	// that created every table without them and added them after the
	// load. A resumed load of a table such a version created must still
	// end with the table's every index.
	if _, err := dst.DB().ExecContext(ctx, "ALTER TABLE sample.small_01 DROP KEY k_name"); err != nil {
		t.Fatalf("the killed load had not created sample.small_01 with its indexes: %v", err)
	}

	r := run(t, append([]string{"restore", "--repo", repoDir}, sandboxConn(dst)...)...)
	if r.code == ExitOK || !strings.Contains(r.err.Error(), "--resume") {
		t.Fatalf("a second load over an interrupted one: exit %d, %v; want a refusal pointing to --resume", r.code, r.err)
	}
	r = run(t, append([]string{"restore", "--repo", repoDir, "--resume"}, sandboxConn(dst)...)...).mustSucceed(t)
	if !strings.Contains(r.stdout, "loaded before") {
		t.Errorf("resume printed %q, want it to say how many files were loaded before", r.stdout)
	}
	got, err := sandbox.ChecksumTables(ctx, dst.DB())
	if err != nil {
		t.Fatal(err)
	}
	usecasetest.CompareChecksums(t, got, want)
	srcDefs, err := sandboxtest.DescribeObjects(ctx, src.DB(), "sample")
	if err != nil {
		t.Fatal(err)
	}
	dstDefs, err := sandboxtest.DescribeObjects(ctx, dst.DB(), "sample")
	if err != nil {
		t.Fatal(err)
	}
	usecasetest.CompareDescriptions(t, dstDefs, srcDefs)
	var n int
	if err := dst.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'backstream_load'").Scan(&n); err != nil || n != 0 {
		t.Errorf("the load journal is still there after the load finished (%v)", err)
	}
	t.Logf("killed after %d journaled files", done)
}

// Bad input: missing privileges, a corrupted data file, tables already on
// the target.
func TestLogicalBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 2}); err != nil {
		t.Fatal(err)
	}
	t.Run("privileges", func(t *testing.T) {
		for _, q := range []string{"CREATE USER weak@localhost", "GRANT SELECT ON sample.* TO weak@localhost"} {
			if _, err := src.DB().ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		r := run(t, "backup", "--logical", "--repo", newRepoDir(t), "--socket", src.Socket, "--user", "weak", "--no-defaults", "--databases", "sample", "--skip-events", "--skip-triggers", "--skip-routines")
		if r.code != ExitFailure || !strings.Contains(r.err.Error(), "RELOAD") {
			t.Errorf("exit %d, %v: want a failure naming the missing RELOAD privilege", r.code, r.err)
		}
	})
	forEachBackend(t, func(t *testing.T, tr testRepo) {
		run(t, append([]string{"backup", "--logical", "--repo", tr.Location, "--skip-users", "--compress", "none"}, sandboxConn(src)...)...).mustSucceed(t)
		e := backupListing(t, tr.Location)[0]
		objs := tr.StreamObjects(t, e.ID)
		data := tr.Read(t, objs[0])
		i := bytes.LastIndex(data, []byte("\t"))
		data[i-1] ^= 0x20
		tr.Write(t, objs[0], data)
		r := run(t, "verify", "--repo", tr.Location)
		if r.code != ExitCorrupt || !strings.Contains(r.err.Error(), e.ID) {
			t.Errorf("verify of a corrupted data file: exit %d, %v", r.code, r.err)
		}
		dst := sandboxtest.Start(t, sandbox.Options{})
		r = run(t, append([]string{"restore", "--repo", tr.Location}, sandboxConn(dst)...)...)
		if r.code != ExitCorrupt || !strings.Contains(r.err.Error(), objs[0][strings.LastIndex(objs[0], "/")+1:]) {
			t.Errorf("restore of a corrupted data file: exit %d, %v; want exit %d naming the object", r.code, r.err, ExitCorrupt)
		}
	})
	t.Run("existing tables", func(t *testing.T) {
		repoDir := newRepoDir(t)
		run(t, append([]string{"backup", "--logical", "--repo", repoDir, "--skip-users"}, sandboxConn(src)...)...).mustSucceed(t)
		dst := sandboxtest.Start(t, sandbox.Options{})
		for _, q := range []string{"CREATE DATABASE sample", "CREATE TABLE sample.small_01 (x INT)", "INSERT INTO sample.small_01 VALUES (42)"} {
			if _, err := dst.DB().ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		r := run(t, append([]string{"restore", "--repo", repoDir}, sandboxConn(dst)...)...)
		if r.code != ExitFailure || !strings.Contains(r.err.Error(), "sample.small_01") || !strings.Contains(r.err.Error(), "--drop-existing") {
			t.Fatalf("exit %d, %v: want a refusal naming sample.small_01 and --drop-existing", r.code, r.err)
		}
		var x int
		if err := dst.DB().QueryRowContext(ctx, "SELECT x FROM sample.small_01").Scan(&x); err != nil || x != 42 {
			t.Errorf("the refused load changed the existing table: %v, %d", err, x)
		}
		run(t, append([]string{"restore", "--repo", repoDir, "--drop-existing"}, sandboxConn(dst)...)...).mustSucceed(t)
		want, _ := sandbox.ChecksumTables(ctx, src.DB())
		got, _ := sandbox.ChecksumTables(ctx, dst.DB())
		usecasetest.CompareChecksums(t, got, want)
	})
}

// Fidelity: a schema with every kind of object and the hardest data, dumped
// whole (users included) and loaded into a fresh server, gives identical
// CHECKSUM TABLE results, SHOW CREATE output of every object, sequence
// rows, users and grants.
func TestLogicalFidelity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandboxtest.LoadFidelitySchema(ctx, src.DB()); err != nil {
		t.Fatal(err)
	}
	dbs := []string{"fid_a", "fid_b"}
	wantSums, err := sandbox.ChecksumTables(ctx, src.DB())
	if err != nil {
		t.Fatal(err)
	}
	wantObjs, err := sandboxtest.DescribeObjects(ctx, src.DB(), dbs...)
	if err != nil {
		t.Fatal(err)
	}
	// SHOW GRANTS lists column grants in an in-memory hash order until
	// the privileges are reloaded.
	src.DB().ExecContext(ctx, "FLUSH PRIVILEGES")
	wantAccts, err := sandboxtest.DescribeAccounts(ctx, src.DB(), sandboxtest.FidelityUsers()...)
	if err != nil {
		t.Fatal(err)
	}
	repoDir := newRepoDir(t)
	run(t, append([]string{"backup", "--logical", "--repo", repoDir, "--parallel", "2", "--chunk-size", "1MiB"}, sandboxConn(src)...)...).mustSucceed(t)
	run(t, "verify", "--repo", repoDir).mustSucceed(t)

	dst := sandboxtest.Start(t, sandbox.Options{})
	run(t, append([]string{"restore", "--repo", repoDir, "--parallel", "2", "--users"}, sandboxConn(dst)...)...).mustSucceed(t)
	gotSums, err := sandbox.ChecksumTables(ctx, dst.DB())
	if err != nil {
		t.Fatal(err)
	}
	usecasetest.CompareChecksums(t, gotSums, wantSums)
	gotObjs, err := sandboxtest.DescribeObjects(ctx, dst.DB(), dbs...)
	if err != nil {
		t.Fatal(err)
	}
	usecasetest.CompareDescriptions(t, gotObjs, wantObjs)
	dst.DB().ExecContext(ctx, "FLUSH PRIVILEGES")
	gotAccts, err := sandboxtest.DescribeAccounts(ctx, dst.DB(), sandboxtest.FidelityUsers()...)
	if err != nil {
		t.Fatal(err)
	}
	usecasetest.CompareDescriptions(t, gotAccts, wantAccts)
	if len(wantObjs) < 40 || len(wantAccts) < 6 {
		t.Errorf("only %d objects and %d account descriptions compared: the fidelity schema is not what it should be", len(wantObjs), len(wantAccts))
	}
}

func showOne(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		return "error: " + err.Error()
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// Accounts are opt-in on a logical restore, and a partial restore is
// whole: without --users the target's accounts do not change; with it the
// backup's are created, the target's kept (or replaced with
// --replace-users) and passwordless ones named; with --table only the
// grants and objects that refer to restored tables are restored, the rest
// listed, exit 0. The target server is named before the load.
func TestLogicalRestoreAccounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	for _, q := range []string{
		"CREATE DATABASE shop",
		"CREATE TABLE shop.items (id INT PRIMARY KEY, v INT)", "INSERT INTO shop.items SELECT seq, seq FROM shop.seq_1_to_100",
		"CREATE TABLE shop.secret (id INT PRIMARY KEY, v INT)", "INSERT INTO shop.secret SELECT seq, seq FROM shop.seq_1_to_10",
		"CREATE VIEW shop.v_items AS SELECT id FROM shop.items",
		"CREATE VIEW shop.v_secret AS SELECT id FROM shop.secret",
		"CREATE TRIGGER shop.secret_ins BEFORE INSERT ON shop.secret FOR EACH ROW SET NEW.v = NEW.v + 1",
		"CREATE PROCEDURE shop.p() SELECT COUNT(*) FROM shop.items",
		"CREATE USER withpw@'%' IDENTIFIED BY 'source-pw'", "GRANT SELECT ON shop.* TO withpw@'%'",
		"CREATE USER nopw@localhost", "GRANT SELECT ON shop.items TO nopw@localhost",
		"CREATE USER tabled@'%' IDENTIFIED BY 'tabled-pw'",
		"GRANT SELECT ON shop.items TO tabled@'%'", "GRANT SELECT, INSERT ON shop.secret TO tabled@'%'",
		"GRANT SELECT (id) ON shop.v_secret TO tabled@'%'", "GRANT EXECUTE ON PROCEDURE shop.p TO tabled@'%'",
	} {
		if _, err := src.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	src.DB().ExecContext(ctx, "FLUSH PRIVILEGES")
	repoDir := newRepoDir(t)
	run(t, append([]string{"backup", "--logical", "--repo", repoDir}, sandboxConn(src)...)...).mustSucceed(t)
	srcCreate := showOne(t, src.DB(), "SHOW CREATE USER withpw@'%'")
	srcGrants := showOne(t, src.DB(), "SHOW GRANTS FOR withpw@'%'")

	// newTarget is a server that has its own withpw@'%'.
	newTarget := func(t *testing.T) *sandbox.Server {
		dst := sandboxtest.Start(t, sandbox.Options{})
		if _, err := dst.DB().ExecContext(ctx, "CREATE USER withpw@'%' IDENTIFIED BY 'target-pw'"); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	targetNamed := func(t *testing.T, r result, dst *sandbox.Server) {
		t.Helper()
		if !strings.Contains(r.stderr, "loading into socket "+dst.Socket) || !strings.Contains(r.stderr, "@@hostname ") || !strings.Contains(r.stderr, "MariaDB ") {
			t.Errorf("stderr %q: want the target named (socket, version, @@hostname)", r.stderr)
		}
	}

	t.Run("without --users", func(t *testing.T) {
		dst := newTarget(t)
		before := usecasetest.Accounts(t, dst.DB())
		theirs := showOne(t, dst.DB(), "SHOW CREATE USER withpw@'%'")
		r := run(t, append([]string{"restore", "--repo", repoDir}, sandboxConn(dst)...)...).mustSucceed(t)
		targetNamed(t, r, dst)
		if after := usecasetest.Accounts(t, dst.DB()); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("accounts changed without --users:\nbefore %v\nafter  %v", before, after)
		}
		if got := showOne(t, dst.DB(), "SHOW CREATE USER withpw@'%'"); got != theirs {
			t.Errorf("withpw changed without --users: %s, was %s", got, theirs)
		}
		if got := showOne(t, dst.DB(), "SHOW GRANTS FOR withpw@'%'"); strings.Contains(got, "shop") {
			t.Errorf("withpw was granted without --users: %s", got)
		}
		var n int
		if err := dst.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM shop.items").Scan(&n); err != nil || n != 100 {
			t.Errorf("shop.items: %d rows, %v", n, err)
		}
	})

	t.Run("with --users", func(t *testing.T) {
		dst := newTarget(t)
		theirs := showOne(t, dst.DB(), "SHOW CREATE USER withpw@'%'")
		r := run(t, append([]string{"restore", "--repo", repoDir, "--users"}, sandboxConn(dst)...)...).mustSucceed(t)
		targetNamed(t, r, dst)
		accts := usecasetest.Accounts(t, dst.DB())
		for _, a := range []string{"nopw@localhost", "tabled@%"} {
			if !slices.Contains(accts, a) {
				t.Errorf("%s not created (accounts %v)", a, accts)
			}
		}
		if got := showOne(t, dst.DB(), "SHOW CREATE USER withpw@'%'"); got != theirs {
			t.Errorf("the target's withpw changed: %s, was %s", got, theirs)
		}
		if got := showOne(t, dst.DB(), "SHOW GRANTS FOR withpw@'%'"); strings.Contains(got, "shop") {
			t.Errorf("the target's withpw was granted: %s", got)
		}
		if strings.Count(r.stdout, "`withpw`@`%`") != 1 || !strings.Contains(r.stdout, "kept") {
			t.Errorf("stdout %q: want withpw reported once as kept", r.stdout)
		}
		if !strings.Contains(r.stderr, "warning: account `nopw`@`localhost` has no password") {
			t.Errorf("stderr %q: want a warning naming nopw@localhost", r.stderr)
		}
		if strings.Contains(r.stderr, "`tabled`@`%` has no password") {
			t.Errorf("stderr %q: tabled has a password", r.stderr)
		}
		if got, want := showOne(t, dst.DB(), "SHOW GRANTS FOR tabled@'%'"), showOne(t, src.DB(), "SHOW GRANTS FOR tabled@'%'"); got != want {
			t.Errorf("tabled's grants:\n%s\nwant\n%s", got, want)
		}
	})

	t.Run("with --users --replace-users", func(t *testing.T) {
		dst := newTarget(t)
		r := run(t, append([]string{"restore", "--repo", repoDir, "--users", "--replace-users"}, sandboxConn(dst)...)...).mustSucceed(t)
		if got := showOne(t, dst.DB(), "SHOW CREATE USER withpw@'%'"); got != srcCreate {
			t.Errorf("withpw not replaced: %s, want %s", got, srcCreate)
		}
		if got := showOne(t, dst.DB(), "SHOW GRANTS FOR withpw@'%'"); got != srcGrants {
			t.Errorf("withpw's grants: %s, want %s", got, srcGrants)
		}
		if !strings.Contains(r.stdout, "accounts replaced: ") || !strings.Contains(r.stdout, "`withpw`@`%`") {
			t.Errorf("stdout %q: want withpw reported as replaced", r.stdout)
		}
		// The restoring account itself is never replaced.
		for _, line := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(line, "accounts replaced: ") && strings.Contains(line, "`root`@`localhost`") {
				t.Errorf("the restoring account was replaced: %q", line)
			}
		}
		fresh, err := dst.Open("")
		if err != nil {
			t.Fatal(err)
		}
		defer fresh.Close()
		if err := fresh.PingContext(ctx); err != nil {
			t.Errorf("the restoring account no longer logs in: %v", err)
		}
	})

	t.Run("--table with --users", func(t *testing.T) {
		dst := newTarget(t)
		r := run(t, append([]string{"restore", "--repo", repoDir, "--table", "shop.items,shop.v_items", "--users", "--json"}, sandboxConn(dst)...)...).mustSucceed(t)
		targetNamed(t, r, dst)
		var rep struct {
			Target struct {
				Socket, Version, Hostname string
				Port                      int
			}
			LeftOut []string `json:"left_out"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("--json output %q: %v", r.stdout, err)
		}
		if rep.Target.Socket != dst.Socket || rep.Target.Version == "" || rep.Target.Hostname == "" || rep.Target.Port == 0 {
			t.Errorf("--json target %+v, want socket %s, version, hostname and port", rep.Target, dst.Socket)
		}
		got := showOne(t, dst.DB(), "SHOW GRANTS FOR tabled@'%'")
		if !strings.Contains(got, "GRANT SELECT ON `shop`.`items` TO `tabled`@`%`") {
			t.Errorf("tabled's grant on shop.items not restored: %s", got)
		}
		if strings.Contains(got, "secret") || strings.Contains(got, "EXECUTE") {
			t.Errorf("tabled got grants on objects not restored: %s", got)
		}
		left := strings.Join(rep.LeftOut, "\n")
		for _, w := range []string{"`shop`.`secret`", "`shop`.`v_secret`", "procedure `shop`.`p`", "view shop.v_secret", "trigger shop.secret_ins", "procedure shop.p"} {
			if !strings.Contains(left, w) {
				t.Errorf("left out:\n%s\nwant it to name %s", left, w)
			}
		}
		if strings.Contains(left, "v_items") || strings.Contains(left, "`shop`.`items`") {
			t.Errorf("left out:\n%s\nnames restored objects", left)
		}
		var n int
		if err := dst.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA IN ('shop', 'backstream_load')").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 2 {
			t.Errorf("%d tables in shop and the journal, want shop.items and shop.v_items alone", n)
		}
		// A second run over the same target is refused for the tables,
		// and does not change the accounts.
		before := usecasetest.Accounts(t, dst.DB())
		if r := run(t, append([]string{"restore", "--repo", repoDir, "--table", "shop.items", "--users"}, sandboxConn(dst)...)...); r.code == ExitOK {
			t.Errorf("a second restore over the restored tables succeeded; want it refused")
		}
		if after := usecasetest.Accounts(t, dst.DB()); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("a refused rerun changed the accounts: %v, then %v", before, after)
		}
	})
}

// A TIMESTAMP column's default is a moment, which SHOW CREATE TABLE prints
// in the session's time zone: from a source whose time zone is not UTC it
// must come back as the same moment, not as the same wall-clock text read
// in UTC.
func TestLogicalTimestampDefaultsOfASourceOutsideUTC(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{Args: []string{"--default-time-zone=+05:00"}})
	for _, q := range []string{
		"CREATE DATABASE tz",
		"CREATE TABLE tz.t (id INT PRIMARY KEY, at TIMESTAMP NOT NULL DEFAULT '2020-01-01 10:00:00', at6 TIMESTAMP(6) NULL DEFAULT '2021-06-01 12:34:56.123456')",
		"INSERT INTO tz.t (id) VALUES (1)",
	} {
		if _, err := src.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	repoDir := newRepoDir(t)
	run(t, append([]string{"backup", "--logical", "--repo", repoDir, "--databases", "tz", "--skip-users"}, sandboxConn(src)...)...).mustSucceed(t)
	dst := sandboxtest.Start(t, sandbox.Options{})
	run(t, append([]string{"restore", "--repo", repoDir}, sandboxConn(dst)...)...).mustSucceed(t)
	// Both read in UTC, and a row that takes the defaults on each.
	read := func(s *sandbox.Server) (create string, at, at6 string) {
		t.Helper()
		c, err := s.DB().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var name string
		for _, q := range []string{"SET time_zone = '+00:00'", "INSERT INTO tz.t (id) VALUES (2)"} {
			if _, err := c.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := c.QueryRowContext(ctx, "SHOW CREATE TABLE tz.t").Scan(&name, &create); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRowContext(ctx, "SELECT CAST(at AS CHAR), CAST(at6 AS CHAR) FROM tz.t WHERE id = 2").Scan(&at, &at6); err != nil {
			t.Fatal(err)
		}
		return create, at, at6
	}
	wantCreate, wantAt, wantAt6 := read(src)
	gotCreate, gotAt, gotAt6 := read(dst)
	if gotCreate != wantCreate {
		t.Errorf("restored definition, read in UTC:\n%s\nsource's:\n%s", gotCreate, wantCreate)
	}
	if gotAt != wantAt || gotAt6 != wantAt6 || wantAt != "2020-01-01 05:00:00" {
		t.Errorf("a new row's defaults in UTC: restored %s, %s; source %s, %s (want 2020-01-01 05:00:00)", gotAt, gotAt6, wantAt, wantAt6)
	}
}
