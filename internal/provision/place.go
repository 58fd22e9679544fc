package provision

import (
	"context"
	"fmt"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/remote"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/serverup"
)

// Placed is what Place did: where what the datadir held went, what moved
// outside it, and the server started on it.
type Placed struct {
	Replaced string           `json:"replaced,omitempty"` // where what the datadir held was moved aside
	Outside  []restore.Aside  `json:"outside,omitempty"`  // what moved aside from, and was placed in, the places outside it
	Started  *serverup.Report `json:"started,omitempty"`  // the server started there, checked
}

// biggest is how many of the biggest tables the check of a started server
// counts.
const biggest = 5

// Place swaps the restored datadir into place and, with start, starts the
// server there and checks it. What it did is returned also with an
// error, and the step that failed (remote.StepPlace or StepStart).
func Place(ctx context.Context, place *restore.Place, start *Start) (Placed, string, error) {
	sw, err := place.Swap()
	did := Placed{Replaced: sw.Replaced, Outside: sw.Outside}
	if err != nil {
		return did, remote.StepPlace, err
	}
	if start == nil {
		return did, "", nil
	}
	rep, err := serverup.Start(ctx, serverup.Options{How: start.How, Conn: start.Conn, Datadir: place.Dir,
		Timeout: start.Timeout, CheckTimeout: start.CheckTimeout, Biggest: biggest})
	if err != nil {
		return did, remote.StepStart, err
	}
	did.Started = rep
	return did, "", nil
}

// StartCommandError is a start command whose words cannot be split.
type StartCommandError struct{ Err error }

func (e *StartCommandError) Error() string { return "the start command: " + e.Err.Error() }
func (e *StartCommandError) Unwrap() error { return e.Err }

// ServerFiles reads where the server that will run on the datadir keeps
// files of its state outside it, from the option files it can be known
// to read: serverDefaults when given; otherwise, started with systemd
// (serverup.Systemd), the global option files; started by a command,
// those the command's words choose (--no-defaults, --defaults-file,
// --defaults-extra-file, else the global files) and the options among its
// words; not started (start ""), none.
func ServerFiles(start, serverDefaults string) (mariadb.ServerFiles, error) {
	var src mariadb.ServerSource
	switch {
	case serverDefaults != "":
		src.DefaultsFile = serverDefaults
	case start == "":
		return mariadb.ServerFiles{}, nil
	case start == serverup.Systemd:
	default:
		var err error
		if src, err = mariadb.StartCommandSource(start, "the start command"); err != nil {
			return mariadb.ServerFiles{}, &StartCommandError{err}
		}
	}
	sf, err := mariadb.ReadServerFiles(src)
	if err != nil {
		return sf, fmt.Errorf("the options of the server to start on the datadir: %w", err)
	}
	return sf, nil
}
