package remote

import (
	"context"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/refusal"
	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/transport"
)

// Progress is what a transfer reports its bytes and files to: a progress
// display, on the sender as on the receiver.
type Progress = physical.Progress

// SendRequest is send (and provision): a backup job streamed to the
// receivers To, and what each of them must make of it.
type SendRequest struct {
	Job physical.BackupJob // its Dest is the receivers
	To  []string
	// Transport is how the receivers are reached (the CA, the server
	// name); Send settles its token from TokenFile and its idle timeout.
	Transport transport.Options
	TokenFile string
	Idle      time.Duration
	// From, set (provision --from HOST:PORT), is the server the backup is
	// taken of, over TCP; FromGiven names the connection option given
	// that names another place, which contradicts it.
	From, FromGiven string
	// Stored, set (send ID --repo R: a backup id, a unique prefix of one,
	// or latest), sends that physical backup of Repos as it is stored
	// instead of taking one (Job is not used); a receiver resuming an
	// interrupted receive of it gets only what it lacks.
	Stored string
	Repos  repoaccess.Options
	Want   Want
	// Progress, if set, gives the backup its progress once the receivers
	// are connected, and what hears how it ended and says how long it took.
	Progress func() (Progress, func(error) time.Duration)
}

// Sending is a backup sent: its manifest, what became of it on each
// receiver, and how long it took.
type Sending struct {
	Manifest *archive.Manifest
	Sent     *Sent
	Elapsed  time.Duration
}

// Send connects to the receivers, streams the backup to them and
// collects their reports. A backup that reached none of them is an error
// with no Sending; one that some receivers did not make what req.Want
// asks returns the Sending and Check's error.
func Send(ctx context.Context, req SendRequest) (*Sending, error) {
	if req.Stored != "" {
		return sendStored(ctx, req)
	}
	job := req.Job
	if req.From != "" {
		if req.FromGiven != "" {
			return nil, refusal.Errorf("--from %s names the server already; leave out --%s", req.From, req.FromGiven)
		}
		var err error
		if job.Conn, err = job.Conn.OverTCP(req.From, "--from"); err != nil {
			return nil, refusal.Errorf("--from %q: %v", req.From, err)
		}
	}
	if err := req.Transport.Settle(req.Idle, req.TokenFile); err != nil {
		return nil, err
	}
	s, err := Dial(ctx, req.To, req.Transport)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	job.Dest = s
	finish := func(error) time.Duration { return 0 }
	if req.Progress != nil {
		job.Progress, finish = req.Progress()
	}
	m, err := physical.RunBackup(ctx, job)
	elapsed := finish(err)
	if err != nil {
		return nil, err
	}
	sent := SentOf(m.ID, s.Reports())
	return &Sending{Manifest: m, Sent: sent, Elapsed: elapsed}, sent.Check(req.Want)
}

// sendStored is Send of the stored backup req.Stored, under a shared
// lock of its repository, so that no expire removes it meanwhile.
func sendStored(ctx context.Context, req SendRequest) (*Sending, error) {
	if err := req.Transport.Settle(req.Idle, req.TokenFile); err != nil {
		return nil, err
	}
	if err := req.Check(); err != nil {
		return nil, err
	}
	r, m, ctx, release, err := req.Repos.ResolveLocked(ctx, strings.TrimSpace(req.Stored), archive.KindPhysical, repoaccess.OpSend)
	if err != nil {
		return nil, err
	}
	defer release()
	if err := r.CheckReadable(ctx, m); err != nil {
		return nil, err
	}
	b := &StoredBackup{Manifest: m, Input: r.Input(m), Meta: map[string][]byte{}}
	for _, o := range m.Meta {
		if o.Name == archive.ContentsName {
			continue
		}
		if b.Meta[o.Name], err = r.ReadMeta(ctx, m, o.Name); err != nil {
			return nil, err
		}
	}
	s, err := Dial(ctx, req.To, req.Transport)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var counter archive.Counter
	finish := func(error) time.Duration { return 0 }
	if req.Progress != nil {
		var p Progress
		p, finish = req.Progress()
		p.SetBackup(m.ID)
		p.SetTotal(m.Stats.RawBytes * int64(len(req.To))) // each receiver reads it (what a resume lacks, less)
		p.Stage("sending")
		counter = p
	}
	err = s.SendStored(ctx, b, counter)
	elapsed := finish(err)
	if err != nil {
		return nil, err
	}
	sent := SentOf(m.ID, s.Reports())
	return &Sending{Manifest: m, Sent: sent, Elapsed: elapsed}, sent.Check(req.Want)
}

// NewToken is a new token for `backstream token`, to hand to both ends
// (transport.GenerateToken).
func NewToken() string { return transport.GenerateToken() }

// WantOf is what send (or provision, replicating or not) asks of each
// receiver.
func WantOf(provision, replicating bool) Want {
	switch {
	case !provision:
		return WantTaken
	case replicating:
		return WantReplicating
	}
	return WantRunning
}

// Check refuses a sending to no receiver, before the backup is set up.
func (req *SendRequest) Check() error {
	switch {
	case len(req.To) == 0:
		return refusal.Errorf("name at least one receiver with --to HOST:PORT")
	case req.Stored != "" && strings.TrimSpace(req.Stored) == "":
		return refusal.Errorf("the backup to send is named by an empty id")
	case req.Stored != "" && req.Repos.Location.Repo == "":
		return refusal.Errorf("send %s sends a stored backup: name its repository with --repo", req.Stored)
	case req.Stored != "" && (req.From != "" || req.FromGiven != ""):
		return refusal.Errorf("send %s sends a stored backup as it is: it takes no server to back up (leave out --from and the connection options)", req.Stored)
	}
	return nil
}
