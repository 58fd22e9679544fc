// Package health decides whether a repository is as a schedule of backups
// should keep it: its newest complete whole-server backup young enough,
// every backup restorable as far as its catalog shows (no manifest
// damaged, no object missing, no damage the last verify recorded) and so
// every chain of incrementals whole, a backup proven restorable by a
// restore test recently enough, and each server's archived binary log
// close behind the server. It only reads the repository's catalog
// (manifests, the listing of objects, verdicts, binary log status
// objects), writes nothing and takes no lock, so it runs beside a backup
// that holds one. It writes its verdict as check prints it, a line of
// text or a JSON object; it knows nothing of flags or exit codes.
package health

import (
	"context"
	"fmt"
	"maps"
	"slices"
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
	// MaxRestoreTestAge, when above 0, is how long ago a backup may have
	// last passed a restore test (verify --restore-test, as its verdict
	// records); a repository where none passed fails it.
	MaxRestoreTestAge time.Duration
	// Kind, when set (archive.KindPhysical or KindLogical), limits the
	// newest backup MaxAge judges, and the restore tests
	// MaxRestoreTestAge counts, to backups of that kind; unset, they are
	// those repo.NewestWhole names. A partial logical backup counts for
	// neither.
	Kind string
	// Now is the time to judge at; zero means the clock's.
	Now time.Time
}

// Kind sorts problems.
type Kind string

// The kinds of problem Check finds.
const (
	Stale       Kind = "stale"        // no complete backup, or the newest is too old
	BrokenChain Kind = "broken-chain" // an incremental's parent is missing or damaged
	Damaged     Kind = "damaged"      // a manifest cannot be trusted, an object is missing, or verify found damage
	BinlogLag   Kind = "binlog-lag"   // an archive is too far behind its server, or its lag is unknown
	Untested    Kind = "untested"     // no backup passed a restore test recently enough
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
	// Options are what the report was judged by.
	Options Options
	// Newest is the newest complete whole-server backup of the kind
	// asked (nil if there is none, see Options.Kind) and Age how long
	// before Now it finished.
	Newest *archive.Manifest
	Age    time.Duration
	// RestoreTested is the backup that last passed a restore test (nil
	// if none did), at RestoreTestAt.
	RestoreTested *archive.Manifest
	RestoreTestAt time.Time
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
	rep := Report{Location: r.Backend.Location(), Now: now, Options: opt}
	entries, err := r.Scan(ctx)
	if err != nil {
		return rep, err
	}
	verdicts, err := Verdicts(ctx, r, entries)
	if err != nil {
		return rep, err
	}
	var ms []*archive.Manifest
	for _, e := range entries {
		if m := e.Manifest; m != nil {
			ms = append(ms, m)
			rep.Backups++
			if m.Parent != "" {
				rep.Incrementals++
			}
		}
	}
	rep.judgeAge(ms)
	rep.judgeDamage(entries, verdicts)
	if err := r.StoreDamage(ctx); archive.IsCorrupt(err) {
		rep.Problems = append(rep.Problems, Problem{Kind: Damaged, Err: err})
	} else if err != nil {
		return rep, err
	}
	rep.judgeRestoreTests(ms, verdicts)
	if opt.MaxBinlogLag > 0 {
		if err := checkBinlogs(ctx, r, ms, opt.MaxBinlogLag, &rep); err != nil {
			return rep, err
		}
	} else if err := checkBinlogBreaks(ctx, r, &rep); err != nil {
		return rep, err
	}
	return rep, nil
}

// judgeAge finds the newest of the complete backups ms that counts, and
// adds a problem when there is none or it is too old (with MaxAge).
func (rep *Report) judgeAge(ms []*archive.Manifest) {
	opt := rep.Options
	rep.Newest = repo.NewestWhole(ms, opt.Kind)
	if rep.Newest != nil {
		rep.Age = rep.Now.Sub(rep.Newest.Finished)
	}
	if opt.MaxAge <= 0 {
		return
	}
	switch {
	case rep.Newest == nil:
		rep.Problems = append(rep.Problems, Problem{Kind: Stale, Err: fmt.Errorf("no complete whole-server %sbackup in %s%s", kindWord(opt.Kind), rep.Location, partialNote(ms, opt.Kind))})
	case rep.Age > opt.MaxAge:
		m := rep.Newest
		rep.Problems = append(rep.Problems, Problem{Kind: Stale, Backup: m.ID,
			Err: fmt.Errorf("the newest complete %sbackup, %s, finished %s ago (%s): more than the %s allowed",
				kindWord(opt.Kind), m.ID, Round(rep.Age), m.Finished.UTC().Format(time.RFC3339), Round(opt.MaxAge))})
	}
}

// judgeDamage adds a problem for each backup of entries that cannot be
// given back by itself (objects its manifest names are missing, or the
// last verify of it found damage), for each broken chain, and for each
// damaged manifest no broken chain names.
func (rep *Report) judgeDamage(entries []repo.Entry, verdicts map[string]repo.Verdict) {
	byID := map[string]repo.Entry{}
	children := map[string][]string{}
	own := map[string]error{}
	for _, e := range entries {
		byID[e.ID] = e
		if m := e.Manifest; m != nil && m.Parent != "" {
			children[m.Parent] = append(children[m.Parent], m.ID)
		}
		if err := ownDamage(e, verdicts[e.ID]); err != nil {
			own[e.ID] = err
			rep.Problems = append(rep.Problems, Problem{Kind: Damaged, Backup: e.ID, Err: err})
		}
	}
	// A chain is broken where an incremental's parent is not a complete
	// backup that can be restored: gone (deleted, or never complete),
	// damaged, or missing objects. It is reported once, at the
	// incremental on the broken link: every backup built on that
	// incremental is lost with it.
	named := map[string]bool{}
	for _, e := range entries {
		m := e.Manifest
		if m == nil || m.Parent == "" {
			continue
		}
		p, ok := byID[m.Parent]
		if ok && p.Manifest != nil && own[p.ID] == nil {
			continue
		}
		if ok && p.Damage != nil {
			named[p.ID] = true
		}
		lost := ""
		if n := descendants(children, m.ID); n > 0 {
			lost = fmt.Sprintf(" (nor can the %d backups built on it)", n)
		}
		rep.Problems = append(rep.Problems, Problem{Kind: BrokenChain, Backup: m.ID, Err: chainError(m, byID, own, rep.Location, lost)})
	}
	for _, e := range entries {
		if e.Damage != nil && !named[e.ID] {
			rep.Problems = append(rep.Problems, Problem{Kind: Damaged, Backup: e.ID, Err: e.Damage})
		}
	}
}

// judgeRestoreTests finds the backup of ms that last passed a restore
// test, and adds a problem when none did recently enough (with
// MaxRestoreTestAge).
func (rep *Report) judgeRestoreTests(ms []*archive.Manifest, verdicts map[string]repo.Verdict) {
	opt := rep.Options
	for _, m := range ms {
		v := verdicts[m.ID].RestoreTest
		if v != nil && v.OK && (opt.Kind == "" || m.Kind == opt.Kind) && m.WholeServer() && v.At.After(rep.RestoreTestAt) {
			rep.RestoreTested, rep.RestoreTestAt = m, v.At
		}
	}
	if opt.MaxRestoreTestAge <= 0 {
		return
	}
	loc, now := rep.Location, rep.Now
	switch {
	case rep.RestoreTested == nil:
		rep.Problems = append(rep.Problems, Problem{Kind: Untested,
			Err: fmt.Errorf("no whole-server %sbackup in %s has passed a restore test (verify --restore-test): none is proven restorable", kindWord(opt.Kind), loc)})
	case now.Sub(rep.RestoreTestAt) > opt.MaxRestoreTestAge:
		rep.Problems = append(rep.Problems, Problem{Kind: Untested, Backup: rep.RestoreTested.ID,
			Err: fmt.Errorf("no backup has been proven restorable for %s: the last restore test passed, on backup %s, %s ago (%s), more than the %s allowed",
				Round(now.Sub(rep.RestoreTestAt)), rep.RestoreTested.ID, Round(now.Sub(rep.RestoreTestAt)), rep.RestoreTestAt.UTC().Format(time.RFC3339), Round(opt.MaxRestoreTestAge))})
	}
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
	for _, v := range views {
		for _, b := range v.Breaks {
			rep.Problems = append(rep.Problems, Problem{Kind: Damaged, Source: v.Source, Err: b.Damage()})
		}
	}
	return nil
}

// checkBinlogBreaks adds a problem for each break of a source's archive
// (a missing file, or a lost newest part): without --max-binlog-lag too,
// since a window that cannot be restored is never OK.
func checkBinlogBreaks(ctx context.Context, r *repo.Repo, rep *Report) error {
	files, err := r.Binlogs(ctx)
	if err != nil {
		return err
	}
	segs, err := r.BinlogSegments(ctx, "")
	if err != nil {
		return err
	}
	breaks, err := binlog.Breaks(ctx, r, files, segs)
	if err != nil {
		return err
	}
	for _, src := range slices.Sorted(maps.Keys(breaks)) {
		for _, b := range breaks[src] {
			rep.Problems = append(rep.Problems, Problem{Kind: Damaged, Source: src, Err: b.Damage()})
		}
	}
	return nil
}

// Verdicts reads the verdict of every complete backup of entries that has
// one (repo.Entry.Verdict), by id.
func Verdicts(ctx context.Context, r *repo.Repo, entries []repo.Entry) (map[string]repo.Verdict, error) {
	out := map[string]repo.Verdict{}
	for _, e := range entries {
		if e.Manifest == nil || !e.Verdict {
			continue
		}
		v, err := r.ReadVerdict(ctx, e.ID)
		if err != nil {
			return nil, err
		}
		out[e.ID] = v
	}
	return out, nil
}

// ownDamage is why complete backup e cannot be restored by itself, as
// the catalog shows and its verdict records: objects its manifest names
// are missing, or the last verify of it found damage; nil if neither.
func ownDamage(e repo.Entry, v repo.Verdict) error {
	if e.Manifest == nil {
		return nil
	}
	if err := e.MissingError(); err != nil {
		return err
	}
	if c := v.Checksums; c != nil && !c.OK {
		return archive.Corruptf("backup %s: the last verify, at %s, found damage: %s", e.ID, c.At.UTC().Format(time.RFC3339), c.Error)
	}
	return nil
}

// Unrestorable says, for each complete backup of entries (of the
// repository at location loc) that a restore could not give back as far
// as the catalog and the verdicts show, why: its own damage (see Check)
// or a link of its chain missing or damaged. archive.IsCorrupt holds for
// each reason but a missing link.
func Unrestorable(loc string, entries []repo.Entry, verdicts map[string]repo.Verdict) map[string]error {
	byID := map[string]repo.Entry{}
	own := map[string]error{}
	for _, e := range entries {
		byID[e.ID] = e
		if err := ownDamage(e, verdicts[e.ID]); err != nil {
			own[e.ID] = err
		}
	}
	out := map[string]error{}
	for _, e := range entries {
		if e.Manifest == nil {
			continue
		}
		if err := own[e.ID]; err != nil {
			out[e.ID] = err
		} else if err := chainError(e.Manifest, byID, own, loc, ""); err != nil {
			out[e.ID] = err
		}
	}
	return out
}

// chainError is why backup m cannot be restored for its chain: the first
// link from its parent down that is not a complete backup, whose
// manifest is damaged, or that has damage of its own (own); nil when the
// chain is whole. lost goes after "cannot be restored".
func chainError(m *archive.Manifest, byID map[string]repo.Entry, own map[string]error, loc, lost string) error {
	seen := map[string]bool{m.ID: true}
	for child, p := m, m.Parent; p != ""; {
		at := "its parent " + p
		if child != m {
			at = p + ", the parent of " + child.ID
		}
		link, ok := byID[p]
		switch {
		case seen[p]:
			return archive.Corruptf("backup %s cannot be restored%s: its chain loops back to %s", m.ID, lost, p)
		case ok && link.Damage != nil:
			return archive.Corruptf("backup %s cannot be restored%s: its chain is broken at %s, whose manifest is damaged: %v", m.ID, lost, at, link.Damage)
		case !ok || link.Manifest == nil:
			return fmt.Errorf("backup %s cannot be restored%s: its chain is broken: %s is not a complete backup in %s", m.ID, lost, at, loc)
		case own[p] != nil:
			return archive.Corruptf("backup %s cannot be restored%s: its chain is broken at %s: %v", m.ID, lost, at, own[p])
		}
		seen[p] = true
		child, p = link.Manifest, link.Manifest.Parent
	}
	return nil
}

// kindWord is kind as a word before "backup" ("" for any kind).
func kindWord(kind string) string {
	if kind == "" {
		return ""
	}
	return kind + " "
}

// partialNote says how many partial backups of kind ms holds, which a
// whole-server check does not count.
func partialNote(ms []*archive.Manifest, kind string) string {
	n := 0
	for _, m := range ms {
		if !m.WholeServer() && (kind == "" || m.Kind == kind) {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (its %d partial logical backups, of some databases or tables, do not count)", n)
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
