package provision

import (
	"context"
	"net"
	"time"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/refusal"
	"github.com/backstream/backstream/internal/remote"
	"github.com/backstream/backstream/internal/replica"
	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/transport"
)

// ReceiveRequest is backstream receive as asked. Run chooses from it
// between storing each backup received, into a target directory or a
// repository (see remote.Store), and provisioning a datadir (see
// Receive), after Check.
type ReceiveRequest struct {
	Listen                       string
	TokenFile, CertFile, KeyFile string
	Idle                         time.Duration
	Keep                         bool            // one transfer after another (into a repository)
	Restore                      restore.Request // how a target directory or the datadir is written
	// Datadir, set, provisions there: Force moves what it holds aside,
	// Start starts the server on it (see Start), and Replicate points it
	// at its Primary.
	Datadir                    string
	Force                      bool
	Start                      string
	StartTimeout, CheckTimeout time.Duration
	Replicate, CatchUp         bool
	Primary                    replica.Named
	// Repos reaches the repository a backup is stored into: when RepoGiven
	// (--repo on the command line), or when it names one and neither a
	// target directory nor a datadir is asked for.
	Repos     repoaccess.Options
	RepoGiven bool
	Given     ReceiveGiven
	// Conn is how the server Start starts is reached: read only with
	// Start.
	Conn func() (mariadb.Config, error)
	// Progress, if set, gives each transfer its progress, and what hears
	// that it ended.
	Progress func() (remote.Progress, func(error))
	// Listening, Rejected, Stored and Failed are as remote.StoreRequest
	// has them; Stored only for a target directory or a repository.
	Listening func(net.Addr)
	Rejected  func(error)
	Stored    func(remote.Stored) error
	Failed    func(error)
}

// ReceiveGiven names options given explicitly, the first of each kind,
// for the refusals that name them; "" for none.
type ReceiveGiven struct {
	Place     string // of --force, --start, --start-timeout, --check-timeout
	Timeout   string // of --start-timeout, --check-timeout
	Conn      string // of the connection options
	Replicate string // of the primary's options and --catch-up
}

// intoRepo says whether the backups go into a repository.
func (req *ReceiveRequest) intoRepo() bool {
	return req.RepoGiven || (req.Restore.TargetDir == "" && req.Repos.Location.Repo != "" && req.Datadir == "")
}

// Check refuses options that contradict each other.
func (req *ReceiveRequest) Check() error {
	target, intoRepo := req.Restore.TargetDir, req.intoRepo()
	switch {
	case req.Listen == "":
		return refusal.Errorf("--listen ADDR is required, e.g. --listen :4444")
	case target != "" && intoRepo:
		return refusal.Errorf("give either --target-dir or --repo, not both")
	case target == "" && !intoRepo && req.Datadir == "":
		return refusal.Errorf("give --target-dir DIR (restore), --datadir DIR (restore into place) or --repo DIR (store)")
	case req.Restore.ServerDefaults != "" && !req.Restore.Options.Prepare && req.Datadir == "":
		return refusal.Errorf("--server-defaults-file goes with --prepare or --datadir: it gives what the prepare needs")
	case req.Keep && target != "":
		return refusal.Errorf("--keep-listening needs --repo: a target directory takes one backup")
	case req.Repos.Encrypt && (target != "" || req.Datadir != ""):
		return refusal.Errorf("--encrypt is for storing into a repository (--repo); a restored datadir is not encrypted")
	case (req.CertFile == "") != (req.KeyFile == ""):
		return refusal.Errorf("--tls-cert and --tls-key go together")
	case req.Datadir != "" && (target != "" || req.RepoGiven):
		return refusal.Errorf("--datadir restores into place: it takes neither --target-dir nor --repo")
	case req.Datadir != "" && req.Keep:
		return refusal.Errorf("--keep-listening needs --repo: a datadir takes one backup")
	case req.Restore.Resume && intoRepo:
		return refusal.Errorf("--resume continues a receive into --target-dir or --datadir; a repository takes each backup whole")
	}
	if err := restorecase.CheckPlace(req.Datadir, req.Start, req.Given.Place, req.Given.Timeout); err != nil {
		return err
	}
	switch {
	case req.Given.Conn != "" && req.Start == "":
		return refusal.Errorf("--%s reaches the started server: it goes with --datadir and --start", req.Given.Conn)
	case req.Given.Replicate != "" && !req.Replicate:
		return refusal.Errorf("--%s goes with --replicate", req.Given.Replicate)
	case req.Replicate && req.Start == "":
		return refusal.Errorf("--replicate points the server --start started at its primary: give --datadir and --start")
	}
	return nil
}

// Run receives as req asks, after Check: into a target directory or a
// repository, one backup or with Keep one after another (the Result is
// nil), or into a datadir (see Receive). A refusal for what was asked is
// marked Refused.
func Run(ctx context.Context, req ReceiveRequest) (*Result, error) {
	if err := req.Check(); err != nil {
		return nil, err
	}
	if req.Datadir == "" {
		sr, err := req.storeRequest(ctx)
		if err != nil {
			return nil, err
		}
		return nil, remote.Store(ctx, sr)
	}
	pr, err := req.provisionRequest()
	if err != nil {
		return nil, err
	}
	var done func(error)
	if req.Progress != nil {
		pr.Progress, done = req.Progress()
	}
	res, err := Receive(ctx, pr)
	if done != nil {
		done(err)
	}
	return res, err
}

// transport is the transport req asks for.
func (req *ReceiveRequest) transport() (transport.Options, error) {
	t := transport.Options{CertFile: req.CertFile, KeyFile: req.KeyFile}
	return t, t.Settle(req.Idle, req.TokenFile)
}

// storeRequest is the receiving into a target directory or a repository:
// the repository locked for each transfer once a sender has announced
// its backup.
func (req *ReceiveRequest) storeRequest(ctx context.Context) (remote.StoreRequest, error) {
	sr := remote.StoreRequest{Listen: req.Listen, Workers: req.Restore.Options.Workers, Memory: req.Repos.Memory, Keep: req.Keep,
		Progress: req.Progress, Listening: req.Listening, Rejected: req.Rejected, Stored: req.Stored, Failed: req.Failed}
	var err error
	if req.intoRepo() {
		if sr.Repo, err = req.Repos.Open(ctx); err != nil {
			return sr, err
		}
		if sr.Encryption, err = req.Repos.Encryption(ctx, sr.Repo); err != nil {
			return sr, err
		}
		r := sr.Repo
		sr.LockRepo = func(ctx context.Context) (context.Context, func(), error) {
			return req.Repos.Acquire(ctx, r, repoaccess.OpReceive, true)
		}
	} else {
		sr.TargetDir = &req.Restore
	}
	sr.Transport, err = req.transport()
	return sr, err
}

// provisionRequest is the provisioning of Datadir, with Start and
// Replicate.
func (req *ReceiveRequest) provisionRequest() (Request, error) {
	pr := Request{Listen: req.Listen, Datadir: req.Datadir, Force: req.Force, ServerDefaults: req.Restore.ServerDefaults,
		Listening: req.Listening, Rejected: req.Rejected}
	var err error
	if pr.Transport, err = req.transport(); err != nil {
		return pr, err
	}
	pr.Restore = req.Restore
	if req.Start == "" {
		return pr, nil
	}
	cfg, err := req.Conn()
	if err != nil {
		return pr, err
	}
	pr.Start = &Start{How: req.Start, Conn: cfg, Timeout: req.StartTimeout, CheckTimeout: req.CheckTimeout}
	if req.Replicate {
		prim, err := req.Primary.Resolve(replica.Primary{})
		if err != nil {
			return pr, err
		}
		pr.Replicate = &Replicate{Primary: prim, PrimaryIs: req.Primary.Is, CatchUp: req.CatchUp, WaitTimeout: replica.DefaultWaitTimeout}
	}
	return pr, nil
}
