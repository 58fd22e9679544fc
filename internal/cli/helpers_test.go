package cli

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/restoretest"
	"github.com/backstream/backstream/internal/retention"
)

// startReceive runs `backstream receive` in the background and returns a
// channel with its result, once the receiver listens on its --listen
// address (or has ended).
func startReceive(t *testing.T, args ...string) <-chan result {
	t.Helper()
	done := make(chan result, 1)
	go func() { done <- runQuiet(args...) }()
	addr := ""
	for i, a := range args {
		if a == "--listen" && i+1 < len(args) {
			addr = args[i+1]
		}
	}
	_, portText, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("startReceive needs --listen HOST:PORT: %v", err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); !listening(t, port); time.Sleep(20 * time.Millisecond) {
		if len(done) > 0 || time.Now().After(deadline) {
			break // the test learns why from the result
		}
	}
	return done
}

// runQuiet is run without a *testing.T, for goroutines.
func runQuiet(args ...string) result {
	var out, errOut strings.Builder
	root := NewRoot("test")
	root.SetArgs(append(args, "--progress=none"))
	root.SetOut(&out)
	root.SetErr(&errOut)
	err := root.ExecuteContext(context.Background())
	return result{stdout: out.String(), stderr: errOut.String(), err: err, code: ExitCode(err, false)}
}

func waitResult(t *testing.T, what string, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		t.Logf("%s -> exit %d, err: %v", what, r.code, r.err)
		return r
	case <-time.After(3 * time.Minute):
		t.Fatalf("%s did not finish", what)
	}
	return result{}
}

// restoreTestReport runs verify --restore-test --json and decodes the report.
func restoreTestReport(t *testing.T, repoDir, id string) (restoretest.Report, result) {
	t.Helper()
	res := run(t, "verify", id, "--repo", repoDir, "--restore-test", "--json", "--progress", "none")
	var rep restoretest.Report
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
		t.Fatalf("verify --restore-test --json printed no report (exit %d): %v\nstdout: %s\nstderr: %s", res.code, err, res.stdout, res.stderr)
	}
	return rep, res
}

// expirePlan parses `expire --json`.
func expirePlan(t *testing.T, r result) map[string]retention.Entry {
	t.Helper()
	var es []retention.Entry
	if err := json.Unmarshal([]byte(r.stdout), &es); err != nil {
		t.Fatalf("expire --json: %v\n%s", err, r.stdout)
	}
	out := map[string]retention.Entry{}
	for _, e := range es {
		out[e.ID] = e
	}
	return out
}

func listIDs(t *testing.T, location string) []string {
	t.Helper()
	var ids []string
	for _, e := range backupListing(t, location) {
		ids = append(ids, e.ID)
	}
	return ids
}
