package restorecase

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/importtable"
	"github.com/backstream/backstream/internal/logical"
	"github.com/backstream/backstream/internal/mask"
	"github.com/backstream/backstream/internal/pitr"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/serverup"
)

// Run restores as req asks, through the entry point of the mode it
// chooses (see Request), with the repository locked while it reads it.
// A refusal for what was asked is a *restore.RefusedError. A restore into
// place or an import returns its result also with an error of what
// followed the restore (the swap, the start, a later table).
func Run(ctx context.Context, req Request) (*Result, error) {
	m, err := req.mode()
	if err != nil {
		return nil, err
	}
	switch m {
	case pointInTime:
		return req.runPointInTime(ctx)
	case applying:
		return req.runApply(ctx)
	case importing:
		return req.runImport(ctx)
	}
	return req.runByName(ctx)
}

// runByName restores the backup named (or latest) through the engine its
// manifest chooses.
func (req *Request) runByName(ctx context.Context) (*Result, error) {
	r, err := req.Deferred.Open(ctx)
	if err != nil {
		return nil, err
	}
	m, ctx, release, err := r.ResolveLocked(ctx, req.Backup, req.Kind, req.Lock)
	if err != nil {
		return nil, err
	}
	defer release()
	eng, err := EngineFor(m)
	if err != nil {
		return nil, err
	}
	b, err := req.backupRequest(r, m)
	if err != nil {
		return nil, err
	}
	res, err := eng.Restore(ctx, b)
	var me *mask.Error
	var fe *logical.FilterError
	if errors.As(err, &me) || errors.As(err, &fe) {
		// A rule that cannot apply, a filter that selects nothing: what
		// was asked is wrong.
		err = refused(err)
	}
	return res, err
}

// backupRequest is the engine's request of backup m of r.
func (req *Request) backupRequest(r *repo.Repo, m *archive.Manifest) (BackupRequest, error) {
	b := BackupRequest{Repo: r, Backup: m, Progress: req.progress("restore "+m.ID, m.Stats.StoredBytes)}
	if err := req.checkKind(m); err != nil {
		return b, err
	}
	var err error
	if m.Kind == archive.KindLogical {
		b.Load, err = req.loadJob()
		return b, err
	}
	if req.Datadir != "" {
		if b.InPlace, err = req.place(); err != nil {
			return b, err
		}
	}
	b.Datadir, err = req.Restore.Job()
	return b, err
}

// loadJob is the job of a logical load as asked.
func (req *Request) loadJob() (logical.LoadJob, error) {
	cfg, err := req.Deferred.Conn()
	if err != nil {
		return logical.LoadJob{}, err
	}
	job, err := req.Load.Job()
	if err != nil {
		return job, err
	}
	if job.Mask, err = req.maskRules(); err != nil {
		return job, err
	}
	job.Conn, job.Parallel, job.Memory = cfg, req.Parallel, req.Memory
	return job, nil
}

// place is the engine's request of a restore into place, with --start the
// server to start there.
func (req *Request) place() (*Place, error) {
	sf, err := restore.ServerFiles(req.Start, req.Restore.ServerDefaults)
	if err != nil {
		return nil, err
	}
	pl := &Place{Dir: req.Datadir, Force: req.Force, ServerFiles: sf}
	if req.Start == "" {
		return pl, nil
	}
	cfg, err := req.Deferred.Conn()
	if err != nil {
		return nil, err
	}
	pl.Start = &serverup.Options{How: req.Start, Conn: cfg, Timeout: req.StartTimeout, CheckTimeout: req.CheckTimeout, Biggest: 5}
	return pl, pl.Start.Check()
}

// runPointInTime restores to a point in time: the backup is chosen, not
// named.
func (req *Request) runPointInTime(ctx context.Context) (*Result, error) {
	t, err := pitr.ParseTarget(req.Until, req.UntilGTID, req.Server, req.Base, req.Named)
	if err != nil {
		return nil, err
	}
	if req.Restore.TargetDir == "" {
		return nil, refusedf("--target-dir is required")
	}
	r, ctx, release, err := req.openLocked(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	job, err := req.Restore.Job()
	if err != nil {
		return nil, err
	}
	res, err := PointInTime(ctx, PointInTimeRequest{Repo: r, Target: t, Job: job, ServerDefaults: req.Restore.ServerDefaults,
		Progress: req.progress("restore --until "+t.String(), 0)})
	return &Result{PointInTime: res}, err
}

// runApply replays the archived binary logs onto a running server.
func (req *Request) runApply(ctx context.Context) (*Result, error) {
	t, err := pitr.ParseTarget(req.Until, req.UntilGTID, req.Server, req.Base, req.Named)
	if err != nil {
		return nil, err
	}
	if err := req.checkApply(); err != nil {
		return nil, err
	}
	conn, err := req.Deferred.Conn()
	if err != nil {
		return nil, err
	}
	r, ctx, release, err := req.openLocked(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	res, err := Apply(ctx, ApplyRequest{Repo: r, Target: t, Conn: conn, MariadbPath: req.MariadbPath, Memory: req.Memory, Log: req.Log})
	return &Result{Apply: res}, err
}

// runImport imports tables of a physical backup into a running server.
func (req *Request) runImport(ctx context.Context) (*Result, error) {
	if err := req.checkImport(); err != nil {
		return nil, err
	}
	tables, err := importtable.ParseTables(req.Load.Tables, req.As)
	if err != nil {
		return nil, err
	}
	conn, err := req.Deferred.Conn()
	if err != nil {
		return nil, err
	}
	r, err := req.Deferred.Open(ctx)
	if err != nil {
		return nil, err
	}
	m, ctx, release, err := r.ResolveLocked(ctx, req.Backup, archive.KindPhysical, req.Lock)
	if err != nil {
		return nil, err
	}
	defer release()
	job, err := req.Restore.Job() // with the key file's password
	if err != nil {
		return nil, err
	}
	title := "restore " + strings.Join(slices.Concat(req.Load.Tables, req.Load.Databases), ", ") + " of " + m.ID
	res, err := ImportTables(ctx, ImportRequest{Progress: req.progress(title, m.Stats.StoredBytes),
		Job: importtable.Job{Repo: r, Backup: m, Tables: tables, Databases: req.Load.Databases, Conn: conn,
			ServerDefaults: req.Restore.ServerDefaults, Restore: job.Options, NoBinlog: req.Load.NoBinlog}})
	return &Result{Import: res}, err
}

// openLocked opens the repository and takes req.Lock; release unlocks it.
func (req *Request) openLocked(ctx context.Context) (*repo.Repo, context.Context, func(), error) {
	r, err := req.Deferred.Open(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	lctx, release, err := r.Acquire(ctx, req.Lock)
	if err != nil {
		return nil, nil, nil, err
	}
	return r, lctx, release, nil
}

// progress starts the tracker titled title; nil without req's Tracker.
func (req *Request) progress(title string, total int64) Progress {
	if req.Deferred.Tracker == nil {
		return nil
	}
	return func() *progress.Tracker { return req.Deferred.Tracker(title, total) }
}
