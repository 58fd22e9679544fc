package growth_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

func TestMain(m *testing.M) { usecasetest.Main(m, nil) }

// The shape of bench/scale.sh's servers: schemas of 100 tables of 20
// rows, each with a primary key and a secondary index.
const (
	tablesPerSchema = 100
	rowsPerTable    = 20
	fewTables       = 200
	manyTables      = 2000
	ratio           = manyTables / fewTables
)

// The servers: writes are not flushed at each commit, so that 2,000
// tables are made in seconds; what the steps read is the same.
var fast = []string{"--innodb-flush-log-at-trx-commit=0"}

// TestStepsGrowLinearlyWithTables runs bench/scale.sh's steps on a
// server of 200 tables, then on the same server grown to 2,000, against
// an S3 repository on MinIO, and fails if a step's cost grows worse than
// linearly with the tables: more than twice tenfold. The costs are
// those that do not depend on how loaded the machine is: the CPU the
// test process spends (the use cases run in it; mariabackup and the
// servers do not count), the bytes it allocates, its peak heap, the
// statements the servers receive (less a backup's probe queries, which
// follow its wall time), and the requests sent to MinIO.
//
// A quadratic step grows a hundredfold from 200 to 2,000 tables; the
// fixed costs of a step (connecting, starting mariabackup, the runtime)
// make a linear one grow less than tenfold. Between the two, the margin
// of two leaves room for the noise of CPU accounting and of the garbage
// collector without letting a quadratic step through. A cost too small to
// measure (under 50 ms of CPU, 16 MiB, 50 statements, 10 requests) counts
// as that floor. list, and the restore of one table's requests, may not
// grow with the tables at all (see growthBound).
func TestStepsGrowLinearlyWithTables(t *testing.T) {
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{Args: fast})
	dst := sandboxtest.Start(t, sandbox.Options{Args: fast})

	// Each count in a repository of its own, which then holds the same
	// backups: what grows is the tables, not the number of backups.
	var costs [2]map[string]cost
	for i, n := range []int{fewTables, manyTables} {
		addTables(t, src.DB(), n)
		m := meter{repo: usecasetest.NewRepo(t, "s3"), servers: []*sandbox.Server{src, dst}}
		costs[i] = steps(t, ctx, &m, src, dst, n)
	}
	for _, step := range stepNames {
		few, many := costs[0][step], costs[1][step]
		t.Logf("%-16s %4d tables: %s", step, fewTables, few)
		t.Logf("%-16s %4d tables: %s", step, manyTables, many)
		for _, c := range []struct {
			what      string
			few, many float64
			floor     float64 // below it, a cost is noise
		}{
			{"CPU seconds", few.cpu.Seconds(), many.cpu.Seconds(), 0.05},
			{"bytes allocated", float64(few.alloc), float64(many.alloc), 16 << 20},
			{"peak heap", float64(few.heap), float64(many.heap), 16 << 20},
			{"statements", float64(few.statements), float64(many.statements), 50},
			{"S3 requests", float64(few.requests), float64(many.requests), 10},
		} {
			grew, bound := max(c.many, c.floor)/max(c.few, c.floor), growthBound(step, c.what)
			if grew > bound {
				t.Errorf("%s: %s grew %.1fx from %d to %d tables (%g to %g), more than %gx", step, c.what, grew, fewTables, manyTables, c.few, c.many, bound)
			}
		}
	}
}

// stepNames are the steps, in the order they run.
var stepNames = []string{"physical backup", "verify", "restore", "incremental", "restore --table", "logical backup", "logical restore", "list"}

// growthBound is how much a cost of a step may grow from 200 to 2,000
// tables: twice linear, except where it should not grow with the tables
// at all. list reads each backup's summary (repo.Scan), never the
// manifests that list every file and table; the restore of one table
// fetches that table's bytes with ranged reads.
func growthBound(step, what string) float64 {
	if step == "list" || step == "restore --table" && what == "S3 requests" {
		return 2
	}
	return 2 * ratio
}

// steps runs each step once on src, the server of n tables, and returns
// what each cost.
func steps(t *testing.T, ctx context.Context, m *meter, src, dst *sandbox.Server, n int) map[string]cost {
	costs := map[string]cost{}
	measure := func(step string, fn func()) {
		t.Helper()
		if !slices.Contains(stepNames, step) {
			t.Fatalf("step %q is not in stepNames", step)
		}
		costs[step] = m.measure(t, fn)
	}

	var full *backup.Result
	measure("physical backup", func() { full = m.backup(t, usecasetest.BackupOf(t, m.repo, src)) })
	if got := tablesIn(full); got != n {
		t.Fatalf("the backup of %d tables holds %d", n, got)
	}
	measure("verify", func() {
		if err := usecasetest.Verify(t, m.repo, full.Manifest.ID); err != nil {
			t.Fatalf("verify: %v", err)
		}
	})
	measure("restore", func() {
		req := usecasetest.RestoreOf(m.repo, full.Manifest.ID)
		req.Restore.TargetDir = filepath.Join(t.TempDir(), "restored")
		usecasetest.Restore(t, req)
	})

	// 1% of the tables written, then an incremental.
	for i := 0; i < n; i += 100 {
		usecasetest.ExecAll(t, src.DB(), fmt.Sprintf("UPDATE %s SET c = 'changed' WHERE id = 1", tableName(i)))
	}
	var incr *backup.Result
	measure("incremental", func() {
		req := usecasetest.BackupOf(t, m.repo, src)
		req.Physical.Incremental = &backup.Incremental{}
		incr = m.backup(t, req)
	})
	if incr.Manifest.Parent != full.Manifest.ID {
		t.Fatalf("the incremental's parent is %q, want %s", incr.Manifest.Parent, full.Manifest.ID)
	}

	measure("restore --table", func() {
		req := usecasetest.ImportOf(m.repo, src, tableName(n-100))
		req.As = "s000.imported"
		usecasetest.Restore(t, req)
	})
	if rows := count(t, src.DB(), "SELECT COUNT(*) FROM s000.imported WHERE c = 'changed'"); rows != 1 {
		t.Fatalf("the imported table has %d changed rows, want the incremental's 1", rows)
	}
	usecasetest.ExecAll(t, src.DB(), "DROP TABLE s000.imported")

	var logical *backup.Result
	measure("logical backup", func() { logical = m.backup(t, usecasetest.LogicalBackupOf(t, m.repo, src)) })
	if logical.Tables != n {
		t.Fatalf("the logical backup holds %d tables, want %d", logical.Tables, n)
	}
	dropSchemas(t, dst.DB())
	measure("logical restore", func() { usecasetest.Restore(t, usecasetest.LoadOf(m.repo, logical.Manifest.ID, dst)) })
	if got := count(t, dst.DB(), "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema LIKE 's0%' AND table_type = 'BASE TABLE'"); got != n {
		t.Fatalf("the load made %d tables, want %d", got, n)
	}

	measure("list", func() {
		if l := usecasetest.List(t, m.repo); len(l) == 0 {
			t.Fatal("list shows no backup")
		}
	})
	return costs
}

// cost is what one step cost.
type cost struct {
	wall, cpu  time.Duration // the step's wall time (reported only) and the process's CPU
	alloc      uint64        // bytes the process allocated
	heap       uint64        // the largest heap of live and unswept objects sampled
	statements int64         // statements the servers received
	requests   int64         // requests sent to MinIO
}

func (c cost) String() string {
	return fmt.Sprintf("%6.2fs wall, %6.2fs CPU, %5d MiB allocated, %4d MiB peak heap, %6d statements, %5d requests",
		c.wall.Seconds(), c.cpu.Seconds(), c.alloc>>20, c.heap>>20, c.statements, c.requests)
}

// meter measures steps.
type meter struct {
	repo    usecasetest.Repo
	servers []*sandbox.Server
	// probes are the backups' probe queries so far (SELECT 1 every
	// 250 ms while a backup runs, to report its impact): their number
	// follows the wall time, not the tables, and is not the step's.
	probes int64
}

// backup runs the backup req asks for and counts its probe queries.
func (m *meter) backup(t *testing.T, req backup.Request) *backup.Result {
	t.Helper()
	res := usecasetest.Backup(t, req)
	if res.Impact != nil {
		m.probes += int64(res.Impact.Probes)
	}
	return res
}

func (m *meter) measure(t *testing.T, fn func()) cost {
	t.Helper()
	// The garbage of the steps before is not this step's heap.
	runtime.GC()
	cpu0, alloc0, stmts0, reqs0, probes0 := cpuTime(t), allocated(), m.statements(t), m.repo.Requests.Counts().Total(), m.probes
	stop := sampleHeap()
	start := time.Now()
	fn()
	wall := time.Since(start)
	heap := stop()
	return cost{wall: wall, cpu: cpuTime(t) - cpu0, alloc: allocated() - alloc0, heap: heap,
		statements: m.statements(t) - stmts0 - int64(len(m.servers)) - (m.probes - probes0), requests: m.repo.Requests.Counts().Total() - reqs0}
}

// statements is the servers' Questions: the statements their clients
// sent (this query among them).
func (m *meter) statements(t *testing.T) int64 {
	var total int64
	for _, s := range m.servers {
		var name string
		var n int64
		if err := s.DB().QueryRow("SHOW GLOBAL STATUS LIKE 'Questions'").Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		total += n
	}
	return total
}

func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func allocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// sampleHeap samples the heap's objects every 5 ms until the returned
// function is called, which returns the largest sample.
func sampleHeap() (stop func() uint64) {
	var (
		mu   sync.Mutex
		peak uint64
		done = make(chan struct{})
		over = make(chan struct{})
	)
	go func() {
		defer close(over)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			mu.Lock()
			peak = max(peak, s[0].Value.Uint64())
			mu.Unlock()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-over
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// tableName is the i-th table: schemas s000, s001, ... of 100 tables each.
func tableName(i int) string {
	return fmt.Sprintf("s%03d.t%06d", i/tablesPerSchema, i)
}

// addTables grows the server to n tables of bench/scale.sh's shape.
func addTables(t *testing.T, db *sql.DB, n int) {
	t.Helper()
	have := count(t, db, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema LIKE 's0%' AND table_type = 'BASE TABLE'")
	for i := have; i < n; i++ {
		if i%tablesPerSchema == 0 {
			usecasetest.ExecAll(t, db, fmt.Sprintf("CREATE DATABASE s%03d", i/tablesPerSchema))
		}
		name := tableName(i)
		usecasetest.ExecAll(t, db, "CREATE TABLE "+name+" (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(120) NOT NULL, pad CHAR(60) NOT NULL, KEY k (k)) ENGINE=InnoDB")
		usecasetest.ExecAll(t, db, fmt.Sprintf("INSERT INTO %s SELECT seq, seq * 7919 %% 1000, MD5(seq + %d), 'pad' FROM s%03d.seq_1_to_%d", name, i, i/tablesPerSchema, rowsPerTable))
	}
}

// dropSchemas drops the tables' schemas, so that a load starts afresh.
func dropSchemas(t *testing.T, db *sql.DB) {
	t.Helper()
	for _, s := range usecasetest.QueryRows(t, db, "SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE 's0%'") {
		usecasetest.ExecAll(t, db, "DROP DATABASE "+s)
	}
}

// tablesIn counts the tables of the s0* schemas a physical backup holds.
func tablesIn(res *backup.Result) int {
	n := 0
	for _, tb := range res.Manifest.Tables {
		if strings.HasPrefix(tb.Name, "s0") {
			n++
		}
	}
	return n
}

func count(t *testing.T, db *sql.DB, q string) int {
	t.Helper()
	n, err := strconv.Atoi(usecasetest.QueryRows(t, db, q)[0])
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}
