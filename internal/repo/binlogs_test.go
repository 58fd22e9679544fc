package repo_test

import (
	"context"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repo/repotest"
)

// A gap marker, status or link object that is not one is damage naming
// the object and what is wrong with it: the parser's error for JSON that
// does not parse, what it holds instead for JSON that parses.
func TestDamagedBinlogObjectsNameTheCause(t *testing.T) {
	ctx := context.Background()
	gaps := func(r *repo.Repo) error { _, err := r.BinlogGaps(ctx); return err }
	status := func(r *repo.Repo) error { _, err := r.BinlogStatusOf(ctx, "db1-1"); return err }
	links := func(r *repo.Repo) error { _, err := r.BinlogLinks(ctx); return err }
	for _, tc := range []struct {
		name, object, content string
		read                  func(*repo.Repo) error
		cause                 string
	}{
		{"gap not JSON", "binlogs/db1-1/gaps/bin.000007.json", `{"source":`, gaps, "unexpected end of JSON input"},
		{"gap of another place", "binlogs/db1-1/gaps/bin.000007.json", `{"source":"db2-2","before":"bin.000007"}`, gaps,
			"it names binlogs/db2-2/gaps/bin.000007.json instead"},
		{"status not JSON", "binlogs/db1-1/status.json", `status`, status, "invalid character"},
		{"status of another source", "binlogs/db1-1/status.json", `{"source":"db2-2"}`, status, `it names source "db2-2"`},
		{"status naming no source", "binlogs/db1-1/status.json", `{}`, status, `it names source ""`},
		{"link not JSON", "binlogs/db1-1/continues.json", `[]`, links, "json: cannot unmarshal array"},
		{"link of another source", "binlogs/db1-1/continues.json",
			`{"source":"db2-2","continues":"db0-9","file":"bin.000001","offset":4}`, links, "it names binlogs/db2-2/continues.json instead"},
		{"link continuing nothing", "binlogs/db1-1/continues.json",
			`{"source":"db1-1","file":"bin.000001","offset":4}`, links, "it names no source it continues"},
		{"link without file", "binlogs/db1-1/continues.json",
			`{"source":"db1-1","continues":"db0-9","offset":4}`, links, "it names no file to continue from"},
		{"link before the first event", "binlogs/db1-1/continues.json",
			`{"source":"db1-1","continues":"db0-9","file":"bin.000001"}`, links, "offset 0 of bin.000001 is before the first event"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := repotest.New(t)
			if _, err := r.Backend.Put(ctx, tc.object, strings.NewReader(tc.content)); err != nil {
				t.Fatal(err)
			}
			err := tc.read(r)
			if !archive.IsCorrupt(err) {
				t.Fatalf("%s holding %s: %v; want damage", tc.object, tc.content, err)
			}
			want := tc.object + " is damaged: " + tc.cause
			if msg := err.Error(); !strings.Contains(msg, want) || strings.Contains(msg, "<nil>") {
				t.Errorf("%s holding %s: %q; want it to say %q", tc.object, tc.content, msg, want)
			}
		})
	}
}
