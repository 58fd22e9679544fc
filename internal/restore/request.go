package restore

import (
	"fmt"
	"io"

	"github.com/backstream/backstream/internal/physical"
)

// Request is a restore into a new datadir as a command words it: plain
// values, which Job checks and turns into the Job they describe, less
// what it restores.
type Request struct {
	TargetDir string
	// Owner owns the restored files if OwnerGiven, else DefaultOwner's
	// user does (mysql when running as root).
	Owner      string
	OwnerGiven bool
	// DataDirs map DATA DIRECTORY tablespaces elsewhere, each OLD=NEW
	// (ParseDirMap).
	DataDirs []string
	// ServerDefaults is the option file of what prepares and serves the
	// result: the key file's password is read from it, or from the
	// environment (physical.UserFileKey), unless Options has it.
	ServerDefaults string
	// PlacedTo hears where each tablespace went, a line each; nil for
	// nowhere.
	PlacedTo io.Writer
	// Resume continues an interrupted restore into TargetDir (Job.Resume).
	Resume  bool
	Options Options
}

// Job is the restore r describes. A mapping that does not parse is
// refused (a *RefusedError).
func (r Request) Job() (Job, error) {
	job := Job{TargetDir: r.TargetDir, Owner: r.Owner, Resume: r.Resume, Options: r.Options}
	if !r.OwnerGiven {
		job.Owner = physical.DefaultOwner()
	}
	for _, s := range r.DataDirs {
		m, err := ParseDirMap(s)
		if err != nil {
			return job, &RefusedError{fmt.Errorf("--map-data-directory %v", err)}
		}
		job.DataDirs = append(job.DataDirs, m)
	}
	if job.FileKey == "" {
		key, err := physical.UserFileKey(r.ServerDefaults)
		if err != nil {
			return job, err
		}
		job.FileKey = key
	}
	if w := r.PlacedTo; w != nil {
		job.Placed = func(p Placement) { fmt.Fprintln(w, p) }
	}
	return job, nil
}
