package remote

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Sent is what became of a backup sent, receiver by receiver, as send
// --json prints it (beside the backup).
type Sent struct {
	Backup    string            `json:"-"`
	Receivers []ReceiverOutcome `json:"receivers"`
}

// ReceiverOutcome is one receiver's outcome: it took the backup whole and
// verified (ok) and told what it did with it (outcome, and report: its
// text for people), or why it did not (error). Running and replicating
// come from the outcome's fields, never from its text.
type ReceiverOutcome struct {
	Address     string   `json:"address"`
	OK          bool     `json:"ok"`
	Report      string   `json:"report,omitempty"`
	Running     bool     `json:"running"`     // a server started on the backup and checked
	Replicating bool     `json:"replicating"` // that server replicates (what provision insists on)
	Outcome     *Outcome `json:"outcome,omitempty"`
	Error       string   `json:"error,omitempty"`
	// SentBytes are the stored bytes sent to it: the whole backup's, or
	// of a stored backup what a resumed receive still lacked.
	SentBytes int64 `json:"sent_bytes"`
}

// SentOf is what the receivers reported of backup id (Sender.Reports,
// once committed).
func SentOf(id string, reports []Report) *Sent {
	res := &Sent{Backup: id, Receivers: []ReceiverOutcome{}}
	for _, r := range reports {
		out := ReceiverOutcome{Address: r.Addr, OK: r.Err == nil, Outcome: r.Outcome, SentBytes: r.SentBytes}
		if o := r.Outcome; o != nil {
			out.Report = strings.TrimSpace(o.Text)
			out.Running, out.Replicating = o.Running(), o.Replicating()
		}
		if r.Err != nil {
			out.Error = r.Err.Error()
		}
		res.Receivers = append(res.Receivers, out)
	}
	return res
}

// Addresses are the receivers that took the backup (ok) or did not.
func (res *Sent) Addresses(ok bool) []string {
	var out []string
	for _, r := range res.Receivers {
		if r.OK == ok {
			out = append(out, r.Address)
		}
	}
	return out
}

// WriteFailed names the receivers that failed, and why.
func (res *Sent) WriteFailed(w io.Writer) {
	for _, r := range res.Receivers {
		if !r.OK {
			fmt.Fprintf(w, "receiver %s failed: %s\n", r.Address, r.Error)
		}
	}
}

// WriteReports writes what each receiver reported, a line at a time.
func (res *Sent) WriteReports(w io.Writer) {
	for _, r := range res.Receivers {
		for _, line := range strings.Split(r.Report, "\n") {
			if line != "" {
				fmt.Fprintf(w, "receiver %s: %s\n", r.Address, line)
			}
		}
	}
}

// Want is what a send asks of each receiver beyond taking the backup
// whole.
type Want int

const (
	WantTaken       Want = iota // nothing more (send)
	WantRunning                 // a server started on it (provision --replicate=false)
	WantReplicating             // that server replicating (provision)
)

// Check returns an error naming the receivers that failed and those
// that took the backup without doing what want asks.
func (res *Sent) Check(want Want) error {
	var errs, idle, stopped []string
	if failed := res.Addresses(false); len(failed) > 0 {
		errs = append(errs, fmt.Sprintf("backup %s did not reach receiver %s (see above); it reached %s", res.Backup, strings.Join(failed, ", "), strings.Join(res.Addresses(true), ", ")))
	}
	for _, r := range res.Receivers {
		switch {
		case !r.OK || want == WantTaken:
		case want == WantReplicating && !r.Replicating:
			idle = append(idle, r.Address)
		case want == WantRunning && !r.Running:
			stopped = append(stopped, r.Address)
		}
	}
	if len(idle) > 0 {
		errs = append(errs, fmt.Sprintf("receiver %s took the backup but reports no replication: a replica is provisioned by a receiver started with receive --datadir DIR --start --replicate", strings.Join(idle, ", ")))
	}
	if len(stopped) > 0 {
		errs = append(errs, fmt.Sprintf("receiver %s took the backup but reports no server started on it: provision needs receivers started with receive --datadir DIR --start", strings.Join(stopped, ", ")))
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.New(strings.Join(errs, "\n"))
}
