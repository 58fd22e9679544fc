package provision

import (
	"context"

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
