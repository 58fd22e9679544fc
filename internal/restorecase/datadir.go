package restorecase

import (
	"context"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/serverup"
)

// DatadirRequest restores a physical backup (its chain) into a new
// directory, Job.TargetDir.
type DatadirRequest struct {
	Repo     *repo.Repo
	Backup   *archive.Manifest
	Job      restore.Job // the target and how to write it; Links are chosen here
	Progress Progress    // started when the work starts, finished here; nil for none
}

// DatadirResult is a physical backup restored into a directory.
type DatadirResult struct {
	Backup    *archive.Manifest
	Chain     []string // the backups written, base first (Backup last)
	Target    string
	Prepared  bool
	ReadBytes int64 // stored bytes read from the repository (0 without a tracker)
	Elapsed   time.Duration
}

// Datadir restores req.Backup with its chain into req.Job.TargetDir
// (see restore.Datadir: a failed restore leaves the target empty).
func Datadir(ctx context.Context, req DatadirRequest) (*DatadirResult, error) {
	start := time.Now()
	job := req.Job
	var err error
	if job.Links, err = restore.Links(ctx, req.Repo, req.Backup); err != nil {
		return nil, err
	}
	t := req.Progress.start()
	if t != nil {
		t.SetBackup(req.Backup.ID)
		job.Progress = t
	}
	err = restore.Datadir(ctx, job)
	res := &DatadirResult{Backup: req.Backup, Chain: linkIDs(job.Links), Target: job.TargetDir, Prepared: job.Prepare, Elapsed: time.Since(start)}
	if t != nil {
		sum := t.Finish(err)
		res.ReadBytes, res.Elapsed = sum.BytesIn, sum.Elapsed
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

func linkIDs(links []restore.Link) []string {
	ids := make([]string, len(links))
	for i, l := range links {
		ids[i] = l.Manifest.ID
	}
	return ids
}

// InPlaceRequest restores a physical backup into place: written and
// prepared beside (or inside) Place.Dir, then swapped in.
type InPlaceRequest struct {
	DatadirRequest // Job.TargetDir is chosen here; prepare is implied
	Place          Place
}

// InPlaceResult is a physical backup restored into place: the restore
// (Target is the datadir), what was moved aside, the server started.
type InPlaceResult struct {
	DatadirResult
	Placed
	Swapped bool // the restore is in place
}

// InPlace restores req.Backup into req.Place.Dir (see restore.Place): a
// datadir that holds anything is refused (a *restore.RefusedError)
// unless Force. Once the restore is written, its result is returned also
// with an error of the swap or the start.
func InPlace(ctx context.Context, req InPlaceRequest) (*InPlaceResult, error) {
	place, err := restore.PlaceFor(req.Place.Dir, req.Place.Force, req.Place.ServerFiles)
	if err != nil {
		return nil, err
	}
	// A datadir in place is prepared: a server runs on it.
	req.Job.TargetDir, req.Job.Prepare = place.Staging, true
	restored, err := Datadir(ctx, req.DatadirRequest)
	if err != nil {
		return nil, err
	}
	restored.Target = place.Dir
	res := &InPlaceResult{DatadirResult: *restored}
	var start *serverup.Options
	if req.Place.Start != nil {
		o := *req.Place.Start
		start = &o
	}
	did, swapped, err := SwapAndStart(ctx, place, start, restored.Backup.Server.Version)
	res.Placed, res.Swapped = did, swapped
	return res, err
}

// Placed is what SwapAndStart did: where what the datadir held went, what
// moved outside it, and the server started on it.
type Placed struct {
	Replaced string           `json:"replaced,omitempty"` // where what the datadir held was moved aside
	Outside  []restore.Aside  `json:"outside,omitempty"`  // what moved aside from, and was placed in, the places outside it
	Started  *serverup.Report `json:"started,omitempty"`  // the server started there, checked
}

// SwapAndStart swaps a restored datadir into place and, with start (its
// Datadir and DatadirVersion are set here: datadirVersion is the
// backup's server version), starts the server there and checks it.
// swapped says whether the datadir is in place; what was done is returned
// also with an error.
func SwapAndStart(ctx context.Context, place *restore.Place, start *serverup.Options, datadirVersion string) (did Placed, swapped bool, err error) {
	sw, err := place.Swap()
	did = Placed{Replaced: sw.Replaced, Outside: sw.Outside}
	if err != nil || start == nil {
		return did, err == nil, err
	}
	o := *start
	o.Datadir, o.DatadirVersion = place.Dir, datadirVersion
	did.Started, err = serverup.Start(ctx, o)
	return did, true, err
}
