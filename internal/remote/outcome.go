package remote

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Outcome is what a receiver tells its sender once a backup arrived whole
// and verified (message R, protocol 3): what became of it, in fields a
// sender decides on. Text is for people only: a sender prints it and
// never looks into it, so a receiver may word it as it likes.
type Outcome struct {
	Status string `json:"status"` // StatusOK or StatusFailed
	Backup string `json:"backup"` // the backup's id
	Into   string `json:"into"`   // IntoTargetDir, IntoDatadir or IntoRepository
	// Server is the server started on the datadir, checked.
	Server *Server `json:"server,omitempty"`
	// Replication is where that server replicates from, both threads
	// running.
	Replication *Replication `json:"replication,omitempty"`
	// Step and Error say what failed after the backup arrived (Status
	// StatusFailed): StepPlace, StepStart or StepReplicate, and why.
	Step  string `json:"step,omitempty"`
	Error string `json:"error,omitempty"`
	Text  string `json:"text,omitempty"`
}

// The values of Outcome's Status, Into and Step.
const (
	StatusOK     = "ok"
	StatusFailed = "failed"

	IntoTargetDir  = "target-dir"
	IntoDatadir    = "datadir"
	IntoRepository = "repository"

	StepPlace     = "place"     // swapping the restored datadir into place
	StepStart     = "start"     // starting the server on it and checking it
	StepReplicate = "replicate" // pointing it at its primary
)

// Server is a server a receiver started on a restored datadir.
type Server struct {
	Address  string `json:"address"` // its socket, or host:port, as the receiver reached it
	Datadir  string `json:"datadir"`
	Version  string `json:"version"`
	Hostname string `json:"hostname"`
}

// Replication is where a receiver's server replicates from, and the
// backup's coordinates it started at: a GTID position (UsingGTID) or a
// binary log file and position.
type Replication struct {
	Primary        string `json:"primary"` // host:port
	UsingGTID      bool   `json:"using_gtid"`
	GTID           string `json:"gtid,omitempty"`
	BinlogFile     string `json:"binlog_file,omitempty"`
	BinlogPosition uint64 `json:"binlog_position,omitempty"`
	CaughtUp       bool   `json:"caught_up"`
}

// Running reports whether the outcome is a server started and running.
func (o *Outcome) Running() bool { return o.Status == StatusOK && o.Server != nil }

// Replicating reports whether the outcome is a server that replicates.
func (o *Outcome) Replicating() bool { return o.Running() && o.Replication != nil }

// maxOutcome bounds an outcome message; maxOutcomeText bounds its Text and
// its Error each, so that every outcome a receiver makes fits.
const (
	maxOutcome     = 16 << 10
	maxOutcomeText = 4 << 10
)

// FailedError is a receiver's outcome that says it failed after the
// backup arrived.
type FailedError struct{ Outcome *Outcome }

// Error quotes the receiver's reason, marked as the peer's.
func (e *FailedError) Error() string { return "peer says: " + e.Outcome.Error }

// encodeOutcome makes the message of o, its Text and Error cut to fit.
func encodeOutcome(o Outcome) ([]byte, error) {
	o.Text, o.Error = cut(o.Text, maxOutcomeText), cut(o.Error, maxOutcomeText)
	return json.Marshal(o)
}

// cut shortens s to at most n bytes, on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// parseOutcome reads and checks a receiver's outcome message. Its strings
// are kept to what a terminal shows as text.
func parseOutcome(b []byte) (*Outcome, error) {
	if len(b) > maxOutcome {
		return nil, fmt.Errorf("an outcome of %d bytes, more than %d", len(b), maxOutcome)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var o Outcome
	if err := d.Decode(&o); err != nil {
		return nil, fmt.Errorf("the receiver's outcome: %w", err)
	}
	why := o.check()
	if d.More() {
		why = "more than one JSON value"
	}
	if why != "" {
		return nil, fmt.Errorf("the receiver's outcome: %s", why)
	}
	o.Text, o.Error = printable(o.Text), printable(o.Error)
	return &o, nil
}

// check says what of an outcome's fields contradicts the others, "" if
// nothing does.
func (o *Outcome) check() string {
	switch {
	case o.Backup == "":
		return "no backup named"
	case o.Into != IntoTargetDir && o.Into != IntoDatadir && o.Into != IntoRepository:
		return fmt.Sprintf("into %q", o.Into)
	case o.Status == StatusOK && (o.Error != "" || o.Step != ""):
		return "status ok with an error"
	case o.Status == StatusFailed && o.Error == "":
		return "status failed without an error"
	case o.Status != StatusOK && o.Status != StatusFailed:
		return fmt.Sprintf("status %q", o.Status)
	case o.Step != "" && o.Step != StepPlace && o.Step != StepStart && o.Step != StepReplicate:
		return fmt.Sprintf("step %q", o.Step)
	case (o.Server != nil || o.Replication != nil) && o.Into != IntoDatadir:
		return "a server started on a backup received into the " + o.Into
	case o.Replication != nil && o.Server == nil:
		return "replication without a server"
	}
	return ""
}
