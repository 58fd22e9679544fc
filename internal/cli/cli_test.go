package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/logical"
	"github.com/backstream/backstream/internal/sandbox"
)

// result is what one in-process run of the CLI produced.
type result struct {
	stdout, stderr string
	err            error
	code           int
}

// run executes backstream with args in-process, as main would, with
// --progress none unless args name another, and a restore with --no-sync
// unless args say --no-sync themselves or restore into place (--datadir):
// what these tests check is what a restore wrote, not when the disk has
// it, and a sync in every one of the suite's restores made the parallel
// tests wait on each other's writes. That a restore syncs is checked in
// internal/durable and internal/restore (through the page cache's own
// account), and end to end by the restores into place and by receive.
// mariadbPaths holds, per top-level test, the --mariadb-path that run
// gives each command of the test that names none (useMariadbPath): with
// $BACKSTREAM_MARIADB_PATH instead (t.Setenv), the tests of other MariaDB
// versions could not run in parallel.
var mariadbPaths sync.Map

// useMariadbPath makes run pass --mariadb-path dirs (joined as the flag
// takes them) to every command of t's top-level test.
func useMariadbPath(t *testing.T, dirs ...string) {
	top := topTest(t)
	mariadbPaths.Store(top, strings.Join(dirs, string(os.PathListSeparator)))
	t.Cleanup(func() { mariadbPaths.Delete(top) })
}

// topTest names t's top-level test.
func topTest(t *testing.T) string {
	top, _, _ := strings.Cut(t.Name(), "/")
	return top
}

func run(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	root := NewRoot("test")
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--progress") }) {
		args = append(args, "--progress=none")
	}
	if p, ok := mariadbPaths.Load(topTest(t)); ok && !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--mariadb-path") }) {
		args = append(args, "--mariadb-path", p.(string))
	}
	if len(args) > 0 && args[0] == "restore" && !slices.ContainsFunc(args, func(a string) bool {
		return strings.HasPrefix(a, "--no-sync") || a == "--datadir" || strings.HasPrefix(a, "--datadir=")
	}) {
		args = append(args, "--no-sync")
	}
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	err := root.ExecuteContext(context.Background())
	r := result{stdout: out.String(), stderr: errOut.String(), err: err, code: ExitCode(err, false)}
	t.Logf("backstream %s -> exit %d, err: %v", strings.Join(args, " "), r.code, err)
	return r
}

// catExtract runs `backstream cat` in-process with its output piped into
// the real `mbstream -x -C dir`, as `cat | mbstream -x` with pipefail
// would: both must succeed. The stream is never held in memory whole.
func catExtract(t *testing.T, dir string, args ...string) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var mbOut bytes.Buffer
	mb := exec.Command("mbstream", "-x", "-C", dir)
	mb.Stdin, mb.Stdout, mb.Stderr = pr, &mbOut, &mbOut
	if err := mb.Start(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	var errOut bytes.Buffer
	root := NewRoot("test")
	root.SetArgs(append(append([]string{"cat"}, args...), "--progress=none"))
	root.SetOut(pw)
	root.SetErr(&errOut)
	catErr := root.ExecuteContext(context.Background())
	pw.Close()
	mbErr := mb.Wait()
	t.Logf("backstream cat %s | mbstream -x -> %v, %v", strings.Join(args, " "), catErr, mbErr)
	if catErr != nil {
		t.Fatalf("cat: %v\nstderr: %s", catErr, errOut.String())
	}
	if mbErr != nil {
		t.Fatalf("cat | mbstream -x: %v\n%s", mbErr, mbOut.String())
	}
}

func (r result) mustSucceed(t *testing.T) result {
	t.Helper()
	if r.err != nil {
		t.Fatalf("failed: %v\nstderr: %s", r.err, r.stderr)
	}
	return r
}

// treeDigests maps every regular file under dir to the SHA-256 of its content.
func treeDigests(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = hex.EncodeToString(h.Sum(nil))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func compareTrees(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d files, want %d", what, len(got), len(want))
	}
	for p, d := range want {
		if got[p] != d {
			t.Errorf("%s: file %s differs (got %q want %q)", what, p, got[p], d)
		}
	}
}

// backupListing parses `list --json`; flags are added to the command.
func backupListing(t *testing.T, repoDir string, flags ...string) []inventory.Backup {
	t.Helper()
	r := run(t, append([]string{"list", "--repo", repoDir, "--json"}, flags...)...).mustSucceed(t)
	var entries []inventory.Backup
	if err := json.Unmarshal([]byte(r.stdout), &entries); err != nil {
		t.Fatalf("list --json: %v\n%s", err, r.stdout)
	}
	return entries
}

// readCatalog reads and checks the catalog of logical backup id in the
// local repository repoDir.
func readCatalog(t *testing.T, repoDir, id string) *logical.Catalog {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoDir, "backups", id, logical.CatalogName))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := logical.ParseCatalog(data)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// stockExtract decodes one stream object with the codec's stock tool and
// extracts it with the real mbstream, the way a user without backstream would.
func stockExtract(t *testing.T, object, dir string) {
	t.Helper()
	var decode string
	switch {
	case strings.HasSuffix(object, ".zst"):
		decode = "zstd -dc"
	case strings.HasSuffix(object, ".lz4"):
		decode = "lz4 -dc"
	case strings.HasSuffix(object, ".gz"):
		decode = "gzip -dc"
	default:
		decode = "cat"
	}
	cmd := exec.Command("bash", "-o", "pipefail", "-c", decode+` "$1" | mbstream -x -C "$2"`, "extract", object, dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s | mbstream -x: %v\n%s", decode, err, out)
	}
}

// serverOn starts a server on a restored datadir for the rest of the test.
func serverOn(t *testing.T, datadir string) *sandbox.Server {
	t.Helper()
	s, err := sandbox.Start(context.Background(), sandbox.Options{Dir: t.TempDir(), Datadir: datadir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// checksums is CHECKSUM TABLE of every table of the server.
func checksums(t *testing.T, s *sandbox.Server) map[string]string {
	t.Helper()
	sums, err := sandbox.ChecksumTables(context.Background(), s.DB())
	if err != nil {
		t.Fatal(err)
	}
	return sums
}

// compareChecksums fails for every table whose checksum differs or is missing.
func compareChecksums(t *testing.T, got, want map[string]string) {
	t.Helper()
	for name, w := range want {
		if got[name] != w {
			t.Errorf("table %s: checksum %q, want %q", name, got[name], w)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("table %s restored but not in the source", name)
		}
	}
}

// writeLoad runs transactions in the background while a test backs up.
type writeLoad struct {
	stop      chan struct{}
	wg        sync.WaitGroup
	committed atomic.Int64
	mu        sync.Mutex
	err       error
}

// startLoad runs step in workers goroutines, each with its own random
// source, until finish; every step that returns nil is one commit.
func startLoad(workers int, step func(rng *rand.Rand) error) *writeLoad {
	l := &writeLoad{stop: make(chan struct{})}
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w)+1, 7))
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				if err := step(rng); err != nil {
					l.mu.Lock()
					l.err = err
					l.mu.Unlock()
					return
				}
				l.committed.Add(1)
			}
		}()
	}
	return l
}

// more waits until n more transactions have committed, so that the load
// runs before, during and after what a test does however slow the machine;
// a load that failed or stalled for a minute fails the test.
func (l *writeLoad) more(t *testing.T, n int64) {
	t.Helper()
	target := l.committed.Load() + n
	for deadline := time.Now().Add(time.Minute); l.committed.Load() < target; time.Sleep(10 * time.Millisecond) {
		l.mu.Lock()
		err := l.err
		l.mu.Unlock()
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("the write load stopped at %d transactions: %v", l.committed.Load(), err)
		}
	}
}

// finish stops the load and fails the test if a transaction failed.
func (l *writeLoad) finish(t *testing.T) {
	t.Helper()
	close(l.stop)
	l.wg.Wait()
	if l.err != nil {
		t.Fatal(l.err)
	}
}

// createBank makes the schema the transfer loads run on: bank.accounts
// with accounts rows holding initial each, bank.transfers, and
// bank.filler with fillerRows rows of pad (an expression of seq) as bulk;
// then runs the extra statements.
func createBank(t *testing.T, db *sql.DB, accounts, initial, fillerRows int, pad string, extra ...string) {
	t.Helper()
	for _, q := range append([]string{
		"CREATE DATABASE bank",
		"CREATE TABLE bank.accounts (id INT PRIMARY KEY, balance BIGINT NOT NULL) ENGINE=InnoDB",
		fmt.Sprintf("INSERT INTO bank.accounts SELECT seq, %d FROM bank.seq_1_to_%d", initial, accounts),
		"CREATE TABLE bank.transfers (id BIGINT AUTO_INCREMENT PRIMARY KEY, src INT, dst INT, amount INT) ENGINE=InnoDB",
		"CREATE TABLE bank.filler (id INT PRIMARY KEY, pad VARCHAR(200)) ENGINE=InnoDB",
		fmt.Sprintf("INSERT INTO bank.filler SELECT seq, %s FROM bank.seq_1_to_%d", pad, fillerRows),
	}, extra...) {
		if _, err := db.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// transfer moves amount from row a of one table to row b of another (or
// the same) in one transaction, and logs it in bank.transfers.
func transfer(ctx context.Context, db *sql.DB, from, to string, a, b, amount int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"UPDATE " + from + " SET balance = balance - ? WHERE id = ?", []any{amount, a}},
		{"UPDATE " + to + " SET balance = balance + ? WHERE id = ?", []any{amount, b}},
		{"INSERT INTO bank.transfers (src, dst, amount) VALUES (?, ?, ?)", []any{a, b, amount}},
	} {
		if _, err := tx.ExecContext(ctx, q.sql, q.args...); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// newRepoDir makes a repository in a new directory, with init, and
// returns its path: no other command creates one.
func newRepoDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	run(t, "init", "--repo", dir).mustSucceed(t)
	return dir
}
