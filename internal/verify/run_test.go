package verify

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/repo/repotest"
)

func quiet(int64) *progress.Tracker {
	return progress.Start(progress.Options{Mode: progress.ModeQuiet, Out: io.Discard})
}

// TestRunChecksTheChainAndRecordsTheVerdict drives the use case: an
// incremental checked with its full, the verdict of both recorded, the
// line verify prints; then the full damaged: an error naming it, and the
// failure recorded against the full, not the incremental.
func TestRunChecksTheChainAndRecordsTheVerdict(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	full := repotest.Store(t, r, repotest.Backup{ID: "20261121T030000Z-0001", Files: map[string]string{"ibdata1": strings.Repeat("data ", 20000), "db/t.ibd": "t"}})
	inc := repotest.Store(t, r, repotest.Backup{ID: "20261121T040000Z-0002", Parent: full, Files: map[string]string{"ibdata1.delta": "delta"}})
	var notRecorded []error
	req := Request{Repo: r, Backup: inc, Workers: 2, Progress: quiet, NotRecorded: func(err error) { notRecorded = append(notRecorded, err) }}
	res, err := Run(ctx, req)
	if err != nil {
		t.Fatalf("an intact chain: %v", err)
	}
	var out bytes.Buffer
	res.WriteText(&out)
	want := "backup 20261121T040000Z-0002: OK (with its chain 20261121T030000Z-0001: 4 streams, 3 files, every checksum matches)\n"
	if out.String() != want {
		t.Errorf("text %q, want %q", out.String(), want)
	}
	for _, m := range []*archive.Manifest{full, inc} {
		v, err := r.ReadVerdict(ctx, m.ID)
		if err != nil || v.Checksums == nil || !v.Checksums.OK {
			t.Errorf("verdict of %s: %+v, %v; want checksums OK", m.ID, v.Checksums, err)
		}
	}

	flip(t, r, full.ID, full.Streams[0].Name)
	if _, err := Run(ctx, req); !archive.IsCorrupt(err) || !strings.Contains(err.Error(), full.ID) {
		t.Fatalf("the full damaged: %v; want corruption naming %s", err, full.ID)
	}
	v, err := r.ReadVerdict(ctx, full.ID)
	if err != nil || v.Checksums == nil || v.Checksums.OK || !strings.Contains(v.Checksums.Error, full.Streams[0].Name) {
		t.Errorf("verdict of the damaged full: %+v, %v; want not OK, naming the stream", v.Checksums, err)
	}
	if v, _ := r.ReadVerdict(ctx, inc.ID); v.Checksums == nil || !v.Checksums.OK {
		t.Errorf("verdict of the incremental: %+v; want the earlier OK, untouched", v.Checksums)
	}
	if len(notRecorded) > 0 {
		t.Errorf("verdicts not recorded: %v", notRecorded)
	}
}
