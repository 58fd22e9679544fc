// Package restorecase is the restore use case: each way to restore is a
// named entry point taking a typed request and returning a typed result.
// Run takes what restore was asked (Request), chooses the mode, refuses
// what does not go together (a *restore.RefusedError) before anything is
// opened, locks the repository and runs the mode's entry point. A backup
// named by the user restores through the engine its manifest chooses
// (EngineFor: physical into a datadir, Datadir or InPlace; logical into a
// running server, Load); a point in time (PointInTime) and a replay onto
// a running server (Apply) go through pitr, single tables (ImportTables)
// through importtable. Each result has its JSON form and writes its text
// (print.go). It composes those packages and restore; it reads no flag
// and knows no exit code (its refusals name the options as the user gives
// them): what it reads only when a mode needs it (the repository, the
// connection, option and key files) is handed in as functions (Deferred),
// but for the mask rules and their key file, which it reads itself from
// the request's plain fields; progress is a tracker made by one and
// finished here.
package restorecase

import (
	"context"
	"fmt"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/logical"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/serverup"
)

// BackupRequest restores one backup through the engine its kind chooses.
type BackupRequest struct {
	Repo   *repo.Repo
	Backup *archive.Manifest
	// Datadir is what a physical backup is written as (its target
	// directory and options; the links are chosen here). With InPlace
	// set, its TargetDir is ignored.
	Datadir restore.Job
	// InPlace, set, restores a physical backup into place instead.
	InPlace *Place
	// Load is how a logical backup loads (the connection, filters, ...).
	Load     logical.LoadJob
	Progress Progress // started when the work starts, finished here; nil for none
}

// Place says where a restore into place goes and what follows it.
type Place struct {
	Dir         string              // the datadir
	Force       bool                // move what it (and the places outside it) holds aside instead of refusing
	ServerFiles mariadb.ServerFiles // the places outside Dir the server keeps its state in
	// Start, set, starts the server on Dir once in place and checks it;
	// its Datadir is set here.
	Start *serverup.Options
}

// Result is what Restore (by the engine) or Run did: the field of its
// mode is set.
type Result struct {
	Datadir     *DatadirResult     // a physical backup into a directory
	InPlace     *InPlaceResult     // a physical backup into place
	Load        *LoadResult        // a logical backup loaded
	PointInTime *PointInTimeResult // a point in time restored
	Apply       *ApplyResult       // binary logs replayed onto a running server
	Import      *ImportResult      // tables imported into a running server
}

// Progress starts the tracker of a restore's progress: a restore refused
// before it writes (a datadir in place that holds files) shows none.
type Progress func() *progress.Tracker

func (p Progress) start() *progress.Tracker {
	if p == nil {
		return nil
	}
	return p()
}

// Engine restores backups of one kind (as vitess's restore engines do).
type Engine interface {
	// Kind is the kind of backup it restores (archive.KindPhysical, ...).
	Kind() string
	// Restore restores req.Backup, of that kind.
	Restore(ctx context.Context, req BackupRequest) (*Result, error)
}

// EngineFor is the one place the engine of a backup is chosen: from its
// manifest's kind.
func EngineFor(m *archive.Manifest) (Engine, error) {
	switch m.Kind {
	case archive.KindLogical:
		return logicalEngine{}, nil
	case archive.KindPhysical:
		return physicalEngine{}, nil
	}
	return nil, fmt.Errorf("backup %s is a %s backup: only physical and logical backups restore", m.ID, m.Kind)
}

// Restore restores req.Backup through the engine its manifest chooses;
// an engine first checks that the repository can read the backup.
func Restore(ctx context.Context, req BackupRequest) (*Result, error) {
	e, err := EngineFor(req.Backup)
	if err != nil {
		return nil, err
	}
	return e.Restore(ctx, req)
}

type physicalEngine struct{}

func (physicalEngine) Kind() string { return archive.KindPhysical }

func (physicalEngine) Restore(ctx context.Context, req BackupRequest) (*Result, error) {
	if err := req.Repo.CheckReadable(ctx, req.Backup); err != nil {
		return nil, err
	}
	// A restore from a repository, into a directory of the user's or
	// beside a datadir: interrupted, it keeps what it wrote for --resume.
	d := DatadirRequest{Repo: req.Repo, Backup: req.Backup, Job: req.Datadir, Progress: req.Progress}
	d.Job.KeepInterrupted = true
	if req.InPlace == nil {
		res, err := Datadir(ctx, d)
		return &Result{Datadir: res}, err
	}
	res, err := InPlace(ctx, InPlaceRequest{DatadirRequest: d, Place: *req.InPlace})
	return &Result{InPlace: res}, err
}

type logicalEngine struct{}

func (logicalEngine) Kind() string { return archive.KindLogical }

func (logicalEngine) Restore(ctx context.Context, req BackupRequest) (*Result, error) {
	if err := req.Repo.CheckReadable(ctx, req.Backup); err != nil {
		return nil, err
	}
	res, err := Load(ctx, LoadRequest{Repo: req.Repo, Backup: req.Backup, Job: req.Load, Progress: req.Progress})
	return &Result{Load: res}, err
}
