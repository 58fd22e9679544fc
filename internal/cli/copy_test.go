package cli

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/servercopy"
	"github.com/backstream/backstream/internal/usecasetest"
)

// userChecksums is sandbox.ChecksumTables without the target's record
// of loads and copies (database backstream_load), which a copy keeps.
func userChecksums(t *testing.T, s *sandbox.Server) map[string]string {
	t.Helper()
	sums := usecasetest.Checksums(t, s)
	for k := range sums {
		if strings.HasPrefix(k, "backstream_load.") {
			delete(sums, k)
		}
	}
	return sums
}

// A copy of two databases under new names, with a database and a table
// left out: every copied table has the source's CHECKSUM TABLE, every
// object the source's SHOW CREATE with the names changed, and nothing
// else arrives. The JSON report names what was copied and the position.
func TestCopyRenameAndFilters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandboxtest.LoadFidelitySchema(ctx, src.DB()); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE DATABASE other", "CREATE TABLE other.t (id INT PRIMARY KEY)", "INSERT INTO other.t VALUES (1), (2)",
		"CREATE TABLE fid_b.left_out (id INT PRIMARY KEY)", "INSERT INTO fid_b.left_out VALUES (1)",
	} {
		if _, err := src.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	wantSums := usecasetest.Checksums(t, src)
	wantObjs, err := sandboxtest.DescribeObjects(ctx, src.DB(), "fid_a", "fid_b")
	if err != nil {
		t.Fatal(err)
	}
	dst := sandboxtest.Start(t, sandbox.Options{})
	r := run(t, append([]string{"copy", "--parallel", "2", "--chunk-size", "1MiB", "--json",
		// The plural spelling, as backup and restore take it too.
		"--exclude-databases", "other", "--exclude-table", "fid_b.left_out",
		"--rename-database", "fid_a:fid_a_copy", "--rename-database", "fid_b:fid_b_copy"}, copyConn(src, dst)...)...).mustSucceed(t)
	var rep servercopy.JSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("copy --json: %v\n%s", err, r.stdout)
	}
	var gtid string
	if err := src.DB().QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&gtid); err != nil {
		t.Fatal(err)
	}
	if rep.GTIDPosition != gtid || rep.BinlogFile == "" || rep.Rows < sandboxtest.FidelityBigRows || rep.Resumed {
		t.Errorf("report: gtid %q (source %q), binlog %q, %d rows, resumed %v", rep.GTIDPosition, gtid, rep.BinlogFile, rep.Rows, rep.Resumed)
	}

	renamed := strings.NewReplacer("fid_a", "fid_a_copy", "fid_b", "fid_b_copy")
	got := userChecksums(t, dst)
	for name, sum := range wantSums {
		if strings.HasPrefix(name, "other.") || name == "fid_b.left_out" {
			if _, ok := got[name]; ok {
				t.Errorf("%s copied, but left out by the filters", name)
			}
			continue
		}
		if g := got[renamed.Replace(name)]; g != sum {
			t.Errorf("%s: checksum %q, the source's %s has %q", renamed.Replace(name), g, name, sum)
		}
		delete(got, renamed.Replace(name))
	}
	for name := range got {
		t.Errorf("%s on the target, not copied from the source", name)
	}
	gotObjs, err := sandboxtest.DescribeObjects(ctx, dst.DB(), "fid_a_copy", "fid_b_copy")
	if err != nil {
		t.Fatal(err)
	}
	// A trigger whose text names its own database is made unqualified
	// in the renamed one (as a restore does): the same trigger.
	ownDB := regexp.MustCompile(`(TRIGGER|ON) fid_[ab]_copy\.`)
	want := map[string]string{}
	for k, v := range wantObjs {
		if strings.Contains(k, "left_out") {
			continue
		}
		want[renamed.Replace(k)] = ownDB.ReplaceAllString(renamed.Replace(v), "$1 ")
	}
	usecasetest.CompareDescriptions(t, gotObjs, want)
	if len(want) < 40 {
		t.Errorf("only %d objects compared", len(want))
	}
}

// A copy killed (SIGKILL) mid-load refuses to start over by accident,
// then, with --resume after the source changed, finishes from a new
// snapshot: the target equals the source as that snapshot has it; a
// table the killed run loaded whole and nobody changed is kept, one that
// changed on the source loaded again; the GTID position printed is the
// one recorded on the target, and the source's.
func TestCopyResumeAfterKill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	for _, q := range []string{
		"CREATE DATABASE r",
		// Without a key: one scan by one connection, slow under --max-rate,
		// while the other connection copies the small tables.
		"CREATE TABLE r.big (a INT NOT NULL, pad VARCHAR(200) NOT NULL) ENGINE=InnoDB",
		"INSERT INTO r.big SELECT seq, REPEAT(MD5(seq), 6) FROM r.seq_1_to_120000",
		"CREATE TABLE r.kept (id INT PRIMARY KEY, v VARCHAR(40) NOT NULL, KEY v (v)) ENGINE=InnoDB",
		"INSERT INTO r.kept SELECT seq, MD5(seq) FROM r.seq_1_to_3000",
		"CREATE TABLE r.changed (id INT PRIMARY KEY AUTO_INCREMENT, v INT NOT NULL) ENGINE=InnoDB",
		"INSERT INTO r.changed (v) SELECT seq FROM r.seq_1_to_3000",
	} {
		if _, err := src.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	dst := sandboxtest.Start(t, sandbox.Options{})
	bin := buildBinary(t)
	var stderr strings.Builder
	cmd := exec.Command(bin, append([]string{"copy", "--parallel", "2", "--chunk-size", "256KiB", "--max-rate", "1MiB/s", "--progress", "none"}, copyConn(src, dst)...)...)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	count := func(q string) int {
		var n int
		dst.DB().QueryRowContext(ctx, q).Scan(&n)
		return n
	}
	// Both small tables complete, and data files of the big one loaded.
	for deadline := time.Now().Add(2 * time.Minute); count("SELECT COUNT(*) FROM backstream_load.tables WHERE complete") < 2 ||
		count("SELECT COUNT(*) FROM r.big") == 0; {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the copy did not get going; stderr: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if n := count("SELECT COUNT(*) FROM backstream_load.tables WHERE complete AND tbl = 'big'"); n != 0 {
		t.Fatalf("the big table was complete before the kill: the test proves nothing")
	}

	r := run(t, append([]string{"copy"}, copyConn(src, dst)...)...)
	if r.code != ExitFailure || !strings.Contains(r.err.Error(), "--resume") || !strings.Contains(r.err.Error(), "--drop-existing") {
		t.Fatalf("a copy over an unfinished one: exit %d, %v; want a refusal naming --resume and --drop-existing", r.code, r.err)
	}
	for _, q := range []string{
		"UPDATE r.changed SET v = v + 1 WHERE id % 10 = 0", "INSERT INTO r.changed (v) VALUES (-1)",
		"INSERT INTO r.big VALUES (-1, 'after the kill')", "UPDATE r.big SET pad = 'changed' WHERE a = 7",
	} {
		if _, err := src.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	r = run(t, append([]string{"copy", "--resume", "--parallel", "2"}, copyConn(src, dst)...)...).mustSucceed(t)
	for _, want := range []string{"table r.kept kept", "table r.changed reloaded from scratch: its rows on the source changed", "resumed: 1 tables kept"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("resume printed %q; want it to say %q", r.stdout, want)
		}
	}
	usecasetest.CompareChecksums(t, userChecksums(t, dst), userChecksums(t, src))
	wantObjs, err := sandboxtest.DescribeObjects(ctx, src.DB(), "r")
	if err != nil {
		t.Fatal(err)
	}
	gotObjs, err := sandboxtest.DescribeObjects(ctx, dst.DB(), "r")
	if err != nil {
		t.Fatal(err)
	}
	usecasetest.CompareDescriptions(t, gotObjs, wantObjs)
	printed := regexp.MustCompile(`source position: GTID (\S+),`).FindStringSubmatch(r.stdout)
	var recorded, now string
	if err := dst.DB().QueryRowContext(ctx, "SELECT gtid_binlog_pos FROM backstream_load.copies WHERE finished IS NOT NULL").Scan(&recorded); err != nil {
		t.Fatal(err)
	}
	if err := src.DB().QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&now); err != nil {
		t.Fatal(err)
	}
	if printed == nil || printed[1] != recorded || recorded != now {
		t.Errorf("GTID position printed %q, recorded %q, the source's %q: want all three equal", printed, recorded, now)
	}
	if n := count("SELECT COUNT(*) FROM backstream_load.journal") + count("SELECT COUNT(*) FROM backstream_load.tables"); n != 0 {
		t.Errorf("%d journal rows left after the copy finished", n)
	}
}

// --replicate: after the copy the target replicates from the source, from
// the copy's position: a write on the source after the copy arrives. A
// second target copied without it replicates later the same way, from
// the position it recorded (replicate --from-copy).
func TestCopyReplicate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 2, BigTableMB: 4}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE USER 'repl'@'%' IDENTIFIED BY 'repl-secret'",
		"GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO 'repl'@'%'",
	} {
		if _, err := src.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	cnf := filepath.Join(t.TempDir(), "repl.cnf")
	if err := os.WriteFile(cnf, []byte("[backstream-primary]\nuser=repl\npassword=repl-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	primary := []string{"--primary-host", "127.0.0.1", "--primary-port", fmt.Sprint(src.Port), "--primary-defaults-file", cnf}
	dst := sandboxtest.Start(t, sandbox.Options{})
	r := run(t, append(append([]string{"copy", "--replicate", "--json"}, primary...), copyConn(src, dst)...)...).mustSucceed(t)
	var rep servercopy.JSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("copy --json: %v\n%s", err, r.stdout)
	}
	if rep.Replication == nil || !rep.Replication.UsingGTID || rep.Replication.GTID != rep.GTIDPosition || rep.GTIDPosition == "" {
		t.Fatalf("replication %+v, want it by GTID from the copy's position %q", rep.Replication, rep.GTIDPosition)
	}
	if strings.Contains(r.stdout+r.stderr, "repl-secret") {
		t.Error("the replication password was printed")
	}

	later := sandboxtest.Start(t, sandbox.Options{})
	run(t, append([]string{"copy"}, copyConn(src, later)...)...).mustSucceed(t)
	if _, err := src.DB().ExecContext(ctx, "INSERT INTO sample.small_01 (id, big, name) VALUES (1000001, 42, 'after the copies')"); err != nil {
		t.Fatal(err)
	}
	r = run(t, append([]string{"replicate", "--from-copy", "--socket", later.Socket, "--user", "root", "--no-defaults"}, primary...)...).mustSucceed(t)
	if !strings.Contains(r.stdout, "starting at GTID "+rep.GTIDPosition+" (from copy ") {
		t.Errorf("replicate --from-copy printed %q; want it to start at the copy's position %s", r.stdout, rep.GTIDPosition)
	}
	for _, s := range []*sandbox.Server{dst, later} {
		var got sql.NullString
		for deadline := time.Now().Add(time.Minute); !got.Valid; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the write on the source after the copy did not reach a target")
			}
			s.DB().QueryRowContext(ctx, "SELECT name FROM sample.small_01 WHERE id = 1000001").Scan(&got)
		}
		usecasetest.CompareChecksums(t, userChecksums(t, s), userChecksums(t, src))
	}
}

// What a copy refuses, before anything changes: the same server as
// source and target (by its socket twice, or its socket and its TCP
// port, also when [backstream-copy] names them), tables the target has
// (until --drop-existing), --resume with nothing to resume, --replicate
// with filters.
func TestCopyRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 2}); err != nil {
		t.Fatal(err)
	}
	journal := func(s *sandbox.Server) int {
		var n int
		s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'backstream_load'").Scan(&n)
		return n
	}
	for _, to := range [][]string{{"--to", src.Socket}, {"--to", fmt.Sprintf("127.0.0.1:%d", src.Port)}} {
		r := run(t, append([]string{"copy", "--from", src.Socket, "--from-user", "root", "--to-user", "root", "--no-defaults"}, to...)...)
		if r.code != ExitFailure || !strings.Contains(r.err.Error(), "the same server") {
			t.Errorf("copy onto itself (%s): exit %d, %v; want a refusal", to[1], r.code, r.err)
		}
	}
	// The same, with --from and --to from the command's group of an
	// option file.
	cnf := filepath.Join(t.TempDir(), "copy.cnf")
	if err := os.WriteFile(cnf, []byte(fmt.Sprintf("[backstream-copy]\nfrom = %s\nto = 127.0.0.1:%d\nfrom-user = root\nto-user = root\n", src.Socket, src.Port)), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := run(t, "copy", "--defaults-file", cnf); r.code != ExitFailure || !strings.Contains(r.err.Error(), "the same server") {
		t.Errorf("copy onto itself from [backstream-copy]: exit %d, %v; want a refusal", r.code, r.err)
	}
	if journal(src) != 0 {
		t.Error("a refused copy onto itself changed the server")
	}

	dst := sandboxtest.Start(t, sandbox.Options{})
	for _, q := range []string{"CREATE DATABASE sample", "CREATE TABLE sample.small_01 (x INT)", "INSERT INTO sample.small_01 VALUES (42)"} {
		if _, err := dst.DB().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	r := run(t, append([]string{"copy"}, copyConn(src, dst)...)...)
	if r.code != ExitFailure || !strings.Contains(r.err.Error(), "sample.small_01") || !strings.Contains(r.err.Error(), "--drop-existing") {
		t.Fatalf("copy over an existing table: exit %d, %v; want a refusal naming sample.small_01 and --drop-existing", r.code, r.err)
	}
	var x int
	if err := dst.DB().QueryRowContext(ctx, "SELECT x FROM sample.small_01").Scan(&x); err != nil || x != 42 || journal(dst) != 0 {
		t.Errorf("the refused copy changed the target: %v, %d, journal database %d", err, x, journal(dst))
	}
	r = run(t, append([]string{"copy", "--resume"}, copyConn(src, dst)...)...)
	if r.code != ExitFailure || !strings.Contains(r.err.Error(), "no unfinished copy") {
		t.Errorf("--resume with nothing to resume: exit %d, %v", r.code, r.err)
	}
	r = run(t, append([]string{"copy", "--replicate", "--primary-host", "127.0.0.1", "--primary-user", "repl", "--database", "sample"}, copyConn(src, dst)...)...)
	if r.code != ExitUsage || !strings.Contains(r.err.Error(), "--database") {
		t.Errorf("--replicate with --database: exit %d, %v; want a usage error", r.code, r.err)
	}
	run(t, append([]string{"copy", "--drop-existing"}, copyConn(src, dst)...)...).mustSucceed(t)
	usecasetest.CompareChecksums(t, userChecksums(t, dst), userChecksums(t, src))
}

// A copy with --mask and --rename-database: the masked columns differ from
// the source on every row, the tables still join on them as on the source,
// and no unmasked value is anywhere in the target's datadir (its tables,
// redo, binary logs). --replicate with --mask is refused: the replica
// would apply the source's writes unmasked.
func TestCopyMasked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	for _, q := range []string{
		"CREATE DATABASE shop",
		"CREATE TABLE shop.customers (id BIGINT PRIMARY KEY, email VARCHAR(64) NOT NULL, name VARCHAR(40))",
		"CREATE TABLE shop.orders (id INT PRIMARY KEY, customer_id BIGINT NOT NULL, email VARCHAR(64) NOT NULL)",
		"INSERT INTO shop.customers SELECT seq * 7919, CONCAT('person', seq, '@secret-corp.test'), CONCAT('name', seq) FROM shop.seq_1_to_500",
		"INSERT INTO shop.orders SELECT seq, (seq % 500 + 1) * 7919, CONCAT('person', seq % 500 + 1, '@secret-corp.test') FROM shop.seq_1_to_2000",
	} {
		if _, err := src.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	keyFile := filepath.Join(t.TempDir(), "mask.key")
	if err := os.WriteFile(keyFile, []byte("a key of more than sixteen bytes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	masks := []string{"--mask-key-file", keyFile,
		"--mask", "shop.customers.id=hash", "--mask", "shop.orders.customer_id=hash",
		"--mask", "shop.customers.email=email", "--mask", "shop.orders.email=email"}
	dst := sandboxtest.Start(t, sandbox.Options{})
	r := run(t, append(append([]string{"copy", "--replicate"}, masks...), copyConn(src, dst)...)...)
	if r.code != ExitUsage || !strings.Contains(r.err.Error(), "--replicate with --mask") {
		t.Errorf("copy --replicate --mask: exit %d, %v; want a usage error", r.code, r.err)
	}
	r = run(t, append(append([]string{"copy", "--parallel", "2", "--rename-database", "shop:staging"}, masks...), copyConn(src, dst)...)...).mustSucceed(t)
	if !strings.Contains(r.stdout, "masked as copied: shop.customers.email=email, shop.customers.id=hash, shop.orders.customer_id=hash, shop.orders.email=email\n") {
		t.Errorf("copy did not say what it masked:\n%s", r.stdout)
	}
	var joined, leaked, sameID int
	const join = "SELECT COUNT(*) FROM %s.orders o JOIN %s.customers c ON c.id = o.customer_id AND c.email = o.email"
	if err := src.DB().QueryRowContext(ctx, fmt.Sprintf(join, "shop", "shop")).Scan(&joined); err != nil || joined != 2000 {
		t.Fatalf("source join: %d rows, %v", joined, err)
	}
	if err := dst.DB().QueryRowContext(ctx, fmt.Sprintf(join, "staging", "staging")).Scan(&joined); err != nil || joined != 2000 {
		t.Errorf("masked join on the target: %d rows (%v), want 2000 as on the source", joined, err)
	}
	if err := dst.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM staging.customers WHERE email LIKE '%secret-corp%' OR id % 7919 = 0").Scan(&leaked); err != nil || leaked != 0 {
		t.Errorf("%d customers on the target keep a source value (%v)", leaked, err)
	}
	if err := dst.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM staging.customers WHERE name LIKE 'name%'").Scan(&sameID); err != nil || sameID != 500 {
		t.Errorf("unmasked column: %d of 500 rows as on the source (%v)", sameID, err)
	}
	if _, err := dst.DB().ExecContext(ctx, "FLUSH BINARY LOGS"); err != nil {
		t.Fatal(err)
	}
	// Every file of the target: a value that reached it unmasked would
	// be in its tablespaces, redo log or binary log as written.
	var files int
	err := filepath.WalkDir(dst.Datadir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		if bytes.Contains(b, []byte("secret-corp")) {
			t.Errorf("%s holds an unmasked e-mail address", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The control: the source's files do hold them.
	var inSource bool
	_ = filepath.WalkDir(src.Datadir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte("secret-corp")) {
				inSource = true
			}
		}
		return nil
	})
	if !inSource || files < 10 {
		t.Errorf("the search would find nothing: source files hold the addresses: %v; %d target files read", inSource, files)
	}
}
