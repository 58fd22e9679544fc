package cli

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
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
		r := run(t, append([]string{"backup", "--logical", "--repo", tr.location, "--parallel", "2", "--chunk-size", "256KiB", "--skip-users"}, sandboxConn(src)...)...).mustSucceed(t)
		if !strings.Contains(r.stdout, "logical") {
			t.Errorf("backup printed %q", r.stdout)
		}
		entries := backupListing(t, tr.location)
		if len(entries) != 1 || entries[0].Kind != "logical" || entries[0].Positions.GTID == "" {
			t.Fatalf("listing %+v, want one logical backup with its GTID position", entries)
		}
		run(t, "verify", "--repo", tr.location).mustSucceed(t)

		dst := sandboxtest.Start(t, sandbox.Options{})
		run(t, append([]string{"restore", "--repo", tr.location, "--parallel", "2"}, sandboxConn(dst)...)...).mustSucceed(t)
		got, err := sandbox.ChecksumTables(ctx, dst.DB())
		if err != nil {
			t.Fatal(err)
		}
		compareChecksums(t, got, want)
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
	startSeq := gtidSeq(t, db)
	load := startLoad(2, func(rng *rand.Rand) error {
		from, to := "bank.checking", "bank.savings"
		if rng.IntN(2) == 0 {
			from, to = to, from
		}
		return transfer(ctx, db, from, to, rng.IntN(rows)+1, rng.IntN(rows)+1, rng.IntN(50)+1)
	})
	load.more(t, 50)
	repoDir := filepath.Join(t.TempDir(), "repo")
	before := load.committed.Load()
	run(t, append([]string{"backup", "--logical", "--repo", repoDir, "--parallel", "2", "--chunk-size", "256KiB", "--skip-users"}, sandboxConn(src)...)...).mustSucceed(t)
	during := load.committed.Load() - before
	load.more(t, 50)
	load.finish(t)
	if during == 0 {
		t.Fatal("no transfer committed while the dump ran: the test proves nothing")
	}
	e := backupListing(t, repoDir)[0]
	wantTransfers := seqOf(t, e.Positions.GTID) - startSeq

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
	repoDir := filepath.Join(t.TempDir(), "repo")
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
	repoDir := filepath.Join(t.TempDir(), "repo")
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
	compareChecksums(t, got, want)
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
		r := run(t, "backup", "--logical", "--repo", filepath.Join(t.TempDir(), "repo"), "--socket", src.Socket, "--user", "weak", "--no-defaults", "--databases", "sample")
		if r.code != ExitFailure || !strings.Contains(r.err.Error(), "RELOAD") {
			t.Errorf("exit %d, %v: want a failure naming the missing RELOAD privilege", r.code, r.err)
		}
	})
	forEachBackend(t, func(t *testing.T, tr testRepo) {
		run(t, append([]string{"backup", "--logical", "--repo", tr.location, "--skip-users", "--compress", "none"}, sandboxConn(src)...)...).mustSucceed(t)
		e := backupListing(t, tr.location)[0]
		objs := tr.streamObjects(t, e.ID)
		data := tr.read(t, objs[0])
		i := bytes.LastIndex(data, []byte("\t"))
		data[i-1] ^= 0x20
		tr.write(t, objs[0], data)
		r := run(t, "verify", "--repo", tr.location)
		if r.code != ExitCorrupt || !strings.Contains(r.err.Error(), e.ID) {
			t.Errorf("verify of a corrupted data file: exit %d, %v", r.code, r.err)
		}
		dst := sandboxtest.Start(t, sandbox.Options{})
		r = run(t, append([]string{"restore", "--repo", tr.location}, sandboxConn(dst)...)...)
		if r.code != ExitCorrupt || !strings.Contains(r.err.Error(), objs[0][strings.LastIndex(objs[0], "/")+1:]) {
			t.Errorf("restore of a corrupted data file: exit %d, %v; want exit %d naming the object", r.code, r.err, ExitCorrupt)
		}
	})
	t.Run("existing tables", func(t *testing.T) {
		repoDir := filepath.Join(t.TempDir(), "repo")
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
		compareChecksums(t, got, want)
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
	repoDir := filepath.Join(t.TempDir(), "repo")
	run(t, append([]string{"backup", "--logical", "--repo", repoDir, "--parallel", "2", "--chunk-size", "1MiB"}, sandboxConn(src)...)...).mustSucceed(t)
	run(t, "verify", "--repo", repoDir).mustSucceed(t)

	dst := sandboxtest.Start(t, sandbox.Options{})
	run(t, append([]string{"restore", "--repo", repoDir, "--parallel", "2"}, sandboxConn(dst)...)...).mustSucceed(t)
	gotSums, err := sandbox.ChecksumTables(ctx, dst.DB())
	if err != nil {
		t.Fatal(err)
	}
	compareChecksums(t, gotSums, wantSums)
	gotObjs, err := sandboxtest.DescribeObjects(ctx, dst.DB(), dbs...)
	if err != nil {
		t.Fatal(err)
	}
	compareDescriptions(t, gotObjs, wantObjs)
	dst.DB().ExecContext(ctx, "FLUSH PRIVILEGES")
	gotAccts, err := sandboxtest.DescribeAccounts(ctx, dst.DB(), sandboxtest.FidelityUsers()...)
	if err != nil {
		t.Fatal(err)
	}
	compareDescriptions(t, gotAccts, wantAccts)
	if len(wantObjs) < 40 || len(wantAccts) < 6 {
		t.Errorf("only %d objects and %d account descriptions compared: the fidelity schema is not what it should be", len(wantObjs), len(wantAccts))
	}
}

func compareDescriptions(t *testing.T, got, want map[string]string) {
	t.Helper()
	for k, w := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("%s: missing after the restore", k)
		} else if g != w {
			t.Errorf("%s differs:\n got: %s\nwant: %s", k, g, w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: restored but not in the source", k)
		}
	}
}
