package restoretest

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repo/repotest"
)

// TestProveRecordsDamagedMetadata: a backup whose metadata is damaged
// fails its restore test before a sandbox is made, as corruption, and
// the failure is recorded against it (it used to dereference the report
// it did not have).
func TestProveRecordsDamagedMetadata(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	m := repotest.Store(t, r, repotest.Backup{ID: "20261121T030000Z-0001", Files: map[string]string{"ibdata1": "data"}})
	meta, err := r.PutMeta(ctx, m.ID, "meta/backup-my.cnf", []byte("[mysqld]\n"), m.Hash)
	if err != nil {
		t.Fatal(err)
	}
	m.Meta = append(m.Meta, meta)
	p := filepath.Join(r.Backend.Location(), repo.Dir(m.ID), meta.Name)
	if err := os.WriteFile(p, []byte("[mysqld]\nx\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var notRecorded []error
	rep, err := Prove(ctx, Request{Job: Job{Repo: r, Backup: m, WorkDir: t.TempDir()},
		Progress: func() *progress.Tracker {
			return progress.Start(progress.Options{Mode: progress.ModeQuiet, Out: io.Discard})
		},
		NotRecorded: func(err error) { notRecorded = append(notRecorded, err) }})
	if rep != nil || !archive.IsCorrupt(err) {
		t.Fatalf("damaged metadata: report %+v, error %v; want no report and corruption", rep, err)
	}
	v, verr := r.ReadVerdict(ctx, m.ID)
	if verr != nil || v.RestoreTest == nil || v.RestoreTest.OK || !strings.Contains(v.RestoreTest.Error, "backup-my.cnf") {
		t.Errorf("restore test verdict %+v, %v; want a failure naming the damaged object", v.RestoreTest, verr)
	}
	if len(notRecorded) > 0 {
		t.Errorf("verdicts not recorded: %v", notRecorded)
	}
}
