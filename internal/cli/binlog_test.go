package cli

import (
	"fmt"
	"strings"
	"testing"
)

// binlog --json prints what one run archived; with --follow, which runs
// until stopped, it is refused as a usage error before anything is read.
// (What binlog archives, and its --json, are checked in internal/binlog.)
func TestBinlogFollowJSONRefused(t *testing.T) {
	t.Parallel()
	if r := run(t, "binlog", "--repo", newRepoDir(t), "--follow", "--json"); r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), "binlog --follow runs until stopped") {
		t.Errorf("binlog --follow --json: exit %d, %v; want refused", r.code, r.err)
	}
}
