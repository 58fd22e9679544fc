package backup_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/fidelitytest"
	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// The fidelity corpus (internal/fidelitytest/corpus, issue 21): every
// fixture, adapted from MariaDB's own tests and from bug reports against
// dump tools, goes through every backup path into a fresh server, and the
// restored database's fingerprint (every object's definition, every value
// of every row rendered by type, CHECKSUM TABLE) must equal the source's.
// Logical paths run with both servers strict and both permissive; a
// fixture that names an object to refuse must make the backup fail,
// naming it. The fixtures share servers (one source per mode and path,
// one database each) so that the corpus costs a few backups, not one per
// fixture.
func TestFidelityCorpus(t *testing.T) {
	t.Parallel()
	fixtures, err := fidelitytest.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"permissive", "strict"} {
		t.Run("logical-"+mode, func(t *testing.T) {
			t.Parallel()
			corpusLogical(t, fixtures, mode)
		})
	}
	t.Run("physical", func(t *testing.T) {
		t.Parallel()
		corpusPhysical(t, fixtures)
	})
	for _, f := range fixtures {
		if f.Refuse == "" {
			continue
		}
		t.Run("refuse-"+f.Name, func(t *testing.T) {
			t.Parallel()
			corpusRefusal(t, f)
		})
	}
}

// corpusLogical: plain and encrypted logical backups, restored into a
// server of the same sql_mode.
func corpusLogical(t *testing.T, fixtures []*fidelitytest.Fixture, mode string) {
	src, loaded, want := usecasetest.CorpusSource(t, fixtures, mode, func(f *fidelitytest.Fixture) bool {
		return f.Refuse == "" && f.Takes(fidelitytest.Logical, mode)
	})
	pub, key := usecasetest.AgeKeys(t)
	for _, c := range []struct {
		name         string
		backup, load repoaccess.KeyFiles // --recipient-file with --encrypt, --identity-file
	}{
		{"plain", repoaccess.KeyFiles{}, repoaccess.KeyFiles{}},
		{"encrypted", repoaccess.KeyFiles{RecipientFile: pub}, repoaccess.KeyFiles{IdentityFile: key}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := usecasetest.NewLocalRepo(t)
			req := usecasetest.CorpusDump(t, r, src, loaded)
			if c.backup.RecipientFile != "" {
				req = usecasetest.Encrypted(t, r, req, c.backup)
			}
			usecasetest.Backup(t, req)
			dst := sandboxtest.Start(t, sandbox.Options{Args: append(usecasetest.CorpusServerArgs(mode), fidelitytest.TargetArgs...)})
			load := usecasetest.LoadOf(r, "", dst)
			load.Deferred.Open = r.AccessWith(c.load).Open
			usecasetest.Restore(t, load)
			usecasetest.CompareCorpus(t, dst, loaded, want)
		})
	}
}

// corpusPhysical: a full backup restored with --prepare, and a chain (a
// full taken with half the fixtures, an incremental after the rest).
func corpusPhysical(t *testing.T, fixtures []*fidelitytest.Fixture) {
	ctx := context.Background()
	takes := func(f *fidelitytest.Fixture) bool {
		return f.Refuse == "" && slices.Contains(f.Paths, fidelitytest.Physical)
	}
	src, loaded, want := usecasetest.CorpusSource(t, fixtures, "permissive", takes)
	t.Run("full", func(t *testing.T) {
		// DML and InnoDB DDL run on another database of the source while
		// the backup is taken: a restore replayed from the backup's
		// recorded position to the end of the binary log must equal the
		// source, fixtures and churn alike, through backstream's restore
		// and through the stock tools (cat | mbstream -x, then
		// mariabackup --prepare).
		rounds, stop := startChurn(t, src)
		for deadline := time.Now().Add(time.Minute); rounds() == 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the writes never started")
			}
		}
		before := rounds()
		r := usecasetest.NewLocalRepo(t)
		made := usecasetest.Backup(t, usecasetest.BackupOf(t, r, src)).Manifest
		if rounds() == before {
			t.Fatal("no write ran while the backup was taken: the test would prove nothing")
		}
		stop()
		wantChurn := usecasetest.TableState(t, src.DB(), churnDB)
		entries := usecasetest.List(t, r)
		if len(entries) != 1 || entries[0].ID != made.ID {
			t.Fatalf("list shows %+v, want the one backup %s", entries, made.ID)
		}
		pos := entries[0].Positions
		restored := filepath.Join(t.TempDir(), "datadir")
		req := usecasetest.RestoreOf(r, "")
		req.Restore.TargetDir, req.Restore.Options.Prepare = restored, true
		usecasetest.Restore(t, req)
		stock := t.TempDir()
		usecasetest.CatExtract(t, r, "latest", stock)
		if out, err := exec.Command("mariabackup", "--prepare", "--target-dir="+stock).CombinedOutput(); err != nil {
			t.Fatalf("mariabackup --prepare of cat | mbstream -x: %v\n%s", err, out)
		}
		for _, c := range []struct{ name, datadir string }{{"restore --prepare", restored}, {"cat | mbstream -x, mariabackup --prepare", stock}} {
			srv := usecasetest.ServerOn(t, c.datadir)
			usecasetest.ReplayBinlog(t, src, srv, pos.BinlogFile, pos.BinlogPosition)
			usecasetest.CompareCorpus(t, srv, loaded, want)
			if got := usecasetest.TableState(t, srv.DB(), churnDB); got != wantChurn {
				t.Errorf("%s, replayed from %s:%d: the database written during the backup differs:\nrestored: %s\n  source: %s", c.name, pos.BinlogFile, pos.BinlogPosition, got, wantChurn)
			}
		}
	})
	t.Run("incremental", func(t *testing.T) {
		// A second source, of the same sql_mode as the first (routines,
		// triggers, views and events record the mode they were created
		// under): the full backup holds the first half.
		chain := sandboxtest.Start(t, sandbox.Options{Args: usecasetest.CorpusServerArgs("permissive")})
		half := len(loaded) / 2
		for _, f := range loaded[:half] {
			if err := f.Load(ctx, chain.Socket, "root"); err != nil {
				t.Fatal(err)
			}
		}
		r := usecasetest.NewLocalRepo(t)
		full := usecasetest.Backup(t, usecasetest.BackupOf(t, r, chain)).Manifest
		for _, f := range loaded[half:] {
			if err := f.Load(ctx, chain.Socket, "root"); err != nil {
				t.Fatal(err)
			}
		}
		// backup --incremental: what it says when it takes a full backup
		// instead would make the chain a single full.
		req := usecasetest.BackupOf(t, r, chain)
		req.Physical.Incremental = &backup.Incremental{FullBecause: func(why string) { t.Errorf("taking a full backup: %s", why) }}
		if inc := usecasetest.Backup(t, req).Manifest; inc.Parent != full.ID {
			t.Errorf("the incremental backup %s has parent %q, want the full %s", inc.ID, inc.Parent, full.ID)
		}
		// The chain's own fingerprints: system-versioned rows carry the
		// time they were loaded at, which differs from the first source's.
		chainWant := usecasetest.CorpusFingerprints(t, chain, loaded)
		target := filepath.Join(t.TempDir(), "datadir")
		restore := usecasetest.RestoreOf(r, "")
		restore.Restore.TargetDir, restore.Restore.Options.Prepare = target, true
		usecasetest.Restore(t, restore)
		usecasetest.CompareCorpus(t, usecasetest.ServerOn(t, target), loaded, chainWant)
	})
}

// corpusRefusal: the backup of a fixture that names an object to refuse
// fails, naming it, and commits nothing.
func corpusRefusal(t *testing.T, f *fidelitytest.Fixture) {
	ctx := context.Background()
	for _, path := range f.Paths {
		src := sandboxtest.Start(t, sandbox.Options{})
		if err := f.Load(ctx, src.Socket, "root"); err != nil {
			t.Fatal(err)
		}
		r := usecasetest.NewLocalRepo(t)
		// backup --database f.Database, with --logical on that path.
		var req backup.Request
		if path == fidelitytest.Logical {
			req = usecasetest.CorpusDump(t, r, src, []*fidelitytest.Fixture{f})
		} else {
			req = usecasetest.BackupOf(t, r, src)
			req.Given.Dump = "database"
		}
		if _, err := backup.Run(ctx, req); err == nil || !strings.Contains(err.Error(), f.Refuse) {
			t.Errorf("fixture %s (%s), %s backup: %v; want a refusal naming %s", f.Name, f.Source, path, err, f.Refuse)
		}
		if entries := usecasetest.List(t, r); len(entries) != 0 {
			t.Errorf("fixture %s, %s backup: %d backups committed after a refusal", f.Name, path, len(entries))
		}
	}
}

// churnDB is the database startChurn writes to.
const churnDB = "fx_churn"

// startChurn writes to database churnDB of src until stop is called:
// inserts, updates and deletes on InnoDB, MyISAM and Aria tables, and
// InnoDB DDL (mariabackup follows InnoDB DDL in the redo log; DDL on the
// other engines makes a backup refuse, see
// TestPhysicalBackupRacingNonTransactionalDDL). rounds says how many
// rounds of writes have run; stop fails the test if a write failed.
func startChurn(t *testing.T, src *sandbox.Server) (rounds func() int64, stop func()) {
	t.Helper()
	db := src.DB()
	for _, q := range []string{
		"CREATE DATABASE " + churnDB,
		"CREATE TABLE " + churnDB + ".inno (id INT PRIMARY KEY, v VARCHAR(64)) ENGINE=InnoDB",
		"CREATE TABLE " + churnDB + ".my (id INT PRIMARY KEY, v VARCHAR(64)) ENGINE=MyISAM",
		"CREATE TABLE " + churnDB + ".ar (id INT PRIMARY KEY, v VARCHAR(64)) ENGINE=Aria",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var done atomic.Bool
	var n atomic.Int64
	failed := make(chan error, 1)
	go func() {
		defer close(failed)
		for i := int64(1); !done.Load(); i++ {
			for _, q := range []string{
				fmt.Sprintf("INSERT INTO %s.inno VALUES (%d, MD5(%d))", churnDB, i, i),
				fmt.Sprintf("INSERT INTO %s.my VALUES (%d, MD5(%d))", churnDB, i, i),
				fmt.Sprintf("INSERT INTO %s.ar VALUES (%d, MD5(%d))", churnDB, i, i),
				fmt.Sprintf("UPDATE %s.inno SET v = MD5(v) WHERE id = %d", churnDB, i/2),
				fmt.Sprintf("DELETE FROM %s.my WHERE id = %d", churnDB, i/3),
				fmt.Sprintf("CREATE TABLE %s.t%d (id INT PRIMARY KEY) ENGINE=InnoDB", churnDB, i),
				fmt.Sprintf("ALTER TABLE %s.t%d ADD COLUMN c INT", churnDB, i),
				fmt.Sprintf("DROP TABLE IF EXISTS %s.t%d", churnDB, i-1),
			} {
				if _, err := db.Exec(q); err != nil {
					failed <- fmt.Errorf("%s: %w", q, err)
					return
				}
			}
			n.Store(i)
		}
	}()
	return n.Load, func() {
		done.Store(true)
		if err := <-failed; err != nil {
			t.Fatalf("a write during the backup failed: %v", err)
		}
	}
}
