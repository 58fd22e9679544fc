package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// latest, check, verify, list and restore do not mix kinds: a logical
// dump of one database, newer than the physical backup, is not what
// latest names, does not satisfy check --max-age while the physical
// backup is stale, and satisfies no check of whole-server logical
// backups either; --kind picks a kind, and a whole-server logical dump
// is what --kind logical names.
func TestLatestIsTheWholeServerPhysicalBackup(t *testing.T) {
	t.Parallel()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1}); err != nil {
		t.Fatal(err)
	}
	repoDir := newRepoDir(t)
	run(t, append([]string{"backup", "--repo", repoDir, "--parallel", "2"}, sandboxConn(src)...)...).mustSucceed(t)
	time.Sleep(3 * time.Second) // the ages check compares differ by more than a second
	run(t, append([]string{"backup", "--logical", "--repo", repoDir, "--database", "sample"}, sandboxConn(src)...)...).mustSucceed(t)
	entries := backupListing(t, repoDir)
	if len(entries) != 2 || entries[0].Kind != "physical" || entries[1].Kind != "logical" || !entries[1].Partial || entries[0].Partial {
		t.Fatalf("want a physical backup, then a partial logical one: %+v", entries)
	}
	physical, partial := entries[0], entries[1]

	if r := run(t, "verify", "--repo", repoDir).mustSucceed(t); !strings.Contains(r.stdout, "backup "+physical.ID+": OK") {
		t.Errorf("verify latest did not verify the physical backup %s: %s", physical.ID, r.stdout)
	}
	if r := run(t, "verify", "latest", "--kind", "logical", "--repo", repoDir).mustSucceed(t); !strings.Contains(r.stdout, "backup "+partial.ID+": OK") {
		t.Errorf("verify latest --kind logical did not verify %s: %s", partial.ID, r.stdout)
	}
	if r := run(t, "list", "--repo", repoDir, "--kind", "logical").mustSucceed(t); strings.Contains(r.stdout, physical.ID) || !strings.Contains(r.stdout, "logical partial") {
		t.Errorf("list --kind logical:\n%s", r.stdout)
	}
	if r := run(t, "restore", "--repo", repoDir, "--kind", "physical", "--target-dir", t.TempDir()+"/x"); r.code != ExitOK {
		t.Errorf("restore --kind physical: exit %d, %v", r.code, r.err)
	}

	// A second after the dump: the physical backup is more than two
	// seconds old, the dump is not.
	now := partial.Finished.Add(time.Second).UTC().Format(time.RFC3339)
	r := run(t, "check", "--repo", repoDir, "--max-age", "2s", "--now", now)
	if r.code != ExitFailure || r.err == nil || !strings.Contains(r.err.Error(), "the newest complete backup, "+physical.ID) {
		t.Errorf("check --max-age while the physical backup is stale: exit %d, %v; want %d naming %s", r.code, r.err, ExitFailure, physical.ID)
	}
	r = run(t, "check", "--repo", repoDir, "--max-age", "2s", "--now", now, "--kind", "logical")
	if r.code != ExitFailure || r.err == nil || !strings.Contains(r.err.Error(), "no complete whole-server logical backup") || !strings.Contains(r.err.Error(), "1 partial") {
		t.Errorf("check --kind logical with only a partial dump: exit %d, %v", r.code, r.err)
	}

	// A whole-server dump is what --kind logical names, and satisfies
	// check --kind logical; latest is still the physical backup.
	run(t, append([]string{"backup", "--logical", "--repo", repoDir}, sandboxConn(src)...)...).mustSucceed(t)
	whole := backupListing(t, repoDir)[2]
	if whole.Partial {
		t.Fatalf("a dump without filters is marked partial")
	}
	if r := run(t, "verify", "--kind", "logical", "--repo", repoDir).mustSucceed(t); !strings.Contains(r.stdout, "backup "+whole.ID+": OK") {
		t.Errorf("verify --kind logical did not verify %s: %s", whole.ID, r.stdout)
	}
	if r := run(t, "verify", "--repo", repoDir).mustSucceed(t); !strings.Contains(r.stdout, "backup "+physical.ID+": OK") {
		t.Errorf("verify latest after a whole-server dump did not verify the physical backup %s: %s", physical.ID, r.stdout)
	}
	run(t, "check", "--repo", repoDir, "--max-age", "1h", "--kind", "logical").mustSucceed(t)
	if r := run(t, "check", "--repo", repoDir, "--kind", "binlog"); r.code != ExitUsage {
		t.Errorf("check --kind binlog: exit %d, %v", r.code, r.err)
	}
}
