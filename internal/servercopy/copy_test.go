package servercopy_test

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
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/provision"
	"github.com/backstream/backstream/internal/replica"
	"github.com/backstream/backstream/internal/restorecase"
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
// else arrives. The result names what was copied and the position.
func TestCopyRenameAndFilters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandboxtest.LoadFidelitySchema(ctx, src.DB()); err != nil {
		t.Fatal(err)
	}
	usecasetest.ExecAll(t, src.DB(),
		"CREATE DATABASE other", "CREATE TABLE other.t (id INT PRIMARY KEY)", "INSERT INTO other.t VALUES (1), (2)",
		"CREATE TABLE fid_b.left_out (id INT PRIMARY KEY)", "INSERT INTO fid_b.left_out VALUES (1)")
	wantSums := usecasetest.Checksums(t, src)
	wantObjs, err := sandboxtest.DescribeObjects(ctx, src.DB(), "fid_a", "fid_b")
	if err != nil {
		t.Fatal(err)
	}
	dst := sandboxtest.Start(t, sandbox.Options{})
	job := usecasetest.CopyOf(t, src, dst, restorecase.Choices{ExcludeDatabases: []string{"other"}, ExcludeTables: []string{"fid_b.left_out"},
		Rename: []string{"fid_a:fid_a_copy", "fid_b:fid_b_copy"}})
	job.Parallel, job.ChunkBytes = 2, 1<<20
	res := usecasetest.Copy(t, job)
	var gtid string
	if err := src.DB().QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&gtid); err != nil {
		t.Fatal(err)
	}
	if res.Position.GTID != gtid || res.Position.BinlogFile == "" || res.Load.Rows < sandboxtest.FidelityBigRows || res.Resumed {
		t.Errorf("result: gtid %q (source %q), binlog %q, %d rows, resumed %v", res.Position.GTID, gtid, res.Position.BinlogFile, res.Load.Rows, res.Resumed)
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

// copyChildEnv, set, makes TestCopyResumeAfterKill the copy its parent
// kills: from the socket before the space into the one after it.
const copyChildEnv = "BACKSTREAM_TEST_COPY_CHILD"

// A copy killed (SIGKILL: a process of its own, the test binary run
// again) mid-load refuses to start over by accident, then, resumed after
// the source changed, finishes from a new snapshot: the target equals the
// source as that snapshot has it; a table the killed run loaded whole and
// nobody changed is kept, one that changed on the source loaded again;
// the GTID position of the result is the one recorded on the target, and
// the source's.
func TestCopyResumeAfterKill(t *testing.T) {
	if sockets := os.Getenv(copyChildEnv); sockets != "" {
		from, to, _ := strings.Cut(sockets, " ")
		job := servercopy.Job{From: mariadb.Config{Socket: from, User: "root", Protocol: mariadb.ProtocolSocket},
			To: mariadb.Config{Socket: to, User: "root", Protocol: mariadb.ProtocolSocket}, Parallel: 2, ChunkBytes: 256 << 10, MaxRate: 1 << 20}
		if err := job.SetChoices(restorecase.Choices{}); err != nil {
			t.Fatal(err)
		}
		_, err := servercopy.Run(context.Background(), job)
		t.Fatalf("the copy to be killed ended: %v", err)
	}
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	usecasetest.ExecAll(t, src.DB(),
		"CREATE DATABASE r",
		// Without a key: one scan by one connection, slow under MaxRate,
		// while the other connection copies the small tables.
		"CREATE TABLE r.big (a INT NOT NULL, pad VARCHAR(200) NOT NULL) ENGINE=InnoDB",
		"INSERT INTO r.big SELECT seq, REPEAT(MD5(seq), 6) FROM r.seq_1_to_120000",
		"CREATE TABLE r.kept (id INT PRIMARY KEY, v VARCHAR(40) NOT NULL, KEY v (v)) ENGINE=InnoDB",
		"INSERT INTO r.kept SELECT seq, MD5(seq) FROM r.seq_1_to_3000",
		"CREATE TABLE r.changed (id INT PRIMARY KEY AUTO_INCREMENT, v INT NOT NULL) ENGINE=InnoDB",
		"INSERT INTO r.changed (v) SELECT seq FROM r.seq_1_to_3000")
	dst := sandboxtest.Start(t, sandbox.Options{})
	var childOut bytes.Buffer
	cmd := exec.Command(os.Args[0], "-test.run=^TestCopyResumeAfterKill$", "-test.v")
	cmd.Env = append(os.Environ(), copyChildEnv+"="+src.Socket+" "+dst.Socket)
	cmd.Stdout, cmd.Stderr = &childOut, &childOut
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
			cmd.Wait()
			t.Fatalf("the copy did not get going; its output: %s", childOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if n := count("SELECT COUNT(*) FROM backstream_load.tables WHERE complete AND tbl = 'big'"); n != 0 {
		t.Fatalf("the big table was complete before the kill: the test proves nothing")
	}

	_, err := servercopy.Run(ctx, usecasetest.CopyOf(t, src, dst, restorecase.Choices{}))
	if !usecasetest.Failed(err) || !strings.Contains(err.Error(), "--resume") || !strings.Contains(err.Error(), "--drop-existing") {
		t.Fatalf("a copy over an unfinished one: %v; want a failure (not a usage error) naming --resume and --drop-existing", err)
	}
	usecasetest.ExecAll(t, src.DB(),
		"UPDATE r.changed SET v = v + 1 WHERE id % 10 = 0", "INSERT INTO r.changed (v) VALUES (-1)",
		"INSERT INTO r.big VALUES (-1, 'after the kill')", "UPDATE r.big SET pad = 'changed' WHERE a = 7")
	job := usecasetest.CopyOf(t, src, dst, restorecase.Choices{Resume: true})
	job.Parallel = 2
	res := usecasetest.Copy(t, job)
	if !res.Resumed || len(res.Load.Kept) != 1 || !strings.HasPrefix(res.Load.Kept[0], "table r.kept kept") ||
		!slices.ContainsFunc(res.Load.Reloaded, func(s string) bool {
			return strings.HasPrefix(s, "table r.changed reloaded from scratch: its rows on the source changed")
		}) {
		t.Errorf("resumed %v, kept %q, reloaded %q; want r.kept the one table kept and r.changed reloaded from scratch as its rows on the source changed",
			res.Resumed, res.Load.Kept, res.Load.Reloaded)
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
	var recorded, now string
	if err := dst.DB().QueryRowContext(ctx, "SELECT gtid_binlog_pos FROM backstream_load.copies WHERE finished IS NOT NULL").Scan(&recorded); err != nil {
		t.Fatal(err)
	}
	if err := src.DB().QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&now); err != nil {
		t.Fatal(err)
	}
	if res.Position.GTID == "" || res.Position.GTID != recorded || recorded != now {
		t.Errorf("GTID position of the result %q, recorded %q, the source's %q: want all three equal", res.Position.GTID, recorded, now)
	}
	if n := count("SELECT COUNT(*) FROM backstream_load.journal") + count("SELECT COUNT(*) FROM backstream_load.tables"); n != 0 {
		t.Errorf("%d journal rows left after the copy finished", n)
	}
}

// Replicate: after the copy the target replicates from the source, from
// the copy's position: a write on the source after the copy arrives. A
// second target copied without it replicates later the same way, from
// the position it recorded (provision.SetupReplica with FromCopy, what
// replicate --from-copy runs).
func TestCopyReplicate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 2, BigTableMB: 4}); err != nil {
		t.Fatal(err)
	}
	usecasetest.ExecAll(t, src.DB(),
		"CREATE USER 'repl'@'%' IDENTIFIED BY 'repl-secret'",
		"GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO 'repl'@'%'")
	cnf := filepath.Join(t.TempDir(), "repl.cnf")
	if err := os.WriteFile(cnf, []byte("[backstream-primary]\nuser=repl\npassword=repl-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// --primary-host 127.0.0.1 --primary-port P --primary-defaults-file cnf
	primary := replica.Named{File: cnf, Given: replica.Primary{Host: "127.0.0.1", Port: src.Port}, HostGiven: true, PortGiven: true}
	dst := sandboxtest.Start(t, sandbox.Options{})
	job := usecasetest.CopyOf(t, src, dst, restorecase.Choices{})
	p, err := primary.Resolve(replica.PrimaryAt(job.From))
	if err != nil {
		t.Fatal(err)
	}
	job.Replicate = &p
	// What copy prints besides its result: the servers it reached.
	var printed bytes.Buffer
	job.OnServers = func(s, t servercopy.Server) { fmt.Fprintf(&printed, "copy: from %s\ncopy: into %s\n", s, t) }
	res := usecasetest.Copy(t, job)
	if res.Replication == nil || !res.Replication.UsingGTID || res.Replication.GTID != res.Position.GTID || res.Position.GTID == "" {
		t.Fatalf("replication %+v, want it by GTID from the copy's position %q", res.Replication, res.Position.GTID)
	}
	// What copy --json prints of the result.
	if err := json.NewEncoder(&printed).Encode(res.JSON(time.Second, nil)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(printed.String(), "repl-secret") {
		t.Error("the replication password is in what copy prints")
	}

	later := sandboxtest.Start(t, sandbox.Options{})
	usecasetest.Copy(t, usecasetest.CopyOf(t, src, later, restorecase.Choices{}))
	if _, err := src.DB().ExecContext(ctx, "INSERT INTO sample.small_01 (id, big, name) VALUES (1000001, 42, 'after the copies')"); err != nil {
		t.Fatal(err)
	}
	req := provision.ReplicaRequest{Conn: usecasetest.Conn(later), FromCopy: true}
	if req.Primary, err = primary.Resolve(replica.Primary{}); err != nil {
		t.Fatal(err)
	}
	if err := req.Check(); err != nil {
		t.Fatal(err)
	}
	sum, err := provision.SetupReplica(ctx, req)
	if err != nil {
		t.Fatalf("replicate from the copy: %v", err)
	}
	if !sum.UsingGTID || sum.GTID != res.Position.GTID || !strings.HasPrefix(sum.PositionFrom, "copy ") {
		t.Errorf("replication from the copy %+v; want it to start at the copy's GTID position %s, from the copy", sum, res.Position.GTID)
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
// port), tables the target has (until DropExisting), Resume with nothing
// to resume. (That the servers may come from [backstream-copy], and that
// --replicate refuses filters, internal/cli's TestCopyRefusals checks.)
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
	byTCP := mariadb.Config{Host: "127.0.0.1", Port: src.Port, User: "root", Protocol: mariadb.ProtocolTCP}
	for _, to := range []mariadb.Config{usecasetest.Conn(src), byTCP} {
		job := usecasetest.CopyOf(t, src, src, restorecase.Choices{})
		job.To = to
		if _, err := servercopy.Run(ctx, job); !usecasetest.Failed(err) || !strings.Contains(err.Error(), "the same server") {
			t.Errorf("copy onto itself (%s): %v; want a refusal, a failure (not a usage error)", to, err)
		}
	}
	if journal(src) != 0 {
		t.Error("a refused copy onto itself changed the server")
	}

	dst := sandboxtest.Start(t, sandbox.Options{})
	usecasetest.ExecAll(t, dst.DB(), "CREATE DATABASE sample", "CREATE TABLE sample.small_01 (x INT)", "INSERT INTO sample.small_01 VALUES (42)")
	_, err := servercopy.Run(ctx, usecasetest.CopyOf(t, src, dst, restorecase.Choices{}))
	if !usecasetest.Failed(err) || !strings.Contains(err.Error(), "sample.small_01") || !strings.Contains(err.Error(), "--drop-existing") {
		t.Fatalf("copy over an existing table: %v; want a failure (not a usage error) naming sample.small_01 and --drop-existing", err)
	}
	var x int
	if err := dst.DB().QueryRowContext(ctx, "SELECT x FROM sample.small_01").Scan(&x); err != nil || x != 42 || journal(dst) != 0 {
		t.Errorf("the refused copy changed the target: %v, %d, journal database %d", err, x, journal(dst))
	}
	_, err = servercopy.Run(ctx, usecasetest.CopyOf(t, src, dst, restorecase.Choices{Resume: true}))
	if !usecasetest.Failed(err) || !strings.Contains(err.Error(), "no unfinished copy") {
		t.Errorf("Resume with nothing to resume: %v; want a failure (not a usage error)", err)
	}
	usecasetest.Copy(t, usecasetest.CopyOf(t, src, dst, restorecase.Choices{DropExisting: true}))
	usecasetest.CompareChecksums(t, userChecksums(t, dst), userChecksums(t, src))
}

// A copy with masks and a renamed database: the masked columns differ
// from the source on every row, the tables still join on them as on the
// source, and no unmasked value is anywhere in the target's datadir (its
// tables, redo, binary logs). (That --replicate with --mask is refused
// is TestCopyRefusesReplicaOfAMaskedCopy.)
func TestCopyMasked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	usecasetest.ExecAll(t, src.DB(),
		"CREATE DATABASE shop",
		"CREATE TABLE shop.customers (id BIGINT PRIMARY KEY, email VARCHAR(64) NOT NULL, name VARCHAR(40))",
		"CREATE TABLE shop.orders (id INT PRIMARY KEY, customer_id BIGINT NOT NULL, email VARCHAR(64) NOT NULL)",
		"INSERT INTO shop.customers SELECT seq * 7919, CONCAT('person', seq, '@secret-corp.test'), CONCAT('name', seq) FROM shop.seq_1_to_500",
		"INSERT INTO shop.orders SELECT seq, (seq % 500 + 1) * 7919, CONCAT('person', seq % 500 + 1, '@secret-corp.test') FROM shop.seq_1_to_2000")
	keyFile := filepath.Join(t.TempDir(), "mask.key")
	if err := os.WriteFile(keyFile, []byte("a key of more than sixteen bytes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dst := sandboxtest.Start(t, sandbox.Options{})
	job := usecasetest.CopyOf(t, src, dst, restorecase.Choices{Rename: []string{"shop:staging"}})
	job.Parallel = 2
	if err := job.SetMask([]string{"shop.customers.id=hash", "shop.orders.customer_id=hash", "shop.customers.email=email", "shop.orders.email=email"}, keyFile); err != nil {
		t.Fatal(err)
	}
	res := usecasetest.Copy(t, job)
	if want := []string{"shop.customers.email=email", "shop.customers.id=hash", "shop.orders.customer_id=hash", "shop.orders.email=email"}; !slices.Equal(res.Masked, want) {
		t.Errorf("the copy says it masked %q, want %q", res.Masked, want)
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

// A masked copy that would then replicate is refused before either server
// is reached: the replica would apply the source's writes unmasked.
func TestCopyRefusesReplicaOfAMaskedCopy(t *testing.T) {
	t.Parallel()
	keyFile := filepath.Join(t.TempDir(), "mask.key")
	if err := os.WriteFile(keyFile, []byte("a key of more than sixteen bytes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	nowhere := t.TempDir()
	job := servercopy.Job{From: mariadb.Config{Socket: filepath.Join(nowhere, "source.sock"), User: "root", Protocol: mariadb.ProtocolSocket},
		To: mariadb.Config{Socket: filepath.Join(nowhere, "target.sock"), User: "root", Protocol: mariadb.ProtocolSocket}, Parallel: 2,
		Replicate: &replica.Primary{Host: "127.0.0.1", User: "repl"}}
	if err := job.SetMask([]string{"shop.customers.email=email"}, keyFile); err != nil {
		t.Fatal(err)
	}
	res, err := servercopy.Run(context.Background(), job)
	if res != nil || !usecasetest.Refused(err) || !strings.Contains(err.Error(), "--replicate with --mask") {
		t.Errorf("copy with Replicate and Mask: %+v, %v; want refused before any server is reached", res, err)
	}
}
