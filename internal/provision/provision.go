// Package provision makes a new server, a replica as a rule, from a backup
// that backstream send (or provision) streams to this host: it receives
// the backup beside the datadir, restoring and preparing it as it arrives,
// swaps it into place, starts the server there and checks it, and points
// it at its primary from the backup's position. Then it tells the sender a
// typed outcome (internal/remote's Outcome: status, the server, the
// replication coordinates, the failing step and its error), and returns
// the same as a Result. SetupReplica is the last step alone (backstream
// replicate), on a server seeded otherwise, from the positions of the
// newest copy into it or of a backup in a repository. Run is backstream
// receive as asked: it refuses what does not go together and chooses
// between provisioning and storing each backup received (remote.Store)
// into a target directory or a repository, locked for each transfer.
//
// It knows no flags and prints nothing: the text for people that goes
// with the outcome is written with Messages, which the caller may reword
// without changing what the sender decides.
package provision

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/remote"
	"github.com/backstream/backstream/internal/replica"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/serverup"
	"github.com/backstream/backstream/internal/transport"
)

// Request is one provisioning: where to listen, the datadir to put the
// backup into, and, optionally, how to start the server and replicate.
type Request struct {
	Listen    string            // address to listen on, e.g. ":4444"
	Transport transport.Options // the token, the certificate, the idle timeout

	Datadir string // restored beside it (inside it, for a mount point or a link), then swapped into place
	Force   bool   // move what Datadir holds aside instead of refusing
	// ServerDefaults, if set, is the option file the server reads (for
	// where it keeps files outside the datadir); otherwise they are read
	// from the option files Start chooses.
	ServerDefaults string
	// Restore says how to restore (owner, workers, memory, the key
	// file's password, ...): its target and prepare are set here.
	Restore restore.Request

	Start     *Start     // start the server on the datadir and check it
	Replicate *Replicate // then point it at its primary (needs Start)

	// Messages word the text that goes to the sender with the outcome;
	// nil is DefaultMessages.
	Messages *Messages
	Progress physical.Progress // optional
	// Listening, if set, hears the address listened on; Rejected of
	// connections refused before a transfer (wrong token, not TLS, ...).
	Listening func(net.Addr)
	Rejected  func(error)
}

// Start says how to start the server on the datadir and reach it.
type Start struct {
	How          string         // serverup.Systemd, or a shell command that starts it and returns
	Conn         mariadb.Config // how to reach it once started
	Timeout      time.Duration  // for the start and the wait until it answers together
	CheckTimeout time.Duration  // for the checks once it answers
}

// Replicate names the primary the started server replicates from.
type Replicate struct {
	Primary     replica.Primary
	PrimaryIs   string // replica.PrimaryIsSource, replica.PrimaryIsSourcePrimary, or "" to ask the primary
	CatchUp     bool   // also wait until it caught up
	WaitTimeout time.Duration
}

// Result is what became of the backup received. Backup is "" when none
// arrived whole; Step names what failed after it arrived (a
// remote.Step*), "" when nothing did.
type Result struct {
	Backup  string
	Datadir string
	Placed
	Replication *replica.Summary
	Step        string
}

// Report is what receive --json prints of a backup received into place:
// where it went, what placing did, the server's replication, and what
// failed after its arrival.
type Report struct {
	remote.Stored
	Placed
	Replicating *replica.Summary `json:"replicating,omitempty"`
	Error       string           `json:"error,omitempty"`
}

// Report is res as receive --json prints it; err is what failed after
// the backup arrived.
func (res *Result) Report(err error) Report {
	r := Report{Stored: remote.Stored{Backup: res.Backup, Into: remote.IntoDatadir, Where: res.Datadir, Prepared: true},
		Placed: res.Placed, Replicating: res.Replication}
	if err != nil {
		r.Error = err.Error()
	}
	return r
}

// Receive listens for one transfer and provisions from it. The error says
// what failed; the Result says what was done, also with an error (a
// *restore.RefusedError means the datadir cannot be claimed as asked).
func Receive(ctx context.Context, req Request) (*Result, error) {
	if req.Replicate != nil && req.Start == nil {
		return nil, errors.New("replicating needs a started server")
	}
	if req.Start != nil {
		if err := (serverup.Options{Conn: req.Start.Conn}).Check(); err != nil {
			return nil, err
		}
	}
	sf, err := restore.ServerFiles(startHow(req.Start), req.ServerDefaults)
	if err != nil {
		return nil, err
	}
	job, err := req.Restore.Job()
	if err != nil {
		return nil, err
	}
	place, err := restore.PlaceFor(req.Datadir, req.Force, sf)
	if err != nil {
		return nil, err
	}
	res := &Result{Datadir: place.Dir}
	job.TargetDir, job.Prepare = place.Staging, true
	rv := &remote.Receiver{Datadir: &job, Workers: job.Workers, Progress: req.Progress, Rejected: req.Rejected,
		Finish: func(ctx context.Context, m *archive.Manifest) (remote.Outcome, error) {
			res.Backup = m.ID
			err := finish(ctx, req, place, m, res)
			return outcome(req, res), err
		}}
	ln, err := transport.Listen(ctx, req.Listen, req.Transport)
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	rv.Listener = ln
	if req.Listening != nil {
		req.Listening(ln.Addr())
	}
	_, err = rv.Serve(ctx)
	return res, err
}

// finish puts the backup m into place, starts the server and has it
// replicate, as req asks, and says in res what it did and which step
// failed.
func finish(ctx context.Context, req Request, place *restore.Place, m *archive.Manifest, res *Result) error {
	var err error
	res.Placed, res.Step, err = Place(ctx, place, req.Start, m.Server.Version)
	if err != nil || req.Replicate == nil {
		return err
	}
	r := req.Replicate
	p := r.Primary
	// The manifest names the source and, for a backup of a replica, its
	// primary: the positions to choose from.
	opt := replica.Options{Backup: replica.FromManifest(m), PrimaryIs: r.PrimaryIs, CatchUp: r.CatchUp, WaitTimeout: r.WaitTimeout}
	if res.Replication, err = replica.SetupOn(ctx, req.Start.Conn, p, opt); err != nil {
		res.Step = remote.StepReplicate
	}
	return err
}

func startHow(s *Start) string {
	if s == nil {
		return ""
	}
	return s.How
}
