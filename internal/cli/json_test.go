package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// decodeOne parses out, what a --json run printed, into v: it must be one
// JSON object and nothing after it.
func decodeOne(t *testing.T, what, out string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(v); err != nil || dec.More() {
		t.Fatalf("%s: stdout is not one JSON object (%v):\n%s", what, err, out)
	}
}

// backup --json (physical, incremental, logical) and merge --json print
// one JSON object on stdout and nothing else: the backup's id, kind,
// parent, positions, sizes and seconds, as list --json has them.
func TestBackupPrintsJSON(t *testing.T) {
	t.Parallel()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(t.Context(), src.DB(), sandbox.SampleOptions{Tables: 1}); err != nil {
		t.Fatal(err)
	}
	repoDir := newRepoDir(t)
	type result struct {
		ID          string   `json:"id"`
		Kind        string   `json:"kind"`
		Parent      string   `json:"parent"`
		Depth       int      `json:"depth"`
		MergedFrom  []string `json:"merged_from"`
		StoredBytes int64    `json:"stored_bytes"`
		RawBytes    int64    `json:"raw_bytes"`
		Seconds     float64  `json:"seconds"`
		Positions   struct {
			ToLSN uint64 `json:"to_lsn"`
			GTID  string `json:"gtid"`
		} `json:"positions"`
		Databases []struct {
			Name string `json:"name"`
		} `json:"databases"`
	}
	parse := func(args ...string) result {
		t.Helper()
		out := run(t, args...).mustSucceed(t).stdout
		var r result
		dec := json.NewDecoder(strings.NewReader(out))
		if err := dec.Decode(&r); err != nil || dec.More() {
			t.Fatalf("%v: stdout is not one JSON object (%v):\n%s", args, err, out)
		}
		if r.ID == "" || r.StoredBytes <= 0 || r.RawBytes <= 0 || r.Seconds <= 0 {
			t.Errorf("%v: %+v lacks the id, sizes or seconds", args, r)
		}
		return r
	}
	conn := sandboxConn(src)
	full := parse(append([]string{"backup", "--repo", repoDir, "--json"}, conn...)...)
	if full.Kind != "physical" || full.Parent != "" || full.Positions.ToLSN == 0 {
		t.Errorf("full backup --json: %+v", full)
	}
	inc := parse(append([]string{"backup", "--repo", repoDir, "--incremental", "--json"}, conn...)...)
	if inc.Parent != full.ID || inc.Depth != 1 {
		t.Errorf("incremental --json: %+v, want parent %s at depth 1", inc, full.ID)
	}
	// restore --json of the chain: what was written where, one object.
	target := filepath.Join(t.TempDir(), "restored")
	out := run(t, "restore", inc.ID, "--repo", repoDir, "--target-dir", target, "--prepare", "--json").mustSucceed(t).stdout
	var restored struct {
		Backup    string   `json:"backup"`
		Chain     []string `json:"chain"`
		Target    string   `json:"target"`
		Prepared  bool     `json:"prepared"`
		ReadBytes int64    `json:"read_bytes"`
	}
	if err := json.Unmarshal([]byte(out), &restored); err != nil || restored.Backup != inc.ID || len(restored.Chain) != 2 ||
		restored.Chain[0] != full.ID || restored.Target != target || !restored.Prepared || restored.ReadBytes != full.StoredBytes+inc.StoredBytes {
		t.Errorf("restore --json: %v, %+v; want the chain %s, %s into %s, prepared, %d bytes read", err, restored, full.ID, inc.ID, target, full.StoredBytes+inc.StoredBytes)
	}
	merged := parse("merge", inc.ID, "--repo", repoDir, "--json")
	if len(merged.MergedFrom) != 2 || merged.MergedFrom[1] != inc.ID {
		t.Errorf("merge --json: %+v", merged)
	}
	logical := parse(append([]string{"backup", "--logical", "--repo", repoDir, "--skip-users", "--json"}, conn...)...)
	if logical.Kind != "logical" || len(logical.Databases) == 0 || logical.Positions.GTID == "" {
		t.Errorf("logical backup --json: %+v", logical)
	}
}
