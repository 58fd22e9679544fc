package health

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repo/repotest"
)

var db1 = archive.Server{Version: "10.11.6-MariaDB", Hostname: "db1", ServerID: 1}

// chain stores a full backup and two incrementals on it, a day apart,
// each finished an hour after it started.
func chain(t *testing.T, r *repo.Repo) (full, inc1, inc2 *archive.Manifest) {
	t.Helper()
	at := func(id string) time.Time {
		s, _ := time.Parse("20060102T150405Z", id[:16])
		return s.Add(time.Hour)
	}
	full = repotest.Store(t, r, repotest.Backup{ID: "20261127T010000Z-0001", Server: db1, Finished: at("20261127T010000Z"), Files: map[string]string{"f": "a"}})
	inc1 = repotest.Store(t, r, repotest.Backup{ID: "20261128T010000Z-0002", Parent: full, Finished: at("20261128T010000Z"), Files: map[string]string{"f.delta": "b"}})
	inc2 = repotest.Store(t, r, repotest.Backup{ID: "20261129T010000Z-0003", Parent: inc1, Finished: at("20261129T010000Z"), Files: map[string]string{"f.delta": "c"}})
	return full, inc1, inc2
}

func check(t *testing.T, r *repo.Repo, opt Options) Report {
	t.Helper()
	rep, err := Check(context.Background(), r, opt)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return rep
}

// wantProblem fails unless rep has exactly one problem, of kind, whose
// message holds every one of words, and whose error is damage or not as
// corrupt says.
func wantProblem(t *testing.T, rep Report, kind Kind, corrupt bool, words ...string) {
	t.Helper()
	if len(rep.Problems) != 1 {
		t.Fatalf("problems %v; want one of kind %s", rep.Err(), kind)
	}
	p := rep.Problems[0]
	msg := rep.Err().Error()
	if p.Kind != kind || archive.IsCorrupt(rep.Err()) != corrupt || strings.Contains(msg, "\n") {
		t.Errorf("problem %s: %q (damage: %v); want kind %s, damage %v, one line", p.Kind, msg, archive.IsCorrupt(rep.Err()), kind, corrupt)
	}
	for _, w := range words {
		if !strings.Contains(msg, w) {
			t.Errorf("%q does not say %q", msg, w)
		}
	}
}

func TestNewestBackupAge(t *testing.T) {
	t.Parallel()
	r := repotest.New(t)
	rep := check(t, r, Options{MaxAge: time.Hour, Now: time.Now()})
	wantProblem(t, rep, Stale, false, "no complete whole-server backup in "+r.Backend.Location())

	_, _, inc2 := chain(t, r)
	// An unfinished backup after it (running, or crashed) is no backup yet.
	if _, err := r.Backend.Put(context.Background(), repo.Dir("20261129T230000Z-0004")+"/"+repo.BegunName, strings.NewReader("{}")); err != nil {
		t.Fatal(err)
	}
	rep = check(t, r, Options{MaxAge: time.Hour, Now: inc2.Finished.Add(59 * time.Minute)})
	if rep.Err() != nil || rep.Newest == nil || rep.Newest.ID != inc2.ID || rep.Age != 59*time.Minute || rep.Backups != 3 || rep.Incrementals != 2 {
		t.Fatalf("an hour's backup checked a minute before it is too old: %v, %+v", rep.Err(), rep)
	}
	rep = check(t, r, Options{MaxAge: time.Hour, Now: inc2.Finished.Add(2*time.Hour + 30*time.Second)})
	wantProblem(t, rep, Stale, false, inc2.ID, "finished 2h1m ago", "2026-11-29T02:00:00Z", "more than the 1h allowed")
	// Without MaxAge the age is reported, not judged.
	if rep := check(t, r, Options{Now: inc2.Finished.Add(48 * time.Hour)}); rep.Err() != nil || rep.Age != 48*time.Hour {
		t.Errorf("without MaxAge: %v, age %s", rep.Err(), rep.Age)
	}
}

func TestBrokenChains(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("parent gone", func(t *testing.T) {
		t.Parallel()
		r := repotest.New(t)
		_, inc1, inc2 := chain(t, r)
		if err := r.Backend.Delete(ctx, repo.Dir(inc1.ID)+"/"+repo.ManifestName); err != nil {
			t.Fatal(err)
		}
		rep := check(t, r, Options{MaxAge: 24 * time.Hour, Now: inc2.Finished})
		wantProblem(t, rep, BrokenChain, false, "backup "+inc2.ID+" cannot be restored", "its parent "+inc1.ID+" is not a complete backup")
	})
	t.Run("parent damaged", func(t *testing.T) {
		t.Parallel()
		r := repotest.New(t)
		full, inc1, inc2 := chain(t, r)
		repotest.DamageManifest(t, r, full.ID)
		rep := check(t, r, Options{Now: inc2.Finished})
		// One problem: the damaged full is named by the chain it breaks.
		wantProblem(t, rep, BrokenChain, true, "backup "+inc1.ID+" cannot be restored (nor can the 1 backups built on it)",
			"broken at its parent "+full.ID, repo.Dir(full.ID)+"/"+repo.ManifestName+" is damaged")
	})
	t.Run("damaged manifest", func(t *testing.T) {
		t.Parallel()
		r := repotest.New(t)
		_, _, inc2 := chain(t, r)
		repotest.DamageManifest(t, r, inc2.ID)
		rep := check(t, r, Options{})
		wantProblem(t, rep, Damaged, true, repo.Dir(inc2.ID)+"/"+repo.ManifestName+" is damaged")
		if rep.Newest == nil || rep.Newest.ID == inc2.ID {
			t.Errorf("the newest complete backup is %v; the damaged one is not complete", rep.Newest)
		}
	})
}

// Check reads while a backup holds the repository's exclusive lock.
func TestCheckTakesNoLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := repotest.New(t)
	_, _, inc2 := chain(t, r)
	l, _, err := r.Lock(ctx, repo.LockOptions{Operation: repo.OpBackup, Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if rep := check(t, r, Options{MaxAge: time.Hour, Now: inc2.Finished}); rep.Err() != nil {
		t.Fatal(rep.Err())
	}
}

func TestBinlogLag(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	updated := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	opt := func(now time.Time) Options { return Options{MaxBinlogLag: time.Minute, Now: now} }

	r := repotest.New(t)
	wantProblem(t, check(t, r, opt(updated)), BinlogLag, false, "no archived binary logs in "+r.Backend.Location())

	repotest.StoreBinlog(t, r, db1, "db1-1", "mariadb-bin.000001")
	wantProblem(t, check(t, r, opt(updated)), BinlogLag, false, "binary logs of db1-1: no archiving status is recorded")

	// A follower caught up 10 s ago; then one 50 s behind at its last
	// status, 20 s ago: 70 s since the archive held everything.
	put := func(lag float64, following bool) {
		t.Helper()
		if err := r.PutBinlogStatus(ctx, repo.BinlogStatus{Source: "db1-1", Updated: updated, Following: following, LagSeconds: lag}); err != nil {
			t.Fatal(err)
		}
	}
	put(0, true)
	rep := check(t, r, opt(updated.Add(10*time.Second)))
	if rep.Err() != nil || len(rep.Sources) != 1 || rep.Sources[0].Lag != 10*time.Second || !rep.Sources[0].Following {
		t.Fatalf("a follower caught up 10s ago: %v, %+v", rep.Err(), rep.Sources)
	}
	put(50, true)
	wantProblem(t, check(t, r, opt(updated.Add(20*time.Second))), BinlogLag, false,
		"binary logs of db1-1: the archive last held all the server had written 1m10s ago (2026-11-30T11:59:10Z), more than the 1m allowed",
		"its archiving is following the server, its status was written 20s ago")
	// A follower that stopped: its last status ages.
	put(0, false)
	wantProblem(t, check(t, r, opt(updated.Add(time.Hour))), BinlogLag, false, "1h ago", "no archiving is running now")

	// A source another continues (a failover's old primary) is done: it
	// is not judged, its successor is.
	repotest.StoreBinlog(t, r, db1, "db2-2", "mariadb-bin.000009")
	if err := r.PutBinlogLink(ctx, repo.BinlogLink{Source: "db2-2", Continues: "db1-1", GTID: "0-1-10", File: "mariadb-bin.000009", Offset: 256, Recorded: updated}); err != nil {
		t.Fatal(err)
	}
	if err := r.PutBinlogStatus(ctx, repo.BinlogStatus{Source: "db2-2", Updated: updated.Add(time.Hour), Following: true}); err != nil {
		t.Fatal(err)
	}
	rep = check(t, r, opt(updated.Add(time.Hour+5*time.Second)))
	if rep.Err() != nil || len(rep.Sources) != 1 || rep.Sources[0].Source != "db2-2" {
		t.Errorf("after a failover: %v, %+v; want db2-2 alone judged", rep.Err(), rep.Sources)
	}
}

func TestRound(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		26 * time.Hour:                    "26h",
		90 * time.Minute:                  "1h30m",
		time.Hour + 29*time.Second:        "1h",
		42*time.Second + time.Millisecond: "42s",
		time.Minute:                       "1m",
		-3 * time.Second:                  "-3s",
		0:                                 "0s",
	} {
		if got := Round(d); got != want {
			t.Errorf("Round(%s) = %q, want %q", d, got, want)
		}
	}
}
