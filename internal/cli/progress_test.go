package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// jsonProgress are the flags that make a command report often in JSON.
var jsonProgress = []string{"--progress", "json", "--progress-interval", "100ms"}

var completeID = regexp.MustCompile(`backup (\S+) complete`)

// Progress tells the truth about a physical backup of over a hundred MiB,
// a full and an incremental, and their restores: the total is what
// mariabackup copies (not the datadir, with its redo log, temporary
// tablespace and binary logs), so the last event before the summary is
// near 100%, the ETA comes down as the backup goes, and every event names
// the backup.
func TestProgressOfPhysicalBackupAndRestore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 3, BigTableMB: 100}); err != nil {
		t.Fatal(err)
	}
	repoDir := newRepoDir(t)
	backup := func(what string, args ...string) (string, []progress.Event) {
		t.Helper()
		args = append(append(append([]string{"backup", "--repo", repoDir, "--parallel", "2"}, args...), jsonProgress...), sandboxConn(src)...)
		r := run(t, args...).mustSucceed(t)
		m := completeID.FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("%s: backup printed %q", what, r.stdout)
		}
		return m[1], usecasetest.CheckProgress(t, what, r.stderr, m[1], 95)
	}
	full, events := backup("full backup", "--max-rate", "32MiB/s")
	for _, e := range events {
		t.Logf("full: %s %d/%d %v%% eta %v", e.Stage, e.BytesIn, e.Total, usecasetest.PercentOf(e.Percent), usecasetest.PercentOf(e.ETASeconds))
	}
	// The ETA comes down as the bytes go in at a bounded rate: it rises
	// by more than a second or a quarter seldom (a test beside this one
	// may take the CPUs for a moment), and ends near 0.
	var etas []float64
	for _, e := range events {
		if e.Stage == "streaming" && e.ETASeconds != nil {
			etas = append(etas, *e.ETASeconds)
		}
	}
	if len(etas) < 10 {
		t.Fatalf("%d streaming events with an ETA, want many", len(etas))
	}
	var rises []string
	for i := 1; i < len(etas); i++ {
		if etas[i] > etas[i-1]+max(1, etas[i-1]/4) {
			rises = append(rises, fmt.Sprintf("%.1fs to %.1fs", etas[i-1], etas[i]))
		}
	}
	if len(rises) > 2 || etas[len(etas)-1] > 1 || etas[len(etas)-1] > etas[0] {
		t.Errorf("the ETA rose from %s, or did not end near 0: %.1f", strings.Join(rises, ", "), etas)
	}

	if _, err := src.DB().ExecContext(ctx, "UPDATE sample.small_01 SET qty = 7 WHERE id < 100"); err != nil {
		t.Fatal(err)
	}
	inc, events := backup("incremental backup", "--incremental")
	for _, e := range events {
		t.Logf("incremental: %s %d/%d %v%% eta %v", e.Stage, e.BytesIn, e.Total, usecasetest.PercentOf(e.Percent), usecasetest.PercentOf(e.ETASeconds))
	}

	for _, c := range []struct{ what, id string }{{"restore of the full", full}, {"restore of the chain", inc}} {
		r := run(t, append([]string{"restore", c.id, "--repo", repoDir, "--target-dir", filepath.Join(t.TempDir(), "d"), "--prepare"}, jsonProgress...)...).mustSucceed(t)
		for _, e := range usecasetest.CheckProgress(t, c.what, r.stderr, c.id, 99) {
			t.Logf("%s: %s %d/%d %v%%", c.what, e.Stage, e.BytesIn, e.Total, usecasetest.PercentOf(e.Percent))
		}
	}
}

// A logical dump and its load report tables and rows, and end with every
// table done; their events name the backup.
func TestProgressOfLogicalBackupAndLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 4, BigTableMB: 16}); err != nil {
		t.Fatal(err)
	}
	repoDir := newRepoDir(t)
	r := run(t, append(append([]string{"backup", "--logical", "--repo", repoDir, "--parallel", "2", "--skip-users"}, jsonProgress...), sandboxConn(src)...)...).mustSucceed(t)
	m := completeID.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("backup --logical printed %q", r.stdout)
	}
	id := m[1]
	check := func(what, stderr string) {
		t.Helper()
		events := usecasetest.CheckProgress(t, what, stderr, id, 99)
		for _, e := range events {
			t.Logf("%s: %s %d/%d %v%% tables %d/%d rows %d", what, e.Stage, e.BytesIn, e.Total, usecasetest.PercentOf(e.Percent), e.TablesDone, e.Tables, e.Rows)
		}
		all := usecasetest.ProgressEvents(t, stderr)
		sum := all[len(all)-1]
		// 4 small tables, big, and the sequence engine's tables are no
		// tables: 5.
		if sum.Tables != 5 || sum.TablesDone != sum.Tables || sum.Rows < 40000 {
			t.Errorf("%s: summary says %d of %d tables, %d rows; want 5 of 5, the sample's rows", what, sum.TablesDone, sum.Tables, sum.Rows)
		}
		var rows, done int64
		for _, e := range events {
			if e.Rows < rows || e.TablesDone < done {
				t.Errorf("%s: rows or tables went back: %+v", what, e)
			}
			rows, done = e.Rows, e.TablesDone
		}
	}
	check("logical backup", r.stderr)

	dst := sandboxtest.Start(t, sandbox.Options{})
	r = run(t, append(append([]string{"restore", id, "--repo", repoDir, "--parallel", "2"}, jsonProgress...), sandboxConn(dst)...)...).mustSucceed(t)
	check("load", r.stderr)
}
