package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/transport"
)

// StoreRequest is receive into a target directory or a repository: where
// to listen, where each backup goes, and whether to take one after
// another.
type StoreRequest struct {
	Listen    string            // address to listen on, e.g. ":4444"
	Transport transport.Options // the token, the certificate, the idle timeout
	// TargetDir, if set, restores each backup as it arrives, as restore
	// does with these settings (target, prepare, owner, ...).
	TargetDir *restore.Request
	// Repo, if set, stores each backup, verified, and commits it; the
	// rest is as Receiver has it.
	Repo       *repo.Repo
	Encryption *archive.Encryption
	LockRepo   func(ctx context.Context) (context.Context, func(), error)
	Workers    int
	Memory     *archive.Memory // the budget of what the reads hold at once (into Repo; nil: archive.DefaultMemory)
	// Keep serves one transfer after another until ctx ends.
	Keep bool

	// Progress, if set, gives each transfer its progress, and what hears
	// that the transfer ended (with its error).
	Progress func() (Progress, func(error))
	// Listening, if set, hears the address listened on; Rejected of
	// connections refused before a transfer (wrong token, not TLS, ...).
	Listening func(net.Addr)
	Rejected  func(error)
	// Stored, if set, hears of each backup received and verified; an error
	// it returns ends Store. Failed, with Keep, hears of each transfer that
	// failed, unless cancelled.
	Stored func(Stored) error
	Failed func(error)
}

// Stored is where a backup received and verified went, as receive --json
// prints it.
type Stored struct {
	Backup   string `json:"backup"`
	Into     string `json:"into"`  // IntoTargetDir, IntoDatadir or IntoRepository
	Where    string `json:"where"` // the directory, or the repository's location
	Prepared bool   `json:"prepared"`
}

// WriteText says that the backup arrived, verified, and where it went.
func (s Stored) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "backup %s received and verified into %s\n", s.Backup, s.Where)
	return err
}

// Store listens and takes one transfer into req's target directory or
// repository, or with Keep one after another until ctx ends. It returns
// the error of the (last) transfer, or Stored's.
func Store(ctx context.Context, req StoreRequest) error {
	var job *restore.Job
	if req.TargetDir != nil {
		j, err := req.TargetDir.Job()
		if err != nil {
			return err
		}
		job = &j
	}
	ln, err := transport.Listen(ctx, req.Listen, req.Transport)
	if err != nil {
		return err
	}
	defer ln.Close()
	if req.Listening != nil {
		req.Listening(ln.Addr())
	}
	rv := &Receiver{Listener: ln, Datadir: job, Repo: req.Repo, Encryption: req.Encryption, LockRepo: req.LockRepo,
		Workers: req.Workers, Memory: req.Memory, Rejected: req.Rejected}
	for {
		m, err := req.serve(ctx, rv)
		if err == nil && req.Stored != nil {
			if serr := req.Stored(req.stored(m)); serr != nil {
				return serr
			}
		}
		if !req.Keep || ctx.Err() != nil {
			return err
		}
		if err != nil && !errors.Is(err, context.Canceled) && req.Failed != nil {
			req.Failed(err)
		}
	}
}

// serve takes one transfer with rv, under its own progress.
func (req StoreRequest) serve(ctx context.Context, rv *Receiver) (*archive.Manifest, error) {
	var done func(error)
	if req.Progress != nil {
		rv.Progress, done = req.Progress()
	}
	m, err := rv.Serve(ctx)
	if done != nil {
		done(err)
	}
	return m, err
}

// stored is where req put the backup m.
func (req StoreRequest) stored(m *archive.Manifest) Stored {
	if req.Repo != nil {
		return Stored{Backup: m.ID, Into: IntoRepository, Where: req.Repo.Backend.Location()}
	}
	return Stored{Backup: m.ID, Into: IntoTargetDir, Where: req.TargetDir.TargetDir, Prepared: req.TargetDir.Options.Prepare}
}
