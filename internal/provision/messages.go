package provision

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/remote"
	"github.com/backstream/backstream/internal/replica"
)

// Messages are every sentence a provisioning says to people, as format
// strings (the arguments are in each one's comment). They go to the
// receiver's terminal and, as the outcome's text, to the sender, which
// prints them and decides nothing from them: rewording them changes no
// outcome.
type Messages struct {
	MovedAside    string // the datadir, where what it held went
	Outside       string // one restore.Aside (what moved outside the datadir)
	InPlace       string // the backup's id, the datadir
	Runs          string // the server's version, its hostname, the datadir, the system tables checked
	Biggest       string // the biggest tables, each a Counted or a NotCounted, joined by ", "
	Counted       string // a table, its rows
	NotCounted    string // a table, the check timeout
	Replicating   string // the primary's host:port, its user, where it started (an AtGTID or an AtFilePos), where that was read
	AtGTID        string // the GTID replication started at
	AtFilePos     string // the binary log file, the position replication started at
	Notes         string // the notes of the replication set up, joined by "; "
	ListSeparator string // between the biggest tables
	NoteSeparator string // between notes
}

// DefaultMessages are the receiver's sentences as backstream words them.
var DefaultMessages = Messages{
	MovedAside:    "what %s held was moved aside to %s\n",
	Outside:       "%s\n",
	InPlace:       "backup %s restored and prepared in place: %s\n",
	Runs:          "server %s (%s) runs on %s: CHECK TABLE of %d system tables OK\n",
	Biggest:       "biggest tables: %s\n",
	Counted:       "%s %d rows",
	NotCounted:    "%s not counted within --check-timeout %s",
	Replicating:   "replicating from %s as %s, starting at %s (from %s); IO and SQL threads running\n",
	AtGTID:        "GTID %s",
	AtFilePos:     "%s:%d",
	Notes:         "note: %s\n",
	ListSeparator: ", ",
	NoteSeparator: "; ",
}

// Text is res in m's words: what was moved aside and placed, the server
// started, and its replication, as far as it got.
func (m Messages) Text(res *Result, checkTimeout time.Duration) string {
	var b strings.Builder
	m.WritePlaced(&b, res.Backup, res.Datadir, res.Placed, res.Step != remote.StepPlace, checkTimeout)
	if s := res.Replication; s != nil {
		m.WriteReplication(&b, s)
	}
	return b.String()
}

// WritePlaced writes what Place did with backup id in datadir: what was
// moved aside, that it is in place (when placed), the server started.
func (m Messages) WritePlaced(w io.Writer, id, datadir string, did Placed, placed bool, checkTimeout time.Duration) {
	if did.Replaced != "" {
		fmt.Fprintf(w, m.MovedAside, datadir, did.Replaced)
	}
	for _, a := range did.Outside {
		fmt.Fprintf(w, m.Outside, a)
	}
	if !placed {
		return
	}
	fmt.Fprintf(w, m.InPlace, id, datadir)
	rep := did.Started
	if rep == nil {
		return
	}
	fmt.Fprintf(w, m.Runs, rep.Version, rep.Hostname, datadir, rep.SystemTables)
	if len(rep.Counted) == 0 {
		return
	}
	parts := make([]string, len(rep.Counted))
	for i, c := range rep.Counted {
		parts[i] = fmt.Sprintf(m.Counted, c.Table, c.Rows)
		if !c.Counted {
			parts[i] = fmt.Sprintf(m.NotCounted, c.Table, checkTimeout)
		}
	}
	fmt.Fprintf(w, m.Biggest, strings.Join(parts, m.ListSeparator))
}

// WriteReplication writes that the server replicates, as s says.
func (m Messages) WriteReplication(w io.Writer, s *replica.Summary) {
	at := fmt.Sprintf(m.AtGTID, s.GTID)
	if !s.UsingGTID {
		at = fmt.Sprintf(m.AtFilePos, s.BinlogFile, s.BinlogPosition)
	}
	fmt.Fprintf(w, m.Replicating, s.Primary, s.PrimaryUser, at, s.PositionFrom)
	if len(s.Notes) > 0 {
		fmt.Fprintf(w, m.Notes, strings.Join(s.Notes, m.NoteSeparator))
	}
}
