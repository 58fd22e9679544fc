package systemd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// The paths the units name, replaced in the test's copies.
const (
	unitBinary  = "/usr/local/bin/backstream"
	unitProfile = "/etc/backstream"
	unitMetrics = "/var/lib/prometheus/node-exporter"
)

// unit is what the test reads of a unit file: its Environment= defaults,
// its EnvironmentFile= and its ExecStart= command line.
type unit struct {
	env     map[string]string
	envFile string
	exec    []string
}

// parseUnit reads the few unit file rules the units here use: one
// assignment a line, Environment= with or without double quotes around
// NAME=value, ExecStart= without quoting.
func parseUnit(t *testing.T, path string) unit {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := unit{env: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, value, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok || strings.HasPrefix(key, "#") {
			continue
		}
		switch key {
		case "Environment":
			name, v, _ := strings.Cut(strings.Trim(value, `"`), "=")
			u.env[name] = v
		case "EnvironmentFile":
			u.envFile = value
		case "ExecStart":
			u.exec = strings.Fields(value)
		}
	}
	return u
}

// command is the unit's command line for instance, as systemd runs it:
// %i replaced, and each $NAME replaced by its value (the environment
// file's, else the unit's default) split at whitespace.
func (u unit) command(t *testing.T, instance string) ([]string, []string) {
	t.Helper()
	env := map[string]string{}
	for k, v := range u.env {
		env[k] = strings.ReplaceAll(v, "%i", instance)
	}
	file := strings.ReplaceAll(u.envFile, "%i", instance)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("EnvironmentFile: %v", err)
	}
	var fromFile []string
	for _, line := range strings.Split(string(data), "\n") {
		if name, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			env[name] = v
			fromFile = append(fromFile, line)
		}
	}
	var args []string
	for _, w := range u.exec {
		if name, ok := strings.CutPrefix(w, "$"); ok {
			args = append(args, strings.Fields(env[name])...)
			continue
		}
		args = append(args, strings.ReplaceAll(w, "%i", instance))
	}
	return args, fromFile
}

// The units, with the binary, the profile and the metrics directory put
// where the test has them: systemd-analyze verify finds nothing to say of
// them, and each one's command, run against a sandbox server with a
// profile, does its job: two nights of backups (a full, then an
// incremental on it), binary logs archived until systemd would stop the
// service (SIGTERM, exit 0), a check that passes (binary logs included),
// expiry; the metrics file they share is valid for promtool and says
// each succeeded.
func TestUnits(t *testing.T) {
	for _, tool := range []string{"systemd-analyze", "promtool"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s: %v (scripts/deps.sh installs it)", tool, err)
		}
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin", "backstream")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/backstream/backstream/cmd/backstream").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	profile, metrics, units, repo := filepath.Join(dir, "etc"), filepath.Join(dir, "metrics"), filepath.Join(dir, "units"), filepath.Join(dir, "repo")
	// The metrics directory is made after the first backup: a host
	// without node_exporter still gets its backups.
	for _, d := range []string{profile, units} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	names, err := filepath.Glob("backstream-*@.*")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	want := []string{"backstream-backup@.service", "backstream-backup@.timer", "backstream-binlog@.service", "backstream-check@.service",
		"backstream-check@.timer", "backstream-expire@.service", "backstream-expire@.timer", "backstream-restore-test@.service",
		"backstream-restore-test@.timer"}
	if !slices.Equal(names, want) {
		t.Fatalf("units %v, want %v", names, want)
	}
	replacer := strings.NewReplacer(unitBinary, bin, unitProfile, profile, unitMetrics, metrics)
	var copies []string
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), unitBinary) && strings.HasSuffix(name, ".service") {
			t.Errorf("%s does not run %s", name, unitBinary)
		}
		p := filepath.Join(units, name)
		if err := os.WriteFile(p, []byte(replacer.Replace(string(data))), 0o644); err != nil {
			t.Fatal(err)
		}
		copies = append(copies, p)
	}
	verify := exec.Command("systemd-analyze", append([]string{"verify", "--man=no"}, copies...)...)
	if out, err := verify.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}

	// The profile of instance db1: a sandbox server, a local repository.
	// The socket and protocol are set, so that no option file of this
	// host can send a unit elsewhere.
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1}); err != nil {
		t.Fatal(err)
	}
	// The repository is in the profile's option file, not the
	// environment file: every unit must read the profile.
	writeFile(t, filepath.Join(profile, "db1.cnf"), "[backstream]\nprotocol = socket\nsocket = "+src.Socket+"\nuser = root\nrepo = "+repo+"\n")
	writeFile(t, filepath.Join(profile, "db1.env"), "CHECK_FLAGS=--max-binlog-lag 10m\n")
	t.Setenv("BACKSTREAM_REPO", "")
	// Once, by hand: the units never create a repository.
	if out, err := exec.Command(bin, "init", "--repo", repo).CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}

	runUnit := func(name string, extra ...string) string {
		t.Helper()
		args, env := parseUnit(t, filepath.Join(units, name)).command(t, "db1")
		cmd := exec.Command(args[0], append(args[1:], extra...)...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		t.Logf("%s: %s\n%s", name, strings.Join(args, " "), out)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return string(out)
	}
	out := runUnit("backstream-backup@.service")
	if !strings.Contains(out, "warning: --metrics-file") {
		t.Errorf("the backup without a metrics directory does not warn:\n%s", out)
	}
	if err := os.Mkdir(metrics, 0o700); err != nil {
		t.Fatal(err)
	}
	runUnit("backstream-backup@.service") // the next night: an incremental
	listing, err := exec.Command(bin, "list", "--repo", repo).Output()
	if err != nil || !strings.Contains(string(listing), "physical +1") {
		t.Fatalf("after two backups: %v\n%s", err, listing)
	}

	// binlog --follow runs until systemd stops it.
	args, env := parseUnit(t, filepath.Join(units, "backstream-binlog@.service")).command(t, "db1")
	follow := exec.Command(args[0], args[1:]...)
	follow.Env = append(os.Environ(), env...)
	var followOut bytes.Buffer
	follow.Stdout, follow.Stderr = &followOut, &followOut
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	// Until the status says something is archived: the follower stores
	// its status before the first segment too, and a stop then leaves no
	// binary log for the check below (it failed so under load).
	archived := func() bool {
		st, _ := filepath.Glob(filepath.Join(repo, "binlogs", "*", "status.json"))
		for _, f := range st {
			var s struct {
				ArchivedOffset int64 `json:"archived_offset"`
			}
			if b, err := os.ReadFile(f); err == nil && json.Unmarshal(b, &s) == nil && s.ArchivedOffset > 0 {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if archived() {
			break
		}
		if time.Now().After(deadline) {
			follow.Process.Kill()
			follow.Wait()
			t.Fatalf("binlog --follow archived nothing in a minute:\n%s", followOut.String())
		}
	}
	follow.Process.Signal(syscall.SIGTERM)
	if err := follow.Wait(); err != nil {
		t.Fatalf("binlog --follow stopped by SIGTERM: %v\n%s", err, followOut.String())
	}

	// No restore drill has run yet: the check unit fails on it, naming
	// what to run.
	args, env = parseUnit(t, filepath.Join(units, "backstream-check@.service")).command(t, "db1")
	untested := exec.Command(args[0], args[1:]...)
	untested.Env = append(os.Environ(), env...)
	if out, err := untested.CombinedOutput(); err == nil || !strings.Contains(string(out), "restore test") {
		t.Errorf("check before any restore drill: %v, %s; want a failure naming the restore test", err, out)
	}
	runUnit("backstream-restore-test@.service")
	runUnit("backstream-check@.service")
	runUnit("backstream-expire@.service")

	promFile := filepath.Join(metrics, "backstream-db1.prom")
	data, err := os.ReadFile(promFile)
	if err != nil {
		t.Fatal(err)
	}
	check := exec.Command("promtool", "check", "metrics")
	check.Stdin = bytes.NewReader(data)
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s\nof:\n%s", err, out, data)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	succeeded := map[string]bool{}
	for _, m := range families["backstream_last_run_success"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "command" && m.GetGauge().GetValue() == 1 {
				succeeded[l.GetValue()] = true
			}
		}
	}
	for _, c := range []string{"backup", "binlog", "check", "expire", "restore-test"} {
		if !succeeded[c] {
			t.Errorf("the metrics file does not say %s succeeded:\n%s", c, data)
		}
	}

	// Two days later with no backup since: the check unit's command, at
	// that clock, fails naming the newest backup and its age.
	args, env = parseUnit(t, filepath.Join(units, "backstream-check@.service")).command(t, "db1")
	later := exec.Command(args[0], append(args[1:], "--now", time.Now().Add(48*time.Hour).UTC().Format(time.RFC3339))...)
	later.Env = append(os.Environ(), env...)
	outb, err := later.CombinedOutput()
	if err == nil || !strings.Contains(string(outb), "newest complete backup") || strings.Contains(string(outb), "restore test") {
		t.Errorf("check two days later: %v, %s; want a failure naming the newest backup (and the restore drill still recent)", err, outb)
	}
	// Nine days later, the restore drill is more than a week old.
	later = exec.Command(args[0], append(args[1:], "--now", time.Now().Add(9*24*time.Hour).UTC().Format(time.RFC3339))...)
	later.Env = append(os.Environ(), env...)
	if outb, err = later.CombinedOutput(); err == nil || !strings.Contains(string(outb), "no backup has been proven restorable for") {
		t.Errorf("check nine days later: %v, %s; want a failure saying no backup was proven restorable", err, outb)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
