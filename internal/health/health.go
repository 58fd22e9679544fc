// Package health decides whether a repository is as a schedule of backups
// should keep it: its newest complete backup young enough, every chain of
// incrementals whole, no manifest damaged, and each server's archived
// binary log close behind the server. It only reads the repository's
// catalog (manifests, binary log status objects), writes nothing and
// takes no lock, so it runs beside a backup that holds one. It knows
// nothing of flags, exit codes or how its verdict is printed.
package health

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/binlog"
	"github.com/backstream/backstream/internal/repo"
)

// Options say what to check.
type Options struct {
	// MaxAge, when above 0, is how long ago the newest complete backup
	// may have finished; a repository without one fails it.
	MaxAge time.Duration
	// MaxBinlogLag, when above 0, is how far behind its server each
	// source's archived binary log may be; a repository without any
	// fails it.
	MaxBinlogLag time.Duration
	// Now is the time to judge at; zero means the clock's.
	Now time.Time
}

// Kind sorts problems.
type Kind string

// The kinds of problem Check finds.
const (
	Stale       Kind = "stale"        // no complete backup, or the newest is too old
	BrokenChain Kind = "broken-chain" // an incremental's parent is missing or damaged
	Damaged     Kind = "damaged"      // a manifest is stored but cannot be trusted
	BinlogLag   Kind = "binlog-lag"   // an archive is too far behind its server, or its lag is unknown
)

// Problem is one thing wrong with the repository.
type Problem struct {
	Kind Kind
	// Backup is the backup it names, Source the binary log source.
	Backup, Source string
	// Err says what is wrong, in one line; archive.IsCorrupt holds for
	// damage (a damaged manifest, a chain broken at one).
	Err error
}

// Source is what Check found of one server's archived binary log.
type Source struct {
	Source string
	// CompleteAt is when the archive last held all the server had
	// written, as its last status says; Lag is how long before Now.
	CompleteAt time.Time
	Lag        time.Duration
	// Following is true while binlog --follow keeps the status fresh.
	Following bool
}

// Report is Check's verdict.
type Report struct {
	Location string
	Now      time.Time
	// Newest is the newest complete backup (nil if there is none) and
	// Age how long before Now it finished.
	Newest *archive.Manifest
	Age    time.Duration
	// Backups counts the complete backups, Incrementals those of them
	// that build on a parent.
	Backups, Incrementals int
	// Sources are the binary log archives checked (with MaxBinlogLag).
	Sources  []Source
	Problems []Problem
}

// Err is nil when the report found no problem, else one error whose
// message is every problem's on one line; archive.IsCorrupt holds for it
// when any problem is damage.
func (r Report) Err() error {
	if len(r.Problems) == 0 {
		return nil
	}
	return unhealthy(r.Problems)
}

// unhealthy is the problems of a report as one error.
type unhealthy []Problem

func (u unhealthy) Error() string {
	msgs := make([]string, len(u))
	for i, p := range u {
		msgs[i] = strings.ReplaceAll(p.Err.Error(), "\n", " ")
	}
	return strings.Join(msgs, "; ")
}

func (u unhealthy) Unwrap() []error {
	errs := make([]error, len(u))
	for i, p := range u {
		errs[i] = p.Err
	}
	return errs
}

// Check reads the catalog of r and judges it as opt says. Chains and
// damaged manifests are always checked; the newest backup's age and the
// binary logs' lag only when opt asks. An error means the repository
// could not be read, not that it is unhealthy (see Report.Problems).
func Check(ctx context.Context, r *repo.Repo, opt Options) (Report, error) {
	now := opt.Now
	if now.IsZero() {
		now = time.Now()
	}
	loc := r.Backend.Location()
	rep := Report{Location: loc, Now: now}
	entries, err := r.Scan(ctx)
	if err != nil {
		return rep, err
	}
	byID := map[string]repo.Entry{}
	children := map[string][]string{}
	var ms []*archive.Manifest
	for _, e := range entries {
		byID[e.ID] = e
		if m := e.Manifest; m != nil {
			ms = append(ms, m)
			rep.Backups++
			if m.Parent != "" {
				rep.Incrementals++
				children[m.Parent] = append(children[m.Parent], m.ID)
			}
		}
	}
	// Scan orders backups by when they became complete: the last complete
	// one is the newest.
	if len(ms) > 0 {
		rep.Newest = ms[len(ms)-1]
		rep.Age = now.Sub(rep.Newest.Finished)
	}
	if opt.MaxAge > 0 {
		switch {
		case rep.Newest == nil:
			rep.Problems = append(rep.Problems, Problem{Kind: Stale, Err: fmt.Errorf("no complete backup in %s", loc)})
		case rep.Age > opt.MaxAge:
			m := rep.Newest
			rep.Problems = append(rep.Problems, Problem{Kind: Stale, Backup: m.ID,
				Err: fmt.Errorf("the newest complete backup, %s, finished %s ago (%s): more than the %s allowed",
					m.ID, Round(rep.Age), m.Finished.UTC().Format(time.RFC3339), Round(opt.MaxAge))})
		}
	}

	// A chain is broken where an incremental's parent is not a complete
	// backup: gone (deleted, or never complete), or damaged. Every backup
	// built on that incremental is lost with it.
	named := map[string]bool{}
	for _, m := range ms {
		if m.Parent == "" {
			continue
		}
		p, ok := byID[m.Parent]
		if ok && p.Manifest != nil {
			continue
		}
		lost := ""
		if n := descendants(children, m.ID); n > 0 {
			lost = fmt.Sprintf(" (nor can the %d backups built on it)", n)
		}
		if ok && p.Damage != nil {
			named[p.ID] = true
			rep.Problems = append(rep.Problems, Problem{Kind: BrokenChain, Backup: m.ID,
				Err: archive.Corruptf("backup %s cannot be restored%s: its chain is broken at its parent %s, whose manifest is damaged: %v", m.ID, lost, p.ID, p.Damage)})
			continue
		}
		rep.Problems = append(rep.Problems, Problem{Kind: BrokenChain, Backup: m.ID,
			Err: fmt.Errorf("backup %s cannot be restored%s: its chain is broken: its parent %s is not a complete backup in %s", m.ID, lost, m.Parent, loc)})
	}
	for _, e := range entries {
		if e.Damage != nil && !named[e.ID] {
			rep.Problems = append(rep.Problems, Problem{Kind: Damaged, Backup: e.ID, Err: e.Damage})
		}
	}

	if opt.MaxBinlogLag > 0 {
		if err := checkBinlogs(ctx, r, ms, opt.MaxBinlogLag, &rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// checkBinlogs adds the lag of each source's archive to rep, and a
// problem for each archive further behind than max, whose lag is unknown,
// or whose file manifests are damaged. A source whose archive another
// continues (a primary replaced after a failover) has stopped for good
// and is not judged.
func checkBinlogs(ctx context.Context, r *repo.Repo, ms []*archive.Manifest, max time.Duration, rep *Report) error {
	files, err := r.Binlogs(ctx)
	if err != nil {
		return err
	}
	views, err := binlog.Overviews(ctx, r, ms, files)
	if err != nil {
		return err
	}
	if len(views) == 0 {
		rep.Problems = append(rep.Problems, Problem{Kind: BinlogLag, Err: fmt.Errorf("no archived binary logs in %s", rep.Location)})
		return nil
	}
	continued := map[string]bool{}
	for _, v := range views {
		if v.Continues != nil {
			continued[v.Continues.Continues] = true
		}
	}
	for _, v := range views {
		if continued[v.Source] {
			continue
		}
		st := v.Status
		if st == nil {
			rep.Problems = append(rep.Problems, Problem{Kind: BinlogLag, Source: v.Source,
				Err: fmt.Errorf("binary logs of %s: no archiving status is recorded, so how far the archive is behind is unknown", v.Source)})
			continue
		}
		// The status says the archive had not held everything for
		// LagSeconds when it was written; since then nothing is known.
		s := Source{Source: v.Source, CompleteAt: st.Updated.Add(-time.Duration(st.LagSeconds * float64(time.Second))), Following: st.Following}
		s.Lag = rep.Now.Sub(s.CompleteAt)
		rep.Sources = append(rep.Sources, s)
		if s.Lag <= max {
			continue
		}
		why := "its archiving is following the server"
		if !st.Following {
			why = "no archiving is running now"
		}
		rep.Problems = append(rep.Problems, Problem{Kind: BinlogLag, Source: v.Source,
			Err: fmt.Errorf("binary logs of %s: the archive last held all the server had written %s ago (%s), more than the %s allowed; %s, its status was written %s ago",
				v.Source, Round(s.Lag), s.CompleteAt.UTC().Format(time.RFC3339), Round(max), why, Round(rep.Now.Sub(st.Updated)))})
	}
	for _, f := range files {
		if f.Damage != nil {
			rep.Problems = append(rep.Problems, Problem{Kind: Damaged, Source: f.Source, Err: f.Damage})
		}
	}
	return nil
}

// descendants counts the backups that build on id, directly or not.
func descendants(children map[string][]string, id string) int {
	n := 0
	for _, c := range children[id] {
		n += 1 + descendants(children, c)
	}
	return n
}

// Round shortens d for a message: whole minutes from an hour on, whole
// seconds below, and no trailing zero units ("26h", "1h30m", "42s").
func Round(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	if d >= time.Hour {
		d = d.Round(time.Minute)
	} else {
		d = d.Round(time.Second)
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	if neg {
		s = "-" + s
	}
	return s
}
