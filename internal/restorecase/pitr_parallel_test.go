package restorecase_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/fidelitytest"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// A point-in-time restore into a new datadir replays through the
// server's parallel applier, and what it makes equals the source at the
// target: the fidelity corpus (every type, engine, trigger, routine,
// sequence, versioned and partitioned table) written after a physical
// backup with binlog_format MIXED, among concurrent writes from 8
// connections in two GTID domains, replayed to a GTID and to a time in
// the middle and to a GTID after all of it, each compared with the
// source's fingerprints at that moment; the pipe (SerialReplay) makes the
// same datadir, file for file, with the same gtid_slave_pos. Events are
// created last: a replica would mark them DISABLE ON SLAVE, so a replay
// to the end, which holds them, takes the pipe and still equals the
// source.
func TestParallelReplayEqualsSource(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fixtures, err := fidelitytest.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	src := sandboxtest.Start(t, sandbox.Options{Args: append(usecasetest.CorpusServerArgs("permissive"), "--binlog-format=MIXED")})
	r := usecasetest.NewLocalRepo(t)
	usecasetest.Backup(t, usecasetest.BackupOf(t, r, src))
	mustExec(t, src, "CREATE DATABASE churn", "CREATE TABLE churn.t (id INT PRIMARY KEY, n INT, d VARCHAR(20))", "CREATE TABLE churn.d1 (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
	var first, second, last []*fidelitytest.Fixture
	for _, f := range fixtures {
		if f.Name == "events" {
			last = append(last, f)
			continue
		}
		// A replay, through the pipe as through the applier, gives rows
		// the applying server's transaction ids, and has the engines the
		// backup's server had (INSTALL PLUGIN is not logged).
		if f.Refuse != "" || !slices.Contains(f.Paths, fidelitytest.Physical) || strings.HasPrefix(f.Name, "versioning_trx_id") || f.Name == "csv_archive_blackhole" {
			continue
		}
		if len(first) <= len(second) {
			first = append(first, f)
		} else {
			second = append(second, f)
		}
	}
	load := func(fs []*fidelitytest.Fixture) {
		t.Helper()
		churn(t, src)
		for _, f := range fs {
			if err := f.Load(ctx, src.Socket, "root"); err != nil {
				t.Fatal(err)
			}
		}
		churn(t, src)
	}
	load(first)
	wantMid := usecasetest.CorpusFingerprints(t, src, first)
	wantMidChurn := usecasetest.Checksums(t, src)["churn.t"]
	var midGTID, midTime string
	src.DB().QueryRow("SELECT @@gtid_binlog_pos").Scan(&midGTID)
	time.Sleep(1100 * time.Millisecond)
	src.DB().QueryRow("SELECT DATE_FORMAT(UTC_TIMESTAMP(), '%Y-%m-%d %H:%i:%s')").Scan(&midTime)
	time.Sleep(1100 * time.Millisecond)
	load(second)
	both := append(slices.Clone(first), second...)
	wantBoth := usecasetest.CorpusFingerprints(t, src, both)
	wantBothChurn := usecasetest.Checksums(t, src)
	var bothGTID string
	src.DB().QueryRow("SELECT @@gtid_binlog_pos").Scan(&bothGTID)
	if len(last) != 1 {
		t.Fatalf("the corpus has no fixture named events: the test would prove less than it says")
	}
	load(last)
	all := append(slices.Clone(both), last...)
	want := usecasetest.CorpusFingerprints(t, src, all)
	wantChurn := usecasetest.Checksums(t, src)
	mustExec(t, src, "FLUSH BINARY LOGS")
	usecasetest.ArchiveBinlogs(t, r, src)

	// The replaying server reads an option file after the backup's: one
	// that would filter, skip or alter what a replica applies must change
	// nothing; one that skips errors keeps the pipe.
	hostile := filepath.Join(t.TempDir(), "hostile.cnf")
	skipping := filepath.Join(t.TempDir(), "skipping.cnf")
	for f, opts := range map[string]string{
		hostile:  "replicate-ignore-db=churn\nreplicate-wild-ignore-table=fx%.%\nreplicate-do-db=nothing\nslave-exec-mode=IDEMPOTENT\nslave-run-triggers-for-rbr=YES\ngtid-strict-mode=1\nslave-parallel-threads=0\n",
		skipping: "slave-skip-errors=all\n",
	} {
		if err := os.WriteFile(f, []byte("[mysqld]\n"+opts), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	restore := func(until, untilGTID string, serial bool, defaults string) (*sandbox.Server, string) {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "dd")
		req := usecasetest.PointInTimeOf(r, dir)
		req.Until, req.UntilGTID, req.Restore.Options.SerialReplay, req.Restore.ServerDefaults = until, untilGTID, serial, defaults
		res := usecasetest.Restore(t, req)
		if w := res.PointInTime.Workers; (serial || defaults == skipping) != (w == 0) {
			t.Fatalf("until %q %q, serial %v, option file %s: replayed with %d parallel workers", until, untilGTID, serial, defaults, w)
		}
		return usecasetest.ServerOn(t, dir), dir
	}
	sameChurn := func(what string, got, want map[string]string) {
		t.Helper()
		if got["churn.t"] != want["churn.t"] || got["churn.d1"] != want["churn.d1"] {
			t.Errorf("%s: churn checksums %s %s, source %s %s", what, got["churn.t"], got["churn.d1"], want["churn.t"], want["churn.d1"])
		}
	}
	par, parDir := restore("", bothGTID, false, hostile)
	usecasetest.CompareCorpus(t, par, both, wantBoth)
	sameChurn("until "+bothGTID, usecasetest.Checksums(t, par), wantBothChurn)
	pipe, pipeDir := restore("", bothGTID, true, "")
	for _, q := range []string{"SELECT @@gtid_slave_pos", "SELECT GROUP_CONCAT(CONCAT_WS('-', domain_id, server_id, seq_no) ORDER BY domain_id, sub_id) FROM mysql.gtid_slave_pos"} {
		var a, b string
		par.DB().QueryRow(q).Scan(&a)
		pipe.DB().QueryRow(q).Scan(&b)
		if a != b {
			t.Errorf("%s: %q after the parallel replay, %q after the pipe", q, a, b)
		}
	}
	par.Close()
	pipe.Close()
	if a, b := datadirFiles(t, parDir), datadirFiles(t, pipeDir); !slices.Equal(a, b) {
		t.Errorf("the datadirs differ:\nparallel %v\npipe     %v", a, b)
	}
	dir := filepath.Join(t.TempDir(), "end")
	req := usecasetest.PointInTimeOf(r, dir)
	req.Until = "end"
	if res := usecasetest.Restore(t, req); res.PointInTime.Workers != 0 {
		t.Errorf("until end, which creates events: replayed with %d parallel workers, want the pipe", res.PointInTime.Workers)
	}
	end := usecasetest.ServerOn(t, dir)
	usecasetest.CompareCorpus(t, end, all, want)
	sameChurn("until end", usecasetest.Checksums(t, end), wantChurn)
	for _, c := range []struct{ until, gtid, defaults string }{{"", midGTID, ""}, {midTime, "", skipping}} {
		mid, _ := restore(c.until, c.gtid, false, c.defaults)
		usecasetest.CompareCorpus(t, mid, first, wantMid)
		if got := usecasetest.Checksums(t, mid)["churn.t"]; got != wantMidChurn {
			t.Errorf("until %q %q: churn.t checksum %s, the source's then %s", c.until, c.gtid, got, wantMidChurn)
		}
		for _, f := range second {
			var n int
			mid.DB().QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", f.Database).Scan(&n)
			if n != 0 {
				t.Errorf("until %q %q: database %s of a fixture loaded after the target exists", c.until, c.gtid, f.Database)
			}
		}
	}
}

// churn writes from 8 connections at once (mariadb-slap), in domains 0
// and 1, so that transactions commit in groups the applier may run
// together, and some touch the same rows.
func churn(t *testing.T, s *sandbox.Server) {
	t.Helper()
	q := "SET SESSION gtid_domain_id = FLOOR(RAND() * 2); INSERT INTO churn.t VALUES (FLOOR(RAND() * 200), 1, 'x') ON DUPLICATE KEY UPDATE n = n + 1, d = CONCAT(d, 'y'); INSERT INTO churn.d1 (v) VALUES (FLOOR(RAND() * 1000))"
	cmd := exec.Command("mariadb-slap", "--no-defaults", "--socket="+s.Socket, "--user=root", "--concurrency=8", "--iterations=1",
		"--number-of-queries=1600", "--delimiter=;", "--create-schema=churn", "--query="+q)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mariadb-slap: %v\n%s", err, out)
	}
}

func mustExec(t *testing.T, s *sandbox.Server, qs ...string) {
	t.Helper()
	for _, q := range qs {
		if _, err := s.DB().Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// datadirFiles lists a datadir's files but for those every server start
// rewrites.
func datadirFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if !strings.HasPrefix(rel, "ib_logfile") && rel != "ib_buffer_pool" && rel != "ibtmp1" && !strings.HasSuffix(rel, ".pid") {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
