// Package retention decides which backups and archived binary logs a
// retention policy keeps, carries out the plan on a repository, and
// writes the plan as expire prints it: the use case behind expire. It
// knows backups by their manifests and the repository by its API; of
// flags it knows only the names its plan tells people to give, and
// nothing of exit codes.
package retention

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/binlog"
	"github.com/backstream/backstream/internal/repo"
)

// Policy says which backups to keep. A backup is kept if any rule keeps it;
// the zero Policy keeps nothing and is refused by Plan.
type Policy struct {
	KeepLast    int           // the newest N backups
	KeepWithin  time.Duration // backups started within this long before now
	KeepDaily   int           // the newest backup of each of the last N UTC days that have one
	KeepWeekly  int           // the newest backup of each of the last N ISO weeks (UTC) that have one
	KeepMonthly int           // the newest backup of each of the last N calendar months (UTC) that have one
	KeepYearly  int           // the newest backup of each of the last N years (UTC) that have one
	// KeepPITR keeps what a point-in-time restore to any moment of this
	// window needs: of each server, the newest physical backup finished
	// before its start (with its chain) and the archived binary logs from
	// that backup's position on. Without it binary logs are never deleted.
	KeepPITR time.Duration
	// Kind, when set (archive.KindPhysical or KindLogical), limits the
	// rules to backups of that kind: the others are all kept.
	Kind string
}

// Empty reports whether no rule is set.
func (p Policy) Empty() bool {
	return p.KeepLast == 0 && p.KeepWithin == 0 && p.KeepDaily == 0 && p.KeepWeekly == 0 && p.KeepMonthly == 0 && p.KeepYearly == 0 && p.KeepPITR == 0
}

// Decision is the plan for one backup.
type Decision struct {
	Manifest *archive.Manifest
	Keep     bool
	Reasons  []string // why it is kept; empty when it is deleted
}

// Plan decides for every complete backup whether policy p keeps it at
// time now; the result lists them oldest first. A backup's time is its
// start (the time in its id). The counting rules apply to each kind of
// backup apart (keep-last 7 keeps the newest 7 physical backups and the
// newest 7 logical ones), so that frequent dumps of one database never
// push the physical chain out; the newest backup of each kind is always
// kept, and a backup that a kept backup names as its parent is kept with
// it (the hook for incremental backups). At least one rule must be set.
func Plan(ms []*archive.Manifest, now time.Time, p Policy) ([]Decision, error) {
	if p.Empty() {
		return nil, errors.New("no retention rule given")
	}
	if p.KeepLast < 0 || p.KeepDaily < 0 || p.KeepWeekly < 0 || p.KeepMonthly < 0 || p.KeepYearly < 0 || p.KeepWithin < 0 {
		return nil, fmt.Errorf("retention counts and durations must not be negative (%+v)", p)
	}
	sorted := append([]*archive.Manifest(nil), ms...)
	slices.SortStableFunc(sorted, archive.CompareFinished)
	out := make([]Decision, len(sorted))
	for i, m := range sorted {
		out[i].Manifest = m
	}
	keep := func(i int, reason string) {
		out[i].Keep = true
		out[i].Reasons = append(out[i].Reasons, reason)
	}
	if len(out) == 0 {
		return out, nil
	}
	// The indexes of out by kind, oldest first.
	byKind := map[string][]int{}
	var kinds []string
	for i, d := range out {
		k := d.Manifest.Kind
		if p.Kind != "" && k != p.Kind {
			keep(i, "a "+k+" backup (the rules are for "+p.Kind+" backups)")
			continue
		}
		if byKind[k] == nil {
			kinds = append(kinds, k)
		}
		byKind[k] = append(byKind[k], i)
	}
	for _, kind := range kinds {
		planKind(out, byKind[kind], now, p, keep)
	}
	// Parents of kept backups stay, transitively: an incremental is
	// useless without its chain.
	index := map[string]int{}
	for i, d := range out {
		index[d.Manifest.ID] = i
	}
	for changed := true; changed; {
		changed = false
		for _, d := range out {
			if !d.Keep || d.Manifest.Parent == "" {
				continue
			}
			if j, ok := index[d.Manifest.Parent]; ok && !out[j].Keep {
				keep(j, "parent of "+d.Manifest.ID)
				changed = true
			}
		}
	}
	return out, nil
}

// planKind applies the rules of p to the backups of one kind, out[idx[0]]
// (the oldest) to out[idx[len(idx)-1]] (the newest), through keep.
func planKind(out []Decision, idx []int, now time.Time, p Policy, keep func(i int, reason string)) {
	n := len(idx)
	// Newest first from here on.
	for k := 0; k < n; k++ {
		i := idx[n-1-k]
		if k < p.KeepLast {
			keep(i, fmt.Sprintf("keep-last %d", p.KeepLast))
		}
		if p.KeepWithin > 0 && now.Sub(out[i].Manifest.Started) <= p.KeepWithin {
			keep(i, "within "+FormatDuration(p.KeepWithin))
		}
	}
	periods := func(count int, label string, key func(time.Time) string) {
		seen := map[string]bool{}
		for j := n - 1; j >= 0 && len(seen) < count; j-- {
			i := idx[j]
			k := key(out[i].Manifest.Started.UTC())
			if seen[k] {
				continue
			}
			seen[k] = true
			keep(i, label+" "+k)
		}
	}
	periods(p.KeepDaily, "daily", func(t time.Time) string { return t.Format("2006-01-02") })
	periods(p.KeepWeekly, "weekly", func(t time.Time) string {
		y, w := t.ISOWeek()
		return fmt.Sprintf("%04d-W%02d", y, w)
	})
	periods(p.KeepMonthly, "monthly", func(t time.Time) string { return t.Format("2006-01") })
	periods(p.KeepYearly, "yearly", func(t time.Time) string { return t.Format("2006") })
	if p.KeepPITR > 0 {
		// Per server: a point-in-time restore replays one server's binary
		// logs from one of its own backups, so another server's newer
		// backup is no base for it.
		edge := now.Add(-p.KeepPITR)
		based := map[string]bool{}
		for j := n - 1; j >= 0; j-- {
			i := idx[j]
			m := out[i].Manifest
			src := binlog.SourceKey(m.Server.Hostname, m.Server.ServerID)
			if m.Kind == archive.KindPhysical && m.Positions.BinlogFile != "" && !m.Finished.After(edge) && !based[src] {
				keep(i, "base of the keep-pitr "+FormatDuration(p.KeepPITR)+" window of "+src)
				based[src] = true
			}
		}
	}
	if i := idx[n-1]; !out[i].Keep {
		keep(i, strings.TrimSpace("newest "+out[i].Manifest.Kind))
	}
}

// FormatDuration shows a duration the way options.ParseSpan reads it, in
// whole days or hours where it can.
func FormatDuration(d time.Duration) string {
	switch day := 24 * time.Hour; {
	case d%(7*day) == 0:
		return fmt.Sprintf("%dw", d/(7*day))
	case d%day == 0:
		return fmt.Sprintf("%dd", d/day)
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return d.String()
}

// BinlogDecision is the plan for one archived binary log file.
type BinlogDecision struct {
	Manifest *archive.Manifest
	Keep     bool
	Reason   string
}

// PlanBinlogs decides which archived binary log files the kept backups
// still need: of each server, every file from the position of its oldest
// kept physical backup on; of a server that continues another's archive
// after a failover (links), every file from the link's on as well, if the
// other's backups are kept, since a restore from them goes on into it.
// Files before serve no restore that the kept backups can start; files
// of a server with no kept backup (and none by a link) are all kept
// (nothing says what they are for).
func PlanBinlogs(kept []*archive.Manifest, links []repo.BinlogLink, files []*archive.Manifest) []BinlogDecision {
	oldest := oldestKept(kept, links)
	out := make([]BinlogDecision, 0, len(files))
	for _, f := range files {
		keep, reason := planFile(oldest, f.Binlog.Source, f.Binlog.Name)
		out = append(out, BinlogDecision{Manifest: f, Keep: keep, Reason: reason})
	}
	return out
}

// SegmentFile is a binary log file archived only as segments: the server
// was writing it when archiving stopped, and no run archived it whole
// afterwards (the server crashed, or purged it first).
type SegmentFile struct {
	Source, Name string
	Segments     int
	Size         int64 // bytes stored
}

// SegmentDecision is the plan for one SegmentFile.
type SegmentDecision struct {
	File   SegmentFile
	Keep   bool
	Reason string
}

// PlanSegments applies PlanBinlogs' rule to files held only as segments:
// a restore replays them like whole files (the newest file of a server is
// usually one), so those before the oldest kept backup's position serve
// no restore either.
func PlanSegments(kept []*archive.Manifest, links []repo.BinlogLink, files []SegmentFile) []SegmentDecision {
	oldest := oldestKept(kept, links)
	out := make([]SegmentDecision, 0, len(files))
	for _, f := range files {
		keep, reason := planFile(oldest, f.Source, f.Name)
		out = append(out, SegmentDecision{File: f, Keep: keep, Reason: reason})
	}
	return out
}

// oldestKept maps each server, by its directory under binlogs/, to the
// first binary log file a kept backup needs: its oldest kept physical
// backup's, or, for a server continuing another (links, in chains too),
// the link's file when that is older and the other server's files are
// needed.
func oldestKept(kept []*archive.Manifest, links []repo.BinlogLink) map[string]firstNeeded {
	oldest := map[string]firstNeeded{}
	for _, m := range kept {
		if m.Kind != archive.KindPhysical || m.Positions.BinlogFile == "" {
			continue
		}
		src := binlog.SourceKey(m.Server.Hostname, m.Server.ServerID)
		if f, ok := oldest[src]; !ok || m.Positions.BinlogFile < f.file {
			oldest[src] = firstNeeded{file: m.Positions.BinlogFile}
		}
	}
	for changed := true; changed; {
		changed = false
		for _, l := range links {
			if _, ok := oldest[l.Continues]; !ok {
				continue
			}
			if f, ok := oldest[l.Source]; !ok || l.File < f.file {
				oldest[l.Source], changed = firstNeeded{file: l.File, continues: l.Continues}, true
			}
		}
	}
	return oldest
}

// firstNeeded is the first file of a server that kept backups need: of
// its own oldest kept backup, or where it continues another server whose
// kept backups roll forward into it.
type firstNeeded struct{ file, continues string }

// planFile is the rule for archived file name of source.
func planFile(oldest map[string]firstNeeded, source, name string) (keep bool, reason string) {
	first, ok := oldest[source]
	switch {
	case !ok:
		return true, "no kept backup of its server"
	case first.continues != "" && name < first.file:
		return false, "before where it continues " + first.continues + " (" + first.file + ")"
	case first.continues != "":
		return true, "needed from where it continues " + first.continues + " (" + first.file + "), whose kept backups roll forward into it"
	case name < first.file:
		return false, "before the oldest kept backup's position (" + first.file + ")"
	}
	return true, "needed from the oldest kept backup (" + first.file + ") on"
}
