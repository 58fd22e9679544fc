package restorecase

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/repo/repotest"
	"github.com/backstream/backstream/internal/restore"
)

var files = map[string]string{"ibdata1": strings.Repeat("i", 70000), "db/t.ibd": "table t", "db/t.frm": "frm", "xtrabackup_checkpoints": "backup_type = full-backuped\n"}

// The engine is chosen from the manifest's kind, in EngineFor alone.
func TestEngineFor(t *testing.T) {
	for _, c := range []struct {
		kind, want string
	}{
		{archive.KindPhysical, archive.KindPhysical},
		{archive.KindLogical, archive.KindLogical},
		{archive.KindBinlog, ""},
	} {
		e, err := EngineFor(&archive.Manifest{ID: "20261121T190512Z-0001", Kind: c.kind})
		switch {
		case c.want == "" && (err == nil || !strings.Contains(err.Error(), "is a binlog backup: only physical and logical backups restore")):
			t.Errorf("%s: %v, %v; want refused", c.kind, e, err)
		case c.want != "" && (err != nil || e.Kind() != c.want):
			t.Errorf("%s: %v, %v; want the %s engine", c.kind, e, err, c.want)
		}
	}
}

// Restore of a physical backup writes its datadir through the physical
// engine and says what it wrote.
func TestRestorePhysicalIntoDirectory(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	m := repotest.Store(t, r, repotest.Backup{ID: "20261121T190512Z-0001", Files: files})
	target := filepath.Join(t.TempDir(), "datadir")
	res, err := Restore(ctx, BackupRequest{Repo: r, Backup: m, Datadir: restore.Job{TargetDir: target, Options: restore.Options{NoSync: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Datadir == nil || res.InPlace != nil || res.Load != nil {
		t.Fatalf("result %+v: want a datadir restored, nothing else", res)
	}
	d := res.Datadir
	if d.Backup.ID != m.ID || !slices.Equal(d.Chain, []string{m.ID}) || d.Target != target || d.Prepared {
		t.Errorf("result %+v", d)
	}
	for p, want := range files {
		if got, err := os.ReadFile(filepath.Join(target, p)); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v", p, got, err)
		}
	}
}

// A restore into place refuses a datadir that holds files, without
// force, before it writes anything or shows any progress.
func TestInPlaceRefusesADatadirThatHoldsFiles(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	m := repotest.Store(t, r, repotest.Backup{ID: "20261121T190512Z-0001", Files: files})
	dir := filepath.Join(t.TempDir(), "datadir")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ibdata1"), []byte("live"), 0o600); err != nil {
		t.Fatal(err)
	}
	started := false
	res, err := Restore(ctx, BackupRequest{Repo: r, Backup: m, InPlace: &Place{Dir: dir},
		Progress: func() *progress.Tracker { started = true; return nil }})
	var refused *restore.RefusedError
	if !errors.As(err, &refused) || res.InPlace != nil {
		t.Fatalf("restore into a datadir holding files: %+v, %v; want refused", res, err)
	}
	if started {
		t.Error("a refused restore showed progress")
	}
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 1 {
		t.Errorf("the refused restore left %d entries beside the datadir", len(entries)-1)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "ibdata1")); string(got) != "live" {
		t.Errorf("the datadir's file was changed: %q", got)
	}
}
