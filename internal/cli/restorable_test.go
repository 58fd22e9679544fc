package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/health"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// damagedChain is what a row of TestEveryOKIsRestorable damages: a
// repository holding a full backup and an incremental on it.
type damagedChain struct {
	repo      testRepo
	full, inc string
	// gtid is a target past the incremental that the archived binary
	// logs reach; binlog is the stream object of the last file archived.
	gtid, binlog string
}

// damageRow is one way a user meets a damaged repository. object names
// the object damaged (relative to the repository); flip damages one byte
// in its middle, otherwise it is deleted. code is the exit code restore,
// verify and check must give (3 for damage, 1 for a backup that is not
// there at all); catalog says check and list must see it from the
// catalog alone, before any verify ran. names is what every error must
// name besides the backups (the object, or part of its name). verify and
// restore give the commands' arguments when they are not those of the
// incremental (rows for archived binary logs: verify --until, restore
// --until); archive marks a row whose damage is in the binary log
// archive, which check and list judge by the archive's own records (see
// internal/binlog), not by a backup's.
type damageRow struct {
	name     string
	backends []string // the backends the row runs on
	object   func(t *testing.T, c damagedChain) string
	flip     bool
	code     int
	catalog  bool
	names    func(object string) string
	verify   func(c damagedChain) []string
	restore  func(c damagedChain, target string) []string
	archive  bool
}

var bothBackends, localOnly = []string{"local", "s3"}, []string{"local"}

// fullObject is the object of the full backup at name in its directory.
func fullObject(name string) func(t *testing.T, c damagedChain) string {
	return func(t *testing.T, c damagedChain) string { return "backups/" + c.full + "/" + name }
}

// fullMeta is the full backup's first metadata object.
func fullMeta(t *testing.T, c damagedChain) string {
	m, err := archive.ParseManifest(c.repo.Read(t, "backups/"+c.full+"/manifest.json"))
	if err != nil || len(m.Meta) == 0 {
		t.Fatalf("the full backup's manifest: %v, %d meta objects", err, len(m.Meta))
	}
	return "backups/" + c.full + "/" + m.Meta[0].Name
}

func base(object string) string { return filepath.Base(object) }

var damageRows = []damageRow{
	{name: "full stream object missing", backends: bothBackends, object: fullObject("streams/00000.xbs.zst"), code: ExitCorrupt, catalog: true},
	{name: "full stream object flipped", backends: bothBackends, object: fullObject("streams/00000.xbs.zst"), flip: true, code: ExitCorrupt},
	{name: "full frame index missing", backends: localOnly, object: fullObject("streams/00001.idx"), code: ExitCorrupt, catalog: true},
	{name: "full frame index flipped", backends: bothBackends, object: fullObject("streams/00001.idx"), flip: true, code: ExitCorrupt},
	// A restore does not read the full's metadata (its log, a copy of
	// its checkpoints): verify and check still call it damage.
	{name: "full meta object missing", backends: localOnly, object: fullMeta, code: ExitCorrupt, catalog: true,
		restore: func(damagedChain, string) []string { return nil }},
	{name: "full meta object flipped", backends: localOnly, object: fullMeta, flip: true, code: ExitCorrupt,
		restore: func(damagedChain, string) []string { return nil }},
	{name: "parent manifest flipped", backends: bothBackends, object: fullObject("manifest.json"), flip: true, code: ExitCorrupt, catalog: true},
	// The full's file and table lists, kept apart from its manifest: a
	// listing does not read them (as it does not read stream objects),
	// a restore and verify do, and check says what verify found.
	{name: "full contents flipped", backends: bothBackends, object: fullObject("meta/contents.json"), flip: true, code: ExitCorrupt},
	{name: "full contents missing", backends: localOnly, object: fullObject("meta/contents.json"), code: ExitCorrupt, catalog: true},
	// A parent without its manifest is not a backup at all: a chain
	// broken by a missing backup, exit 1 as documented.
	{name: "parent manifest missing", backends: localOnly, object: fullObject("manifest.json"), code: ExitFailure, catalog: true,
		names: func(string) string { return "is not a complete backup" }},
	// A point-in-time restore past the incremental reads it, its chain,
	// and the archived binary logs: verify --until checks all of them.
	{name: "archived binary log flipped", backends: bothBackends, object: func(t *testing.T, c damagedChain) string { return c.binlog },
		flip: true, code: ExitCorrupt, archive: true,
		verify: func(c damagedChain) []string {
			return []string{"verify", "--until-gtid", c.gtid, "--repo", c.repo.Location}
		},
		restore: func(c damagedChain, target string) []string {
			return []string{"restore", "--until-gtid", c.gtid, "--repo", c.repo.Location, "--target-dir", target}
		}},
	{name: "full stream object flipped under --until", backends: localOnly, object: fullObject("streams/00000.xbs.zst"), flip: true, code: ExitCorrupt,
		verify: func(c damagedChain) []string {
			return []string{"verify", "--until-gtid", c.gtid, "--repo", c.repo.Location}
		},
		restore: func(c damagedChain, target string) []string {
			return []string{"restore", "--until-gtid", c.gtid, "--repo", c.repo.Location, "--target-dir", target}
		}},
}

// TestEveryOKIsRestorable damages a repository in each way a user could
// meet and asserts that verify, check and list never say OK of a backup
// that restore then fails on: restore fails with the row's exit code,
// verify and check exit with it too naming the backup and the object,
// and list marks the backup BROKEN; once the object is back, all of them
// pass again.
func TestEveryOKIsRestorable(t *testing.T) {
	t.Parallel()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 2}); err != nil {
		t.Fatal(err)
	}
	forEachBackend(t, func(t *testing.T, repo testRepo) {
		for _, extra := range [][]string{nil, {"--incremental"}} {
			run(t, append(append([]string{"backup", "--repo", repo.Location, "--parallel", "2"}, extra...), sandboxConn(src)...)...).mustSucceed(t)
		}
		entries := backupListing(t, repo.Location)
		if len(entries) != 2 || entries[1].Parent != entries[0].ID {
			t.Fatalf("want a full and an incremental on it: %+v", entries)
		}
		c := damagedChain{repo: repo, full: entries[0].ID, inc: entries[1].ID}
		// A transaction after the incremental, in a binary log file
		// archived whole.
		usecasetest.ExecAll(t, src.DB(), "CREATE DATABASE IF NOT EXISTS mark", "CREATE TABLE IF NOT EXISTS mark.t (id INT PRIMARY KEY)", "REPLACE INTO mark.t VALUES (1)")
		if err := src.DB().QueryRow("SELECT @@gtid_binlog_pos").Scan(&c.gtid); err != nil {
			t.Fatal(err)
		}
		usecasetest.ExecAll(t, src.DB(), "FLUSH BINARY LOGS")
		run(t, append([]string{"binlog", "--repo", repo.Location}, sandboxConn(src)...)...).mustSucceed(t)
		files := usecasetest.ArchivedBinlogs(t, usecasetest.Repo{Location: repo.Location})
		if len(files) == 0 {
			t.Fatal("no binary log archived")
		}
		last := files[len(files)-1]
		for _, o := range repo.StreamObjectsUnder(t, "binlogs/"+last.Source+"/"+last.Name+"/streams/") {
			c.binlog = o
		}
		if c.binlog == "" {
			t.Fatalf("no stream object of the archived binary log %s", last.Name)
		}
		backend := filepath.Base(t.Name())
		for _, row := range damageRows {
			if !slices.Contains(row.backends, backend) {
				continue
			}
			t.Run(strings.ReplaceAll(row.name, " ", "_"), func(t *testing.T) {
				object := row.object(t, c)
				original := repo.Read(t, object)
				if row.flip {
					damaged := bytes.Clone(original)
					damaged[len(damaged)/2] ^= 0x20
					repo.Write(t, object, damaged)
				} else if err := repo.Backend.Delete(context.Background(), object); err != nil {
					t.Fatal(err)
				}
				defer repo.Write(t, object, original)
				named := base(object)
				if row.names != nil {
					named = row.names(object)
				}
				expect := func(what string, r result, ids ...string) {
					t.Helper()
					if r.code != row.code || r.err == nil {
						t.Errorf("%s: exit %d (%v); want %d", what, r.code, r.err, row.code)
						return
					}
					for _, want := range append(ids, named) {
						if !strings.Contains(r.err.Error(), want) {
							t.Errorf("%s: %v; want it to name %s", what, r.err, want)
						}
					}
				}
				listed := func(when string) {
					t.Helper()
					r := run(t, "list", "--repo", repo.Location).mustSucceed(t)
					if !rowOf(r.stdout, c.inc, "BROKEN") {
						t.Errorf("list %s does not mark %s BROKEN:\n%s", when, c.inc, r.stdout)
					}
					for _, e := range backupListing(t, repo.Location) {
						if e.ID == c.inc && e.Unrestorable == "" {
							t.Errorf("list --json %s: %s has no reason it cannot be restored", when, c.inc)
						}
					}
				}

				if row.catalog {
					expect("check before a verify", run(t, "check", "--repo", repo.Location), c.inc, c.full)
					listed("before a verify")
				}
				restoreArgs := []string{"restore", c.inc, "--repo", repo.Location, "--prepare", "--target-dir", filepath.Join(t.TempDir(), "target")}
				if row.restore != nil {
					restoreArgs = row.restore(c, filepath.Join(t.TempDir(), "target"))
				}
				if restoreArgs != nil && row.archive {
					expect("restore", run(t, restoreArgs...))
				} else if restoreArgs != nil {
					expect("restore", run(t, restoreArgs...), c.full)
				}
				verifyArgs := []string{"verify", c.inc, "--repo", repo.Location}
				if row.verify != nil {
					verifyArgs = row.verify(c)
				}
				if row.archive {
					expect("verify", run(t, verifyArgs...))
					// The archive's own check reads every archived object.
					expect("verify --binlogs", run(t, "verify", "--binlogs", "--repo", repo.Location))
				} else {
					expect("verify", run(t, verifyArgs...), c.inc, c.full)
					expect("check", run(t, "check", "--repo", repo.Location), c.inc, c.full)
					var rep health.Summary
					r := run(t, "check", "--repo", repo.Location, "--json")
					if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.OK || r.code != row.code {
						t.Errorf("check --json: exit %d, %v, ok %v", r.code, err, rep.OK)
					}
					listed("after a verify")
				}

				repo.Write(t, object, original)
				run(t, verifyArgs...).mustSucceed(t)
				run(t, "check", "--repo", repo.Location).mustSucceed(t)
				if r := run(t, "list", "--repo", repo.Location).mustSucceed(t); strings.Contains(r.stdout, "BROKEN") {
					t.Errorf("list once the object is back:\n%s", r.stdout)
				}
			})
		}
	})
}

// rowOf reports whether the line of a listing that starts with id holds
// word.
func rowOf(listing, id, word string) bool {
	for _, line := range strings.Split(listing, "\n") {
		if strings.HasPrefix(line, id) {
			return strings.Contains(line, word)
		}
	}
	return false
}
