package verify

import (
	"context"

	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/repoaccess"
)

// Locked runs req on the repository o reaches, under a shared lock, with
// o's memory budget: on the backup ref names (latest: of kind), or with
// ref "" on what req asks itself (Until, Binlogs). tracker makes the
// progress, titled with what is verified.
func Locked(ctx context.Context, o repoaccess.Options, ref, kind string, req Request, tracker func(title string, total int64) *progress.Tracker) (*Result, error) {
	r, m, ctx, release, err := o.ResolveLocked(ctx, ref, kind, repoaccess.OpVerify)
	if err != nil {
		return nil, err
	}
	defer release()
	req.Repo, req.Backup, req.Memory = r, m, o.Memory
	var title string
	switch {
	case m != nil:
		title = "verify " + m.ID
	case req.Binlogs:
		title = "verify --binlogs"
	case req.Until != nil:
		title = "verify --until " + req.Until.String()
	}
	req.Progress = func(total int64) *progress.Tracker { return tracker(title, total) }
	return Run(ctx, req)
}
