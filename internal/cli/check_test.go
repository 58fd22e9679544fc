package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// promtoolCheck runs `promtool check metrics` (Debian's prometheus
// package, which scripts/deps.sh installs) on a metrics file: it fails
// on anything that is not the text format or breaks its conventions.
func promtoolCheck(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("promtool", "check", "metrics")
	cmd.Stdin = bytes.NewReader(data)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s\nof:\n%s", err, out, data)
	}
}

// metricSample is one series of a metrics file.
type metricSample struct {
	labels map[string]string
	value  float64
}

// readMetrics parses a metrics file as the textfile collector does.
func readMetrics(t *testing.T, path string) map[string][]metricSample {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(f)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]metricSample{}
	for name, mf := range families {
		for _, m := range mf.GetMetric() {
			s := metricSample{labels: map[string]string{}, value: m.GetGauge().GetValue()}
			for _, l := range m.GetLabel() {
				s.labels[l.GetName()] = l.GetValue()
			}
			out[name] = append(out[name], s)
		}
	}
	return out
}

// metricOf is the value of metric for command, which must be there once.
func metricOf(t *testing.T, ms map[string][]metricSample, metric, command string) (float64, map[string]string) {
	t.Helper()
	var found []metricSample
	for _, s := range ms[metric] {
		if s.labels["command"] == command {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s{command=%q}: %d series, want 1: %v", metric, command, len(found), ms[metric])
	}
	return found[0].value, found[0].labels
}

// The monitoring of issue 17 against a real server and repositories:
// --metrics-file after a backup, a failed backup and a failed check,
// each file valid for promtool and holding the backup's time and size
// but no credentials; check passing, failing on age with --now, and on a
// chain broken at a damaged and at a missing parent, naming them.
func TestCheckAndMetricsFile(t *testing.T) {
	t.Parallel()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1}); err != nil {
		t.Fatal(err)
	}
	const password = "pw-S3cret-4-metrics"
	usecasetest.ExecAll(t, src.DB(), "CREATE USER bk@localhost IDENTIFIED BY '"+password+"'",
		"GRANT RELOAD, PROCESS, LOCK TABLES, BINLOG MONITOR ON *.* TO bk@localhost")
	// The connection comes from an option file alone, as in the systemd
	// units' profile: the metrics' server label is read from it too.
	cnf := filepath.Join(t.TempDir(), "db1.cnf")
	if err := os.WriteFile(cnf, []byte("[backstream]\nsocket = "+src.Socket+"\nuser = bk\npassword = \""+password+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	forEachBackend(t, func(t *testing.T, repo testRepo) {
		metricsFile := filepath.Join(t.TempDir(), "backstream.prom")
		backup := func(extra ...string) result {
			return run(t, append([]string{"backup", "--repo", repo.Location, "--parallel", "2", "--defaults-file", cnf, "--metrics-file", metricsFile}, extra...)...)
		}
		before := time.Now()
		backup().mustSucceed(t)
		after := time.Now()
		entries := backupListing(t, repo.Location)
		if len(entries) != 1 {
			t.Fatalf("%d backups", len(entries))
		}
		full := entries[0]

		promtoolCheck(t, metricsFile)
		ms := readMetrics(t, metricsFile)
		success, lbl := metricOf(t, ms, "backstream_last_success_timestamp_seconds", "backup")
		if success < float64(before.Unix()) || success > float64(after.Unix()+1) {
			t.Errorf("last success at %v, not between %v and %v", success, before.Unix(), after.Unix())
		}
		if lbl["repository"] != repo.Location || lbl["server"] != src.Socket {
			t.Errorf("labels %v; want the repository %s and the server %s", lbl, repo.Location, src.Socket)
		}
		raw, _ := metricOf(t, ms, "backstream_last_success_raw_bytes", "backup")
		stored, _ := metricOf(t, ms, "backstream_last_success_stored_bytes", "backup")
		ratio, _ := metricOf(t, ms, "backstream_last_success_compression_ratio", "backup")
		if raw != float64(full.RawBytes) || stored != float64(full.StoredBytes) || raw == 0 || ratio != raw/stored {
			t.Errorf("size raw %v, stored %v, ratio %v; list says raw %d, stored %d", raw, stored, ratio, full.RawBytes, full.StoredBytes)
		}
		if v, _ := metricOf(t, ms, "backstream_last_run_success", "backup"); v != 1 {
			t.Errorf("last run success %v", v)
		}
		// A restore into a directory reaches no server: its metrics name
		// none, not the connection options' default socket.
		run(t, "restore", "latest", "--repo", repo.Location, "--target-dir", filepath.Join(t.TempDir(), "restored"), "--metrics-file", metricsFile).mustSucceed(t)
		if v, lbl := metricOf(t, readMetrics(t, metricsFile), "backstream_last_run_success", "restore"); v != 1 || lbl["server"] != "" {
			t.Errorf("restore --target-dir: last run success %v, labels %v; want 1 and no server", v, lbl)
		}

		// check: healthy now, and two hours after the backup finished.
		r := run(t, "check", "--repo", repo.Location, "--max-age", "1h").mustSucceed(t)
		t.Logf("check printed %q", r.stdout)
		if !strings.HasPrefix(r.stdout, "OK: ") || strings.Count(r.stdout, "\n") != 1 || !strings.Contains(r.stdout, full.ID) {
			t.Errorf("check of a fresh backup printed %q", r.stdout)
		}
		later := full.Finished.Add(2*time.Hour + 10*time.Second).UTC().Format(time.RFC3339)
		r = run(t, "check", "--repo", repo.Location, "--max-age", "1h", "--now", later)
		if r.code != ExitFailure || r.err == nil || strings.Contains(r.err.Error(), "\n") ||
			!strings.Contains(r.err.Error(), "the newest complete backup, "+full.ID+", finished 2h ago") || !strings.Contains(r.err.Error(), "more than the 1h allowed") {
			t.Errorf("check two hours later: exit %d, %v; want %d naming %s and its age", r.code, r.err, ExitFailure, full.ID)
		}
		// --json: the same verdict as one object, the same exit code.
		r = run(t, "check", "--repo", repo.Location, "--max-age", "1h", "--now", later, "--json")
		var rep struct {
			OK       bool   `json:"ok"`
			Newest   string `json:"newest"`
			Problems []struct {
				Kind   string `json:"kind"`
				Backup string `json:"backup"`
			} `json:"problems"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != ExitFailure || rep.OK || rep.Newest != full.ID ||
			len(rep.Problems) != 1 || rep.Problems[0].Kind != "stale" {
			t.Errorf("check --json two hours later: exit %d, %v, %+v:\n%s", r.code, err, rep, r.stdout)
		}
		if r := run(t, "check", "--repo", repo.Location, "--max-age", "soon", "--metrics-file", metricsFile); r.code != ExitUsage {
			t.Errorf("check --max-age soon: exit %d (%v)", r.code, r.err)
		}

		// A backup that fails (its mariabackup cannot say its version)
		// leaves the last success as it was.
		if r := backup("--mariabackup", "/bin/false"); r.code != ExitFailure {
			t.Fatalf("backup with a broken mariabackup: exit %d (%v)", r.code, r.err)
		}
		promtoolCheck(t, metricsFile)
		ms = readMetrics(t, metricsFile)
		for metric, want := range map[string]float64{
			"backstream_last_run_success": 0, "backstream_last_run_exit_code": ExitFailure,
			"backstream_last_success_timestamp_seconds": success, "backstream_last_success_raw_bytes": raw,
		} {
			if got, _ := metricOf(t, ms, metric, "backup"); got != want {
				t.Errorf("after a failed backup: %s = %v, want %v", metric, got, want)
			}
		}
		if got, _ := metricOf(t, ms, "backstream_last_run_timestamp_seconds", "backup"); got <= success {
			t.Errorf("the failed run's time %v is not after the success's %v", got, success)
		}
		if got, _ := metricOf(t, ms, "backstream_last_run_exit_code", "check"); got != ExitUsage {
			t.Errorf("check with bad flags: exit code %v in the metrics", got)
		}
		data, err := os.ReadFile(metricsFile)
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{password, "bk", os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv("AWS_ACCESS_KEY_ID")} {
			if secret != "" && strings.Contains(string(data), secret) {
				t.Errorf("the metrics file holds %q:\n%s", secret, data)
			}
		}

		// An incremental on the full; then the full's manifest damaged,
		// then gone: the chain is broken at it, named.
		backup("--incremental").mustSucceed(t)
		var inc string
		for _, e := range backupListing(t, repo.Location) {
			if e.Parent == full.ID {
				inc = e.ID
			}
		}
		if inc == "" {
			t.Fatal("no incremental on the full backup")
		}
		manifest := "backups/" + full.ID + "/manifest.json"
		data = repo.Read(t, manifest)
		repo.Write(t, manifest, data[:len(data)/2])
		r = run(t, "check", "--repo", repo.Location, "--max-age", "1h")
		if r.code != ExitCorrupt || r.err == nil || !strings.Contains(r.err.Error(), "backup "+inc+" cannot be restored") ||
			!strings.Contains(r.err.Error(), "broken at its parent "+full.ID) || !strings.Contains(r.err.Error(), manifest) {
			t.Errorf("check with the full's manifest damaged: exit %d, %v; want %d naming %s, %s and %s", r.code, r.err, ExitCorrupt, inc, full.ID, manifest)
		}
		if err := repo.Backend.Delete(context.Background(), manifest); err != nil {
			t.Fatal(err)
		}
		r = run(t, "check", "--repo", repo.Location, "--max-age", "1h", "--metrics-file", metricsFile)
		if r.code != ExitFailure || r.err == nil || strings.Contains(r.err.Error(), "\n") ||
			!strings.Contains(r.err.Error(), "backup "+inc+" cannot be restored: its chain is broken: its parent "+full.ID+" is not a complete backup") {
			t.Errorf("check with the full's manifest gone: exit %d, %v; want %d naming %s and %s", r.code, r.err, ExitFailure, inc, full.ID)
		}
		promtoolCheck(t, metricsFile)
		if got, _ := metricOf(t, readMetrics(t, metricsFile), "backstream_last_run_exit_code", "check"); got != ExitFailure {
			t.Errorf("the failed check's exit code in the metrics: %v", got)
		}
	})
}
