package restore

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repo/repotest"
)

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var files = map[string]string{"ibdata1": strings.Repeat("i", 70000), "db/t.ibd": "table t", "db/t.frm": "frm", "xtrabackup_checkpoints": "backup_type = full-backuped\n"}

func TestDatadirWritesEveryFileAndFinishes(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	m := repotest.Store(t, r, repotest.Backup{ID: "20261121T190512Z-0001", Files: files})
	links, err := Links(ctx, r, m)
	if err != nil || len(links) != 1 {
		t.Fatalf("Links = %d links, %v; want the backup alone", len(links), err)
	}
	target := filepath.Join(t.TempDir(), "datadir")
	if err := Datadir(ctx, Job{Links: links, TargetDir: target}); err != nil {
		t.Fatal(err)
	}
	got := readTree(t, target)
	if len(got) != len(files) {
		t.Errorf("restored %d files, want %d: %v", len(got), len(files), got)
	}
	for p, want := range files {
		if got[p] != want {
			t.Errorf("%s: restored %q, want %q", p, got[p], want)
		}
	}
	if _, err := os.Stat(filepath.Join(target, markerName)); !os.IsNotExist(err) {
		t.Errorf("the restore marker is still there after Finish: %v", err)
	}
	// The target is now in use: a second restore is refused and leaves it.
	err = Datadir(ctx, Job{Links: links, TargetDir: target})
	if err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Fatalf("restore into a restored datadir: %v, want refused as not empty", err)
	}
	if got2 := readTree(t, target); len(got2) != len(files) {
		t.Errorf("the refused restore changed the target: %d files", len(got2))
	}
}

func TestDatadirEmptiesTargetOnDamage(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	m := repotest.Store(t, r, repotest.Backup{ID: "20261121T190512Z-0002", Files: files})
	// Flip a byte in the middle of a stream object.
	obj := filepath.Join(r.Backend.Location(), repo.Dir(m.ID), m.Streams[0].Name)
	data, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(obj, data, 0o600); err != nil {
		t.Fatal(err)
	}
	links, _ := Links(ctx, r, m)
	// An existing empty target stays, emptied; a created one goes.
	existing := t.TempDir()
	created := filepath.Join(t.TempDir(), "new")
	for _, dir := range []string{existing, created} {
		err = Datadir(ctx, Job{Links: links, TargetDir: dir})
		if !archive.IsCorrupt(err) || !strings.Contains(err.Error(), m.ID) {
			t.Fatalf("restore of a damaged backup into %s: %v, want corruption naming the backup", dir, err)
		}
	}
	if entries, err := os.ReadDir(existing); err != nil || len(entries) != 0 {
		t.Errorf("the existing target holds %d entries after a failed restore (%v), want none", len(entries), err)
	}
	if _, err := os.Stat(created); !os.IsNotExist(err) {
		t.Errorf("the target the restore created is still there: %v", err)
	}
}

func TestClaimNamesAnInterruptedRestore(t *testing.T) {
	dir := t.TempDir()
	tg, err := Claim(dir, "20261121T190512Z-0003")
	if err != nil {
		t.Fatal(err)
	}
	// A restore killed here leaves the marker; the next one names it.
	_, err = Claim(dir, "20261121T190512Z-0004")
	if err == nil || !strings.Contains(err.Error(), "interrupted restore") || !strings.Contains(err.Error(), "20261121T190512Z-0003") {
		t.Fatalf("Claim of a killed restore's target: %v, want it named as interrupted with its backup", err)
	}
	if got := tg.Abandon(os.ErrClosed); got != os.ErrClosed {
		t.Fatalf("Abandon returned %v, want the cause unchanged", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("Abandon left %d entries", len(entries))
	}
}

func TestChainNeedsPrepare(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	full := repotest.Store(t, r, repotest.Backup{ID: "20261121T190512Z-0005", Files: files})
	inc := repotest.Store(t, r, repotest.Backup{ID: "20261121T190612Z-0006", Parent: full, Files: map[string]string{"db/t.ibd.delta": "delta"}})
	links, err := Links(ctx, r, inc)
	if err != nil {
		t.Fatal(err)
	}
	if len(links) != 2 || links[0].Manifest.ID != full.ID || links[1].Manifest.ID != inc.ID {
		t.Fatalf("Links of an incremental = %v, want its full then itself", links)
	}
	target := filepath.Join(t.TempDir(), "datadir")
	err = Datadir(ctx, Job{Links: links, TargetDir: target})
	if err == nil || !strings.Contains(err.Error(), "restores only with --prepare") {
		t.Fatalf("chain without prepare: %v, want refused", err)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Errorf("the refused chain restore left its target: %v", err)
	}
}
