package restorecase

import (
	"context"
	"io"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/importtable"
	"github.com/backstream/backstream/internal/logical"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/pitr"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/toolpath"
)

// LoadRequest loads a logical backup into the running server Job.Conn
// names.
type LoadRequest struct {
	Repo     *repo.Repo
	Backup   *archive.Manifest
	Job      logical.LoadJob
	Progress Progress // started when the work starts, finished here; nil for none
}

// LoadResult is a logical backup loaded.
type LoadResult struct {
	Backup *archive.Manifest
	Users  bool // accounts were asked for (LoadJob.Users)
	logical.LoadResult
}

// Load loads req.Backup (see restore.Load). The target server is named
// through the tracker before anything changes.
func Load(ctx context.Context, req LoadRequest) (*LoadResult, error) {
	job := req.Job
	t := req.Progress.start()
	if t != nil {
		t.SetBackup(req.Backup.ID)
		job.Progress = t
		job.OnTarget = func(tg logical.Target) {
			// With the progress (above a bar, a log event in JSON), so
			// that stdout stays the result.
			t.Logf("restore %s: loading into %s", req.Backup.ID, tg)
		}
	}
	res, err := restore.Load(ctx, req.Repo, req.Backup, job)
	if t != nil {
		t.Finish(err)
	}
	if err != nil {
		return nil, err
	}
	return &LoadResult{Backup: req.Backup, Users: job.Users, LoadResult: *res}, nil
}

// PointInTimeRequest restores into Job.TargetDir the newest backup
// before Target and replays the archived binary logs up to it.
type PointInTimeRequest struct {
	Repo           *repo.Repo
	Target         pitr.Target
	Job            restore.Job
	ServerDefaults string   // an option file the replaying server reads after the backup's options; "" for none
	Progress       Progress // started when the work starts, finished here; nil for none
}

// PointInTimeResult is a point-in-time restore done.
type PointInTimeResult struct {
	pitr.Result
	Target  string // the directory restored into
	Elapsed time.Duration
}

// PointInTime restores to a point in time (see pitr.Run): the backup is
// chosen, not named.
func PointInTime(ctx context.Context, req PointInTimeRequest) (*PointInTimeResult, error) {
	start := time.Now()
	job := req.Job
	t := req.Progress.start()
	if t != nil {
		job.Progress = t
	}
	res, err := pitr.Run(ctx, req.Repo, req.Target, job, req.ServerDefaults)
	elapsed := time.Since(start)
	if t != nil {
		elapsed = t.Finish(err).Elapsed
	}
	if err != nil {
		return nil, err
	}
	return &PointInTimeResult{Result: *res, Target: job.TargetDir, Elapsed: elapsed}, nil
}

// ApplyRequest replays the archived binary logs onto the running server
// Conn names, from the position it has reached up to Target.
type ApplyRequest struct {
	Repo        *repo.Repo
	Target      pitr.Target
	Conn        mariadb.Config
	MariadbPath toolpath.Path   // searched before PATH for mariadb-binlog
	Memory      *archive.Memory // the budget of what reading the binary logs holds at once (nil: archive.DefaultMemory)
	Log         io.Writer       // mariadb-binlog's and the client's messages; nil for none
}

// ApplyResult is what Apply did.
type ApplyResult struct {
	pitr.Applied
	Conn   mariadb.Config // the server applied onto
	Target pitr.Target
}

// Nothing says that no transaction was applied: the server had them all.
func (r *ApplyResult) Nothing() bool {
	return len(r.Binlogs) == 0 || r.To.String() == r.From.String()
}

// Apply replays onto a running server (see pitr.Apply).
func Apply(ctx context.Context, req ApplyRequest) (*ApplyResult, error) {
	res, err := pitr.Apply(ctx, req.Repo, req.Target, req.Conn, req.MariadbPath, req.Memory, req.Log)
	if err != nil {
		return nil, err
	}
	return &ApplyResult{Applied: *res, Conn: req.Conn, Target: req.Target}, nil
}

// ImportRequest imports single InnoDB tables of a physical backup into a
// running server on this host.
type ImportRequest struct {
	importtable.Job
	Progress Progress // started when the work starts, finished here; nil for none
}

// ImportResult is what ImportTables imported.
type ImportResult struct {
	Backup   *archive.Manifest
	Conn     mariadb.Config // the server imported into
	Imported []importtable.Imported
}

// ImportTables imports the tables (see importtable.Run), after checking
// that the repository can read the backup. The tables imported are
// returned also with an error.
func ImportTables(ctx context.Context, req ImportRequest) (*ImportResult, error) {
	if err := req.Repo.CheckReadable(ctx, req.Backup); err != nil {
		return nil, err
	}
	job := req.Job
	t := req.Progress.start()
	if t != nil {
		t.SetBackup(job.Backup.ID)
		job.Restore.Progress = t
	}
	imported, err := importtable.Run(ctx, job)
	if t != nil {
		t.Finish(err)
	}
	return &ImportResult{Backup: job.Backup, Conn: job.Conn, Imported: imported}, err
}
