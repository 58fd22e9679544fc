package metrics

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// promtoolCheck runs `promtool check metrics` (Debian's prometheus
// package; scripts/deps.sh installs it) on the file, which fails on a
// file that is not the text format or breaks its naming conventions.
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

// value reads the value of metric for command from the file as the
// textfile collector would, failing if it is not there.
func value(t *testing.T, path, metric, command string) float64 {
	t.Helper()
	v, ok := lookup(t, path, metric, command)
	if !ok {
		t.Fatalf("%s{command=%q} is not in %s", metric, command, path)
	}
	return v
}

func lookup(t *testing.T, path, metric, command string) (float64, bool) {
	t.Helper()
	s, err := read(path)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range s {
		if k.command == command {
			x, ok := v[metric]
			return x, ok
		}
	}
	return 0, false
}

func TestWriteKeepsTheLastSuccess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "backstream.prom")
	start := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	ok := Run{Command: "backup", Repository: "s3://backups/db1", Server: "db1.internal:3306",
		Start: start, End: start.Add(90 * time.Second), RawBytes: 3000, StoredBytes: 1000, WriteRequests: 40, ReadRequests: 3}
	if err := Write(path, ok); err != nil {
		t.Fatal(err)
	}
	promtoolCheck(t, path)
	for metric, want := range map[string]float64{
		LastRunTime: float64(start.Add(90 * time.Second).Unix()), LastRunDuration: 90, LastRunSuccess: 1, LastRunExitCode: 0,
		LastSuccessTime: float64(start.Add(90 * time.Second).Unix()), LastSuccessDuration: 90,
		LastSuccessRawBytes: 3000, LastSuccessStoredBytes: 1000, LastSuccessRatio: 3,
		LastRunWriteRequests: 40, LastRunReadRequests: 3,
	} {
		if got := value(t, path, metric, "backup"); got != want {
			t.Errorf("%s = %v, want %v", metric, got, want)
		}
	}

	// A day later the backup fails: the last run says so, the last
	// success is the one before; the requests are the failed run's, which
	// cost as much. Another command gets series of its own.
	failed := ok
	failed.Start, failed.End, failed.ExitCode = start.Add(24*time.Hour), start.Add(24*time.Hour+5*time.Second), 1
	failed.WriteRequests, failed.ReadRequests = 7, 0
	if err := Write(path, failed); err != nil {
		t.Fatal(err)
	}
	expire := Run{Command: "expire", Repository: "s3://backups/db1", Start: start, End: start.Add(time.Second)}
	if err := Write(path, expire); err != nil {
		t.Fatal(err)
	}
	promtoolCheck(t, path)
	for metric, want := range map[string]float64{
		LastRunTime: float64(failed.End.Unix()), LastRunDuration: 5, LastRunSuccess: 0, LastRunExitCode: 1,
		LastSuccessTime: float64(ok.End.Unix()), LastSuccessDuration: 90, LastSuccessRawBytes: 3000, LastSuccessStoredBytes: 1000,
		LastRunWriteRequests: 7, LastRunReadRequests: 0,
	} {
		if got := value(t, path, metric, "backup"); got != want {
			t.Errorf("after a failure: %s = %v, want %v", metric, got, want)
		}
	}
	if got := value(t, path, LastRunSuccess, "expire"); got != 1 {
		t.Errorf("expire: success %v", got)
	}
	if _, ok := lookup(t, path, LastSuccessRawBytes, "expire"); ok {
		t.Error("expire, which makes no backup, has a size")
	}
	if _, ok := lookup(t, path, LastRunWriteRequests, "expire"); ok {
		t.Error("expire, which sent no request to an object store, has a request count")
	}
	// Only the file and its lock: no temporary file left behind.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("the directory holds %v", entries)
	}
	// The labels, as the collector will see them.
	data, _ := os.ReadFile(path)
	for _, want := range []string{
		`backstream_last_success_timestamp_seconds{command="backup",repository="s3://backups/db1",server="db1.internal:3306"} 1.79600049e+09`,
		`backstream_last_run_success{command="expire",repository="s3://backups/db1",server=""} 1`,
		"# TYPE backstream_last_success_raw_bytes gauge",
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the file lacks %q:\n%s", want, data)
		}
	}
}

func TestLocationHoldsNoCredentials(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/backups/db1":                      "/backups/db1",
		"file:///backups/db1":               "file:///backups/db1",
		"s3://backups/db1":                  "s3://backups/db1",
		"s3://AKIAKEY:s3cret@backups/db1":   "s3://backups/db1",
		"s3://backups/db1?secret=s3cret#x":  "s3://backups/db1",
		"s3://AKIAKEY:s3c/ret@backups/db1":  "s3://backups/db1",
		"s3://AKIAKEY:s3c%zzret@backups/db": "s3://backups/db",
	} {
		if got := Location(in); got != want {
			t.Errorf("Location(%q) = %q, want %q", in, got, want)
		}
	}
	path := filepath.Join(t.TempDir(), "m.prom")
	if err := Write(path, Run{Command: "backup", Repository: "s3://AKIAKEY:s3cret@backups/db1?token=t0ken", End: time.Now()}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	for _, secret := range []string{"AKIAKEY", "s3cret", "t0ken"} {
		if strings.Contains(string(data), secret) {
			t.Errorf("the metrics file holds %q:\n%s", secret, data)
		}
	}
}

// A file that is not metrics is replaced, and said so.
func TestWriteReplacesWhatItCannotRead(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "m.prom")
	if err := os.WriteFile(path, []byte("this is { not metrics\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Write(path, Run{Command: "verify", End: time.Now()})
	if err == nil || !strings.Contains(err.Error(), "held no metrics backstream can read, so it was replaced") {
		t.Fatalf("Write over a file of something else: %v", err)
	}
	promtoolCheck(t, path)
	if value(t, path, LastRunSuccess, "verify") != 1 {
		t.Error("the new file lacks the run")
	}
}

// Writers sharing a file take turns: none loses another's series.
func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "m.prom")
	var wg sync.WaitGroup
	const n = 8
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			errs <- Write(path, Run{Command: fmt.Sprintf("cmd%d", i), End: time.Now()})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	promtoolCheck(t, path)
	s, err := read(path)
	if err != nil || len(s) != n {
		t.Fatalf("after %d writers the file holds %d series (%v)", n, len(s), err)
	}
}
