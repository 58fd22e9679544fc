package restoretest

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/verify"
)

// Request is a restore test as verify --restore-test runs it: the Job,
// but its Progress, which is started here.
type Request struct {
	Job
	// Progress starts the tracker once the backup is known to be
	// readable; it is finished here.
	Progress func() *progress.Tracker
	// NotRecorded is told when the verdict could not be stored in the
	// repository (it may be read-only to this account); nil ignores it.
	NotRecorded func(error)
}

// Prove runs the restore test of req (see Run) after checking that the
// repository can read the backup, and records its verdict in the
// repository, so that check can tell when a backup was last proven
// restorable. A report that did not pass is returned without an error:
// its Failure is the error.
func Prove(ctx context.Context, req Request) (*Report, error) {
	job := req.Job
	if job.Backup != nil {
		if err := job.Repo.CheckReadable(ctx, job.Backup); err != nil {
			return nil, err
		}
	}
	if job.FileKey == "" { // from ServerDefaults or the environment
		var err error
		if job.FileKey, err = physical.UserFileKey(job.ServerDefaults); err != nil {
			return nil, err
		}
	}
	job.Progress = req.Progress()
	if job.Backup != nil {
		job.Progress.SetBackup(job.Backup.ID)
	}
	rep, err := Run(ctx, job)
	job.Progress.Finish(err)
	req.record(ctx, rep, err)
	return rep, err
}

// record stores how the test ended (rep is nil when it failed before its
// report). A test that did not get to name its backup, or could not run,
// records nothing.
func (req Request) record(ctx context.Context, rep *Report, err error) {
	id := ""
	switch {
	case rep != nil:
		id = rep.Backup
	case req.Backup != nil:
		id = req.Backup.ID
	}
	if id == "" || (err != nil && !archive.IsCorrupt(err)) {
		return
	}
	o := repo.Outcome{At: time.Now().UTC(), OK: err == nil && rep.Passed}
	switch {
	case err != nil:
		o.Error = verify.OneLine(err)
	case !rep.Passed:
		o.Error = rep.Problems[0]
	}
	if werr := req.Repo.RecordVerdict(ctx, id, nil, &o); werr != nil && req.NotRecorded != nil {
		req.NotRecorded(werr)
	}
}

// Failure is the error of a test that did not pass (corruption, exit 3),
// nil for one that passed.
func (r *Report) Failure() error {
	if r.Passed {
		return nil
	}
	return archive.Corruptf("%s: restore test failed: %s", r.tested(), r.Problems[0])
}

// tested names what the test restored: the backup, or, when a
// point-in-time restore failed before it said which, the target.
func (r *Report) tested() string {
	if r.Backup == "" {
		return "the point-in-time restore to " + r.Until
	}
	what := "backup " + r.Backup
	if len(r.Chain) > 0 {
		what += " (on " + strings.Join(r.Chain, ", ") + ")"
	}
	if r.Until != "" {
		what += " replayed to " + r.Until
	}
	return what
}

// WriteText writes the report as verify --restore-test prints it.
func (r *Report) WriteText(w io.Writer) {
	if r.Dir != "" {
		fmt.Fprintf(w, "sandbox kept in %s\n", r.Dir)
	}
	if !r.Passed {
		for _, p := range r.Problems {
			fmt.Fprintf(w, "FAIL %s\n", p)
		}
		fmt.Fprintf(w, "%s: restore test FAILED (%d problems, %d tables)\n", r.tested(), len(r.Problems), len(r.Tables))
		return
	}
	compared := 0
	for _, t := range r.Tables {
		if t.RowSum != "" {
			compared++
		}
	}
	fmt.Fprintf(w, "%s: restore test passed: the server started, CHECK TABLE passed on %d tables", r.tested(), len(r.Tables))
	if compared > 0 {
		fmt.Fprintf(w, ", rows and row sums match the backup's record for %d", compared)
	}
	fmt.Fprintf(w, " (%.1f s)\n", r.Seconds)
}
