package retention

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repo/repotest"
)

// putSegments stores segments of name of source, n bytes each from 0.
func putSegments(t *testing.T, r *repo.Repo, source, name string, count int) []repo.BinlogSegment {
	t.Helper()
	var out []repo.BinlogSegment
	for i := range count {
		s := repo.BinlogSegment{Source: source, Name: name, Start: int64(100 * i), End: int64(100 * (i + 1))}
		if err := r.PutBinlogSegment(context.Background(), s, bytes.NewReader(make([]byte, 100))); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// expire --keep-pitr plans the files held only as segments (an old file
// the server crashed in and no run archived whole, the file being written
// now, another server's) by the rule of whole files and deletes those
// before the oldest kept backup's position with their directory; segments
// left beside a whole file go with it and are no plan entry of their own.
func TestRunSegmentOnlyFiles(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	db1 := archive.Server{Hostname: "db1", ServerID: 1}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for id, file := range map[string]string{"20261110T000000Z-0001": "bin.000005", "20261120T000000Z-0002": "bin.000008"} {
		m := repotest.Store(t, r, repotest.Backup{ID: id, Server: db1, Files: map[string]string{"f": id}})
		m.Positions.BinlogFile = file
		if err := r.Commit(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	crashed := putSegments(t, r, "db1-1", "bin.000003", 2)
	repotest.StoreBinlog(t, r, db1, "db1-1", "bin.000004")
	staleOld := putSegments(t, r, "db1-1", "bin.000004", 1)
	repotest.StoreBinlog(t, r, db1, "db1-1", "bin.000008")
	staleKept := putSegments(t, r, "db1-1", "bin.000008", 1)
	active := putSegments(t, r, "db1-1", "bin.000009", 3)
	other := putSegments(t, r, "db2-2", "bin.000001", 1)

	// A day of PITR keeps the backup of 11-20 (the newest finished
	// before the window) and drops that of 11-10: binary logs are needed
	// from bin.000008 on.
	req := Request{Policy: Policy{KeepPITR: 24 * time.Hour}, PruneIncomplete: true, Now: now}
	want := map[string]bool{ // binary log entry -> kept
		"db1-1/bin.000003": false, "db1-1/bin.000004": false, "db1-1/bin.000008": true,
		"db1-1/bin.000009": true, "db2-2/bin.000001": true,
	}
	check := func(out []Entry, confirmed bool) {
		t.Helper()
		got := map[string]bool{}
		for _, e := range out {
			if e.Kind != archive.KindBinlog {
				continue
			}
			if _, dup := got[e.ID]; dup {
				t.Errorf("%s planned twice", e.ID)
			}
			got[e.ID] = e.Keep
			if e.Deleted != (confirmed && !e.Keep) {
				t.Errorf("%s: deleted %v, confirmed %v, keep %v", e.ID, e.Deleted, confirmed, e.Keep)
			}
			segmentOnly := e.ID != "db1-1/bin.000004" && e.ID != "db1-1/bin.000008"
			if e.Complete == segmentOnly || segmentOnly != strings.Contains(strings.Join(e.Reasons, ", "), "only as") {
				t.Errorf("%s: complete %v, reasons %q; want it said whether it is held only as segments", e.ID, e.Complete, e.Reasons)
			}
		}
		for id, keep := range want {
			if k, ok := got[id]; !ok || k != keep {
				t.Errorf("%s: planned %v (in the plan: %v), want keep=%v", id, k, ok, keep)
			}
		}
		if len(got) != len(want) {
			t.Errorf("binary log entries %v, want %v", got, want)
		}
	}
	segsThere := func(segs []repo.BinlogSegment) bool {
		t.Helper()
		n := 0
		for _, s := range segs {
			if exists(t, r, s.Object()) {
				n++
			}
		}
		if n != 0 && n != len(segs) {
			t.Fatalf("%d of %d segments of %s left", n, len(segs), segs[0].Name)
		}
		return n > 0
	}

	plan, err := Run(ctx, r, req)
	if err != nil {
		t.Fatal(err)
	}
	check(plan.Entries, false)
	for _, segs := range [][]repo.BinlogSegment{crashed, staleOld, staleKept, active, other} {
		if !segsThere(segs) {
			t.Fatalf("the dry run deleted the segments of %s", segs[0].Name)
		}
	}

	req.Confirm = true
	done, err := Run(ctx, r, req)
	if err != nil {
		t.Fatal(err)
	}
	check(done.Entries, true)
	if segsThere(crashed) || segsThere(staleOld) {
		t.Error("segments before the oldest kept backup's position are still there")
	}
	if !segsThere(staleKept) || !segsThere(active) || !segsThere(other) {
		t.Error("segments of a file the plan keeps were deleted")
	}
	if objs, err := r.Backend.List(ctx, repo.BinlogDir("db1-1", "bin.000003")+"/"); err != nil || len(objs) != 0 {
		t.Errorf("the crashed file's directory still holds %v (%v)", objs, err)
	}
	files, err := r.Binlogs(ctx)
	if err != nil || len(files) != 1 || files[0].Name != "bin.000008" {
		t.Errorf("whole files after expire: %+v (%v), want bin.000008 only", files, err)
	}

	// Nothing left to delete: a second run plans the same keeps.
	again, err := Run(ctx, r, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range again.Entries {
		if e.Kind == archive.KindBinlog && !e.Keep {
			t.Errorf("second run plans to delete %s", e.ID)
		}
	}
}
