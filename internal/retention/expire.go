package retention

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/backupid"
	"github.com/backstream/backstream/internal/repo"
)

// Request is one expire: the policy, whether the leftovers of backups
// that never committed go too, and whether to delete or only plan.
type Request struct {
	Policy Policy
	// PruneIncomplete also removes backup directories without a manifest.
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
	Started  time.Time `json:"started"`
	Complete bool      `json:"complete"`
	Size     int64     `json:"size"`
	Keep     bool      `json:"keep"`
	Reasons  []string  `json:"reasons,omitempty"` // why it is kept (for a binary log, also why not)
	Deleted  bool      `json:"deleted"`
	// Damaged says why the backup's manifest cannot be trusted; such a
	// backup is always kept (see keepDamaged).
	Damaged string `json:"damaged,omitempty"`
}

// Run plans the request over every backup of r, complete or not, and,
// with Confirm, deletes what the plan does not keep, in plan order: older
// first, each backup's manifest before its objects. It returns the plan
// with what was deleted marked. A failed deletion stops Run; the entries
// deleted before it are marked, and the error names the backup.
//
// The caller holds r's exclusive lock, so that no backup that could still
// commit runs meanwhile.
func Run(ctx context.Context, r *repo.Repo, req Request) ([]Entry, error) {
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
		out = append(out, Entry{ID: e.ID, Started: started, Size: e.Size, Keep: !req.PruneIncomplete})
	}
	out = append(out, damaged...)
	if req.Policy.KeepPITR > 0 {
		var kept []*archive.Manifest
		for _, d := range plan {
			if d.Keep {
				kept = append(kept, d.Manifest)
			}
		}
		files, err := r.Binlogs(ctx)
		if err != nil {
			return nil, err
		}
		for _, d := range PlanBinlogs(kept, files) {
			b := d.Manifest.Binlog
			out = append(out, Entry{ID: b.Source + "/" + b.Name, Kind: archive.KindBinlog, Started: b.FirstTime, Complete: true,
				Size: d.Manifest.Stats.StoredBytes, Keep: d.Keep, Reasons: []string{d.Reason}})
		}
	}
	if !req.Confirm {
		return out, nil
	}
	for i := range out {
		if out[i].Keep {
			continue
		}
		var err error
		if out[i].Kind == archive.KindBinlog {
			src, name, _ := strings.Cut(out[i].ID, "/")
			err = r.RemoveBinlog(ctx, src, name)
		} else {
			err = r.Remove(ctx, out[i].ID)
		}
		if err != nil {
			return out, fmt.Errorf("expire: %w", err)
		}
		out[i].Deleted = true
	}
	return out, nil
}

// keepDamaged is why expire keeps a backup whose manifest is damaged:
// its kind, time and chain are unknown, so no rule can be applied to it,
// and its stream objects may still be whole.
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
