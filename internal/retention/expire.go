package retention

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/backupid"
	"github.com/backstream/backstream/internal/dedup"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/storage"
)

// Request is one expire: the policy, whether the leftovers of backups
// that never committed go too, and whether to delete or only plan.
type Request struct {
	Policy Policy
	// PruneIncomplete also removes backup directories without a manifest,
	// and the leftovers of unfinished writes anywhere under backups/
	// (repo.RemoveLeftovers).
	PruneIncomplete bool
	// Confirm deletes what the plan does not keep; without it Run only
	// plans.
	Confirm bool
	Now     time.Time
}

// Entry is the plan, and the outcome, for one backup or archived binary
// log file.
type Entry struct {
	ID       string    `json:"id"`             // a backup id, or source/file for a binary log
	Kind     string    `json:"kind,omitempty"` // archive.KindBinlog for an archived binary log file
	Started  time.Time `json:"started"`        // zero for a binary log file held only as segments (no manifest says)
	Complete bool      `json:"complete"`       // false for a backup without a manifest, or a binary log file held only as segments
	Size     int64     `json:"size"`
	Keep     bool      `json:"keep"`
	Reasons  []string  `json:"reasons,omitempty"` // why it is kept (for a binary log, also why not)
	Deleted  bool      `json:"deleted"`
	// Damaged says why the backup's manifest cannot be trusted; such a
	// backup is always kept (see keepDamaged).
	Damaged string `json:"damaged,omitempty"`
	// Leftovers counts, in the one entry of KindLeftovers, the leftovers
	// of unfinished writes removed (or, in a dry run, to remove).
	Leftovers *storage.Leftovers `json:"leftovers,omitempty"`
}

// KindLeftovers is the Kind of the entry that stands for the leftovers of
// unfinished writes under backups/ (temporary files, incomplete uploads):
// ID "backups/", Size what they take where the store says, Leftovers the
// counts. Run adds it only when there are some.
const KindLeftovers = "leftovers"

// KindBlocks is the Kind of the entry that stands for the blocks of a
// deduplicating repository's block store that no kept backup names any
// more, collected once the backups are deleted: ID "dedup/", Size what
// the packs deleted took where the store says. Run adds it only when it
// collected some.
const KindBlocks = "blocks"

// leftoversEntry is the plan entry of leftovers l.
func leftoversEntry(l storage.Leftovers, deleted bool) Entry {
	return Entry{ID: "backups/", Kind: KindLeftovers, Size: l.Bytes, Deleted: deleted,
		Reasons: []string{"left by writes that never finished: " + l.String()}, Leftovers: &l}
}

// Result is what Run planned, and what it did.
type Result struct {
	// Entries are the plan, with what was deleted marked: the complete
	// backups oldest first, the backups that never committed, those whose
	// manifest is damaged, with KeepPITR the archived binary log files,
	// and at most one entry of KindLeftovers. Their JSON is what expire
	// --json prints. Nil when Run failed before it had a plan.
	Entries []Entry
	// Request is what was planned; the text names its rules.
	Request Request
}

// Run plans the request over every backup of r, complete or not, and,
// with Confirm, deletes what the plan does not keep, in plan order: older
// first, each backup's manifest before its objects. It returns the plan
// with what was deleted marked. A failed deletion stops Run; the entries
// deleted before it are marked, and the error names the backup.
//
// The caller holds r's exclusive lock, so that no backup that could still
// commit runs meanwhile.
func Run(ctx context.Context, r *repo.Repo, req Request) (Result, error) {
	res := Result{Request: req}
	var err error
	if res.Entries, err = planAll(ctx, r, req); err != nil {
		return res, err
	}
	if !req.Confirm {
		return res, res.findLeftovers(ctx, r)
	}
	return res, res.carryOut(ctx, r)
}

// incompleteKept is why a backup that never committed is kept.
const incompleteKept = "incomplete (--prune-incomplete removes it)"

// planAll is the plan of req over every backup of r and, with KeepPITR,
// every archived binary log file.
func planAll(ctx context.Context, r *repo.Repo, req Request) ([]Entry, error) {
	entries, err := r.Scan(ctx)
	if err != nil {
		return nil, err
	}
	entries, damaged := splitDamaged(entries)
	var complete []*archive.Manifest
	sizes := map[string]int64{}
	for _, e := range entries {
		sizes[e.ID] = e.Size
		if e.Manifest != nil {
			complete = append(complete, e.Manifest)
		}
	}
	var plan []Decision
	if req.Policy.Empty() && req.PruneIncomplete {
		// Pruning alone: every complete backup stays.
		for _, m := range complete {
			plan = append(plan, Decision{Manifest: m, Keep: true, Reasons: []string{"no retention rule given"}})
		}
	} else if plan, err = Plan(complete, req.Now, req.Policy); err != nil {
		return nil, err
	}
	var out []Entry
	for _, d := range plan {
		out = append(out, Entry{ID: d.Manifest.ID, Started: d.Manifest.Started, Complete: true,
			Size: sizes[d.Manifest.ID], Keep: d.Keep, Reasons: d.Reasons})
	}
	for _, e := range entries {
		if e.Manifest != nil {
			continue
		}
		started, _ := backupid.Time(e.ID)
		i := Entry{ID: e.ID, Started: started, Size: e.Size, Keep: !req.PruneIncomplete}
		if i.Keep {
			i.Reasons = []string{incompleteKept}
		}
		out = append(out, i)
	}
	out = append(out, damaged...)
	if req.Policy.KeepPITR == 0 {
		return out, nil
	}
	var kept []*archive.Manifest
	for _, d := range plan {
		if d.Keep {
			kept = append(kept, d.Manifest)
		}
	}
	binlogs, err := planBinlogs(ctx, r, kept)
	if err != nil {
		return nil, err
	}
	return append(out, binlogs...), nil
}

// planBinlogs is the plan of the archived binary log files of r, whole or
// held only as segments, when the backups kept are kept: a file whose
// manifest is damaged is kept.
func planBinlogs(ctx context.Context, r *repo.Repo, kept []*archive.Manifest) ([]Entry, error) {
	files, err := r.Binlogs(ctx)
	if err != nil {
		return nil, err
	}
	var out []Entry
	var whole []*archive.Manifest
	for _, f := range files {
		if f.Damage == nil {
			whole = append(whole, f.Manifest)
			continue
		}
		out = append(out, Entry{ID: f.Source + "/" + f.Name, Kind: archive.KindBinlog, Size: f.Size, Keep: true,
			Reasons: []string{keepDamaged}, Damaged: f.Damage.Error()})
	}
	links, err := r.BinlogLinks(ctx)
	if err != nil {
		return nil, err
	}
	for _, d := range PlanBinlogs(kept, links, whole) {
		b := d.Manifest.Binlog
		out = append(out, Entry{ID: b.Source + "/" + b.Name, Kind: archive.KindBinlog, Started: b.FirstTime, Complete: true,
			Size: d.Manifest.Stats.StoredBytes, Keep: d.Keep, Reasons: []string{d.Reason}})
	}
	segmented, err := segmentOnly(ctx, r, files)
	if err != nil {
		return nil, err
	}
	for _, d := range PlanSegments(kept, links, segmented) {
		f := d.File
		out = append(out, Entry{ID: f.Source + "/" + f.Name, Kind: archive.KindBinlog, Size: f.Size, Keep: d.Keep,
			Reasons: []string{fmt.Sprintf("held only as %d segments, never archived whole", f.Segments), d.Reason}})
	}
	return out, nil
}

// findLeftovers adds to a dry run's plan, with PruneIncomplete, what
// writes that never finished left under backups/ beside the backups the
// plan prunes.
func (res *Result) findLeftovers(ctx context.Context, r *repo.Repo) error {
	if !res.Request.PruneIncomplete {
		return nil
	}
	var pruned []string
	for _, e := range res.Entries {
		if e.Kind == "" && !e.Complete && !e.Keep && e.Damaged == "" {
			pruned = append(pruned, e.ID)
		}
	}
	left, err := r.RemoveLeftovers(ctx, pruned, true)
	if err != nil {
		return fmt.Errorf("expire: %w", err)
	}
	if left.Count() > 0 {
		res.Entries = append(res.Entries, leftoversEntry(left, false))
	}
	return nil
}

// carryOut deletes what the plan does not keep and, with PruneIncomplete,
// what unfinished writes left; the leftovers removed, if any, are added
// to the plan, also when a removal failed.
func (res *Result) carryOut(ctx context.Context, r *repo.Repo) error {
	left, err := res.remove(ctx, r)
	if err == nil && res.Request.PruneIncomplete {
		// What is left now belongs to no backup the plan removed: a
		// directory that holds only temporary files, a complete backup's
		// uploads, anything an S3 server lists under backups/.
		var l storage.Leftovers
		l, err = r.RemoveLeftovers(ctx, nil, false)
		left = left.Add(l)
	}
	if left.Count() > 0 {
		res.Entries = append(res.Entries, leftoversEntry(left, true))
	}
	if err == nil && r.Dedup() {
		var c dedup.Collected
		c, err = r.CollectBlocks(ctx)
		if c.Packs > 0 || c.DroppedEntries > 0 {
			res.Entries = append(res.Entries, Entry{ID: "dedup/", Kind: KindBlocks, Size: c.Bytes, Deleted: true,
				Reasons: []string{fmt.Sprintf("blocks no kept backup names: %d packs deleted, %d packs kept with %d blocks", c.Packs, c.KeptPacks, c.LiveBlocks)}})
		}
	}
	if err != nil {
		return fmt.Errorf("expire: %w", err)
	}
	return nil
}

// remove deletes every entry the plan does not keep, in order, marking
// each deleted; it stops at the first that fails. It returns the
// leftovers of unfinished writes removed with the backups.
func (res *Result) remove(ctx context.Context, r *repo.Repo) (storage.Leftovers, error) {
	var left storage.Leftovers
	for i := range res.Entries {
		e := &res.Entries[i]
		if e.Keep {
			continue
		}
		var err error
		if e.Kind == archive.KindBinlog {
			// also a file held only as segments: its directory goes whole
			src, name, _ := strings.Cut(e.ID, "/")
			err = r.RemoveBinlog(ctx, src, name)
		} else {
			var l storage.Leftovers
			l, err = r.RemoveCounted(ctx, e.ID)
			left = left.Add(l)
		}
		if err != nil {
			return left, err
		}
		e.Deleted = true
	}
	return left, nil
}

// segmentOnly finds the binary log files of r held only as segments: those
// of files, the archived files' entries (damaged ones included), are not.
func segmentOnly(ctx context.Context, r *repo.Repo, files []repo.BinlogEntry) ([]SegmentFile, error) {
	whole := map[string]bool{}
	for _, f := range files {
		whole[f.Source+"/"+f.Name] = true
	}
	segs, err := r.BinlogSegments(ctx, "") // every source's, sorted by source and file
	if err != nil {
		return nil, err
	}
	var out []SegmentFile
	for _, s := range segs {
		if whole[s.Source+"/"+s.Name] {
			continue // stale segments beside a manifest go with the file, or with the next binlog run
		}
		if n := len(out); n == 0 || out[n-1].Source != s.Source || out[n-1].Name != s.Name {
			out = append(out, SegmentFile{Source: s.Source, Name: s.Name})
		}
		out[len(out)-1].Segments++
		out[len(out)-1].Size += s.Size
	}
	return out, nil
}

// keepDamaged is why expire keeps a backup, or an archived binary log
// file, whose manifest is damaged: its kind, time and chain (or position)
// are unknown, so no rule can be applied to it, and its stream objects
// may still be whole.
const keepDamaged = "damaged manifest: kept, no rule applies to it"

// splitDamaged takes the backups whose manifest is damaged out of
// entries, as plan entries that are kept; they take no part in the plan
// of the others, and are neither complete nor incomplete.
func splitDamaged(entries []repo.Entry) (rest []repo.Entry, damaged []Entry) {
	for _, e := range entries {
		if e.Damage == nil {
			rest = append(rest, e)
			continue
		}
		started, _ := backupid.Time(e.ID)
		damaged = append(damaged, Entry{ID: e.ID, Started: started, Size: e.Size, Keep: true,
			Reasons: []string{keepDamaged}, Damaged: e.Damage.Error()})
	}
	return rest, damaged
}
