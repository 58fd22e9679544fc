package provision

import (
	"context"
	"fmt"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/remote"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/serverup"
)

// Placed is what Place did: where what the datadir held went, what moved
// outside it, and the server started on it.
type Placed = restorecase.Placed

// biggest is how many of the biggest tables the check of a started server
// counts.
const biggest = 5

// Place swaps the restored datadir into place and, with start, starts the
// server there and checks it. What it did is returned also with an
// error, and the step that failed (remote.StepPlace or StepStart).
func Place(ctx context.Context, place *restore.Place, start *Start, datadirVersion string) (Placed, string, error) {
	var o *serverup.Options
	if start != nil {
		o = &serverup.Options{How: start.How, Conn: start.Conn, Timeout: start.Timeout, CheckTimeout: start.CheckTimeout, Biggest: biggest}
	}
	did, swapped, err := restorecase.SwapAndStart(ctx, place, o, datadirVersion)
	switch {
	case err != nil && !swapped:
		return did, remote.StepPlace, err
	case err != nil:
		return did, remote.StepStart, err
	}
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
