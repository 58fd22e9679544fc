package restore

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo/repotest"
)

// A stored physical backup whose redo log ends before its last_lsn (one
// committed before backstream checked it at backup time) cannot be
// prepared: its restore fails as damage naming the backup and both LSNs,
// rather than leaving a datadir that the prepare refuses later.
func TestShortRedoCopyFailsTheRestore(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	const first = 100_000 // the log ends at 100008
	files := map[string]string{"ibdata1": "data", "ib_logfile0": repotest.RedoLog(first)}
	for _, c := range []struct {
		id   string
		last uint64
		bad  bool
	}{{"20261130T030000Z-0001", first + 8, false}, {"20261130T040000Z-0001", first + 24, true}} {
		m := repotest.Store(t, r, repotest.Backup{ID: c.id, Files: files, LastLSN: c.last})
		links, err := Links(ctx, r, m)
		if err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(t.TempDir(), "datadir")
		err = Datadir(ctx, Job{Links: links, TargetDir: target})
		switch {
		case !c.bad && err != nil:
			t.Errorf("a log that reaches last_lsn: %v", err)
		case !c.bad:
			if b, err := os.ReadFile(filepath.Join(target, "ib_logfile0")); err != nil || string(b) != files["ib_logfile0"] {
				t.Errorf("the restored log: %v", err)
			}
		case !archive.IsCorrupt(err) || !strings.Contains(err.Error(), m.ID) || !strings.Contains(err.Error(), "ends at LSN 100008") || !strings.Contains(err.Error(), "short of LSN 100024"):
			t.Errorf("a log 16 bytes short: %v, want damage naming the backup and both LSNs", err)
		}
	}
}
