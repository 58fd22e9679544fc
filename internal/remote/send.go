package remote

import (
	"context"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/transport"
)

// Progress is what a transfer reports its bytes and files to: a progress
// display, on the sender as on the receiver.
type Progress = physical.Progress

// SendRequest is send (and provision): a backup job streamed to the
// receivers To, and what each of them must make of it.
type SendRequest struct {
	Job       physical.BackupJob // its Dest is the receivers
	To        []string
	Transport transport.Options
	Want      Want
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
	s, err := Dial(ctx, req.To, req.Transport)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	job := req.Job
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

// NewToken is a new token for `backstream token`, to hand to both ends
// (transport.GenerateToken).
func NewToken() string { return transport.GenerateToken() }
