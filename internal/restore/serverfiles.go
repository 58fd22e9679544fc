package restore

import (
	"fmt"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/serverup"
)

// StartCommandError is a start command whose words cannot be split.
type StartCommandError struct{ Err error }

func (e *StartCommandError) Error() string { return "--start: " + e.Err.Error() }
func (e *StartCommandError) Unwrap() error { return e.Err }

// Refused marks the error a refusal of what was asked: a usage error.
func (e *StartCommandError) Refused() bool { return true }

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
