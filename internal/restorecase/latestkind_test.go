package restorecase_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/health"
	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
	"github.com/backstream/backstream/internal/verify"
)

// latest, check, verify, list and restore do not mix kinds: a logical
// dump of one database, newer than the physical backup, is not what
// latest names, does not satisfy check --max-age while the physical
// backup is stale, and satisfies no check of whole-server logical
// backups either; --kind picks a kind, and a whole-server logical dump
// is what --kind logical names.
func TestLatestIsTheWholeServerPhysicalBackup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 1}); err != nil {
		t.Fatal(err)
	}
	r := usecasetest.NewLocalRepo(t)
	usecasetest.Backup(t, usecasetest.BackupOf(t, r, src))
	time.Sleep(3 * time.Second) // the ages check compares differ by more than a second
	// backup --logical --database sample
	dump := usecasetest.LogicalBackupOf(t, r, src)
	dump.Dump.Filter.Databases, dump.Dump.Skip.Users = []string{"sample"}, true
	usecasetest.Backup(t, dump)
	entries := usecasetest.List(t, r)
	if len(entries) != 2 || entries[0].Kind != "physical" || entries[1].Kind != "logical" || !entries[1].Partial || entries[0].Partial {
		t.Fatalf("want a physical backup, then a partial logical one: %+v", entries)
	}
	physical, partial := entries[0], entries[1]

	if got := verifiedOf(t, r, "latest", ""); got != physical.ID {
		t.Errorf("verify latest verified %s, not the physical backup %s", got, physical.ID)
	}
	if got := verifiedOf(t, r, "latest", "logical"); got != partial.ID {
		t.Errorf("verify latest --kind logical verified %s, not %s", got, partial.ID)
	}
	// list --kind logical: the partial dump (what prints "logical
	// partial"), not the physical backup.
	logical, err := inventory.List(ctx, r.Open(t), inventory.Request{Kind: archive.KindLogical})
	if err != nil {
		t.Fatal(err)
	}
	if len(logical) != 1 || logical[0].ID != partial.ID || logical[0].Kind != "logical" || !logical[0].Partial {
		t.Errorf("list --kind logical: %+v; want only the partial logical backup %s", logical, partial.ID)
	}
	req := usecasetest.RestoreOf(r, "")
	req.Kind, req.Restore.TargetDir = "physical", filepath.Join(t.TempDir(), "x")
	if res, err := restorecase.Run(ctx, req); err != nil || res.Datadir == nil || res.Datadir.Backup.ID != physical.ID {
		t.Errorf("restore --kind physical: %+v, %v; want the physical backup %s restored", res, err, physical.ID)
	}

	// A second after the dump: the physical backup is more than two
	// seconds old, the dump is not.
	now := partial.Finished.Add(time.Second).UTC().Format(time.RFC3339)
	err = checkRepo(t, r, health.Options{MaxAge: 2 * time.Second}, now)
	if !usecasetest.Failed(err) || !strings.Contains(err.Error(), "the newest complete backup, "+physical.ID) {
		t.Errorf("check --max-age while the physical backup is stale: %v; want a failure naming %s", err, physical.ID)
	}
	err = checkRepo(t, r, health.Options{MaxAge: 2 * time.Second, Kind: "logical"}, now)
	if !usecasetest.Failed(err) || !strings.Contains(err.Error(), "no complete whole-server logical backup") || !strings.Contains(err.Error(), "1 partial") {
		t.Errorf("check --kind logical with only a partial dump: %v", err)
	}

	// A whole-server dump is what --kind logical names, and satisfies
	// check --kind logical; latest is still the physical backup.
	usecasetest.Backup(t, usecasetest.LogicalBackupOf(t, r, src))
	whole := usecasetest.List(t, r)[2]
	if whole.Partial {
		t.Fatalf("a dump without filters is marked partial")
	}
	if got := verifiedOf(t, r, "latest", "logical"); got != whole.ID {
		t.Errorf("verify --kind logical verified %s, not %s", got, whole.ID)
	}
	if got := verifiedOf(t, r, "latest", ""); got != physical.ID {
		t.Errorf("verify latest after a whole-server dump verified %s, not the physical backup %s", got, physical.ID)
	}
	if err := checkRepo(t, r, health.Options{MaxAge: time.Hour, Kind: "logical"}, ""); err != nil {
		t.Errorf("check --max-age 1h --kind logical: %v", err)
	}
	if err := checkRepo(t, r, health.Options{Kind: "binlog"}, ""); !usecasetest.Refused(err) {
		t.Errorf("check --kind binlog: %v; want a refusal of the kind", err)
	}
}

// verifiedOf verifies backup ref of kind ("" for either) of r as `verify
// ref --kind kind` does (verify.Locked), failing the test if it fails,
// and returns the id of the backup it checked (the one its "backup ID:
// OK" names).
func verifiedOf(t *testing.T, r usecasetest.Repo, ref, kind string) string {
	t.Helper()
	var quiet usecasetest.Said
	res, err := verify.Locked(context.Background(), r.Access(), ref, kind, verify.Request{}, quiet.Tracker)
	if err != nil {
		t.Fatalf("verify %s --kind %q: %v", ref, kind, err)
	}
	return res.Backup.ID
}

// checkRepo judges r as `check` does with the options opt and --now now
// ("" for the clock's), and returns the error the command exits with: a
// refusal of the options, a failure to read the repository, or the
// problems the report found.
func checkRepo(t *testing.T, r usecasetest.Repo, opt health.Options, now string) error {
	t.Helper()
	if err := opt.Settle(now); err != nil {
		return err
	}
	rep, err := health.Check(context.Background(), r.Open(t), opt)
	if err != nil {
		return err
	}
	return rep.Err()
}
