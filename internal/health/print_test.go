package health

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repo/repotest"
)

// The OK line names the newest backup and its age, the last restore test,
// the counts and each archive's lag, each limit where one was given.
func TestWriteText(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := repotest.New(t)
	loc := r.Backend.Location()
	line := func(opt Options) string {
		t.Helper()
		var b bytes.Buffer
		if err := check(t, r, opt).WriteText(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	if got, want := line(Options{Now: now}), "OK: "+loc+"; no backups; 0 complete backups (0 incremental), no chain broken\n"; got != want {
		t.Errorf("empty repository: %q, want %q", got, want)
	}

	full, _, inc2 := chain(t, r) // inc2 finished 2026-11-29 02:00
	if err := r.RecordVerdict(ctx, full.ID, nil, &repo.Outcome{At: now.Add(-36 * time.Hour), OK: true}); err != nil {
		t.Fatal(err)
	}
	want := "OK: " + loc + "; newest backup " + inc2.ID + " (physical) finished 22h ago; backup " + full.ID +
		" passed a restore test 36h ago; 3 complete backups (2 incremental), no chain broken\n"
	if got := line(Options{Now: now}); got != want {
		t.Errorf("without limits:\n%q\nwant\n%q", got, want)
	}

	repotest.StoreBinlog(t, r, db1, "db1-1", "mariadb-bin.000001")
	if err := r.PutBinlogStatus(ctx, repo.BinlogStatus{Source: "db1-1", Updated: now.Add(-time.Minute), Following: true, LagSeconds: 30}); err != nil {
		t.Fatal(err)
	}
	want = "OK: " + loc + "; newest backup " + inc2.ID + " (physical) finished 22h ago (at most 26h); backup " + full.ID +
		" passed a restore test 36h ago (at most 48h); 3 complete backups (2 incremental), no chain broken; binary logs of db1-1 archived up to 1m30s ago (at most 2m)\n"
	if got := line(Options{Now: now, MaxAge: 26 * time.Hour, MaxRestoreTestAge: 48 * time.Hour, MaxBinlogLag: 2 * time.Minute}); got != want {
		t.Errorf("with limits:\n%q\nwant\n%q", got, want)
	}
}

// The JSON form carries the verdict, the newest backup, the restore test,
// the lags and each problem with its kind and message.
func TestSummary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := repotest.New(t)
	full, inc1, inc2 := chain(t, r)
	if err := r.RecordVerdict(ctx, full.ID, nil, &repo.Outcome{At: inc2.Finished, OK: true}); err != nil {
		t.Fatal(err)
	}
	repotest.StoreBinlog(t, r, db1, "db1-1", "mariadb-bin.000001")
	if err := r.PutBinlogStatus(ctx, repo.BinlogStatus{Source: "db1-1", Updated: inc2.Finished, Following: true, LagSeconds: 5}); err != nil {
		t.Fatal(err)
	}
	if err := r.Backend.Delete(ctx, repo.Dir(inc1.ID)+"/"+repo.ManifestName); err != nil {
		t.Fatal(err)
	}
	rep := check(t, r, Options{Now: inc2.Finished.Add(time.Hour), MaxBinlogLag: 2 * time.Hour})
	data, err := json.Marshal(rep.Summary())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]any{"ok": false, "location": r.Backend.Location(), "now": "2026-11-29T03:00:00Z",
		"newest": inc2.ID, "age_seconds": 3600.0, "backups": 2.0, "incrementals": 1.0,
		"restore_tested": full.ID, "restore_test_at": "2026-11-29T02:00:00Z"} {
		if got[key] != want {
			t.Errorf("%s: %v, want %v (%s)", key, got[key], want, data)
		}
	}
	binlogs, _ := got["binlogs"].([]any)
	if len(binlogs) != 1 || binlogs[0].(map[string]any)["source"] != "db1-1" || binlogs[0].(map[string]any)["lag_seconds"] != 3605.0 ||
		binlogs[0].(map[string]any)["complete_at"] != "2026-11-29T01:59:55Z" {
		t.Errorf("binlogs: %v", got["binlogs"])
	}
	problems, _ := got["problems"].([]any)
	if len(problems) != 1 {
		t.Fatalf("problems: %v, want the broken chain", got["problems"])
	}
	p := problems[0].(map[string]any)
	if p["kind"] != "broken-chain" || p["backup"] != inc2.ID || !strings.Contains(p["error"].(string), "its parent "+inc1.ID+" is not a complete backup") {
		t.Errorf("problem %v", p)
	}
	if _, ok := p["source"]; ok {
		t.Errorf("problem %v names a source", p)
	}

	// Healthy: ok, and no problems key.
	healthy := repotest.New(t)
	data, err = json.Marshal(check(t, healthy, Options{}).Summary())
	if err != nil || !strings.Contains(string(data), `"ok":true`) || strings.Contains(string(data), "problems") || strings.Contains(string(data), "newest") {
		t.Errorf("healthy summary %s, %v", data, err)
	}
}
