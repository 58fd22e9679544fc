package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// jsonProgress are the flags that make a command report often in JSON.
var jsonProgress = []string{"--progress", "json", "--progress-interval", "100ms"}

// progressEvents parses the --progress json events of stderr (other lines,
// such as a restore's "loading into", are skipped).
func progressEvents(t *testing.T, stderr string) []progress.Event {
	t.Helper()
	var events []progress.Event
	for _, line := range strings.Split(stderr, "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var e progress.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("progress line %q: %v", line, err)
		}
		if e.Event != "log" {
			events = append(events, e)
		}
	}
	return events
}

// checkProgress checks the --progress json of a successful operation on
// backup id: every event after the id is known names it; the percent
// never goes back; the last progress event, once the data has moved, says
// at least minLast percent (the estimate was near the truth); and the
// summary says 100% of a total that is the bytes that came in. It returns
// the progress events.
func checkProgress(t *testing.T, what, stderr, id string, minLast float64) []progress.Event {
	t.Helper()
	events := progressEvents(t, stderr)
	if len(events) < 2 {
		t.Fatalf("%s: %d events, want progress and a summary:\n%s", what, len(events), stderr)
	}
	sum, events := events[len(events)-1], events[:len(events)-1]
	if sum.Event != "summary" || sum.OK == nil || !*sum.OK {
		t.Fatalf("%s: the last event is not a successful summary: %+v", what, sum)
	}
	if sum.Backup != id || sum.Percent == nil || *sum.Percent != 100 || sum.Total != sum.BytesIn || sum.BytesIn == 0 {
		t.Errorf("%s: summary names backup %q, says %v%% of %d with %d in; want %s, 100%% of what came in", what, sum.Backup, pct(sum.Percent), sum.Total, sum.BytesIn, id)
	}
	var last float64
	named := false
	for i, e := range events {
		named = named || e.Backup != ""
		if named && e.Backup != id {
			t.Errorf("%s: event %d (%s) names backup %q, want %s", what, i, e.Stage, e.Backup, id)
		}
		if e.Percent == nil {
			continue
		}
		if *e.Percent < last {
			t.Errorf("%s: event %d (%s) says %.1f%%, after %.1f%%", what, i, e.Stage, *e.Percent, last)
		}
		last = *e.Percent
	}
	if last < minLast {
		t.Errorf("%s: the last progress event says %.1f%%, want at least %.0f%%: the estimate was far off\n%s", what, last, minLast, stderr)
	}
	return events
}

func pct(p *float64) any {
	if p == nil {
		return "null"
	}
	return *p
}

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
		return m[1], checkProgress(t, what, r.stderr, m[1], 95)
	}
	full, events := backup("full backup", "--max-rate", "32MiB/s")
	for _, e := range events {
		t.Logf("full: %s %d/%d %v%% eta %v", e.Stage, e.BytesIn, e.Total, pct(e.Percent), pct(e.ETASeconds))
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
		t.Logf("incremental: %s %d/%d %v%% eta %v", e.Stage, e.BytesIn, e.Total, pct(e.Percent), pct(e.ETASeconds))
	}

	for _, c := range []struct{ what, id string }{{"restore of the full", full}, {"restore of the chain", inc}} {
		r := run(t, append([]string{"restore", c.id, "--repo", repoDir, "--target-dir", filepath.Join(t.TempDir(), "d"), "--prepare"}, jsonProgress...)...).mustSucceed(t)
		for _, e := range checkProgress(t, c.what, r.stderr, c.id, 99) {
			t.Logf("%s: %s %d/%d %v%%", c.what, e.Stage, e.BytesIn, e.Total, pct(e.Percent))
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
		events := checkProgress(t, what, stderr, id, 99)
		for _, e := range events {
			t.Logf("%s: %s %d/%d %v%% tables %d/%d rows %d", what, e.Stage, e.BytesIn, e.Total, pct(e.Percent), e.TablesDone, e.Tables, e.Rows)
		}
		all := progressEvents(t, stderr)
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
