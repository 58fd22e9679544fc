package backup

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/progress"
)

// WriteText writes res for people: the backup made, and for a logical one
// what it holds without history and what it masked.
func (res *Result) WriteText(w io.Writer) error {
	m := res.Manifest
	what, streams := "full", fmt.Sprintf("%d streams, %d files", len(m.Streams), len(m.Files))
	switch {
	case m.Kind == archive.KindLogical:
		what = fmt.Sprintf("logical, %d databases, %d tables, %d rows", len(m.Databases), res.Tables, res.Rows)
		streams = fmt.Sprintf("%d streams", len(m.Streams))
	case m.Parent != "":
		what = fmt.Sprintf("incremental on %s (depth %d of chain %s)", m.Parent, m.Depth, m.Chain)
	}
	if _, err := fmt.Fprintf(w, "backup %s complete: %s, %s, %s stored\n", m.ID, what, streams, inventory.Stored(m)); err != nil {
		return err
	}
	for _, t := range res.NoHistory {
		fmt.Fprintf(w, "backup %s: table %s: history not in the backup (--versioned-current-only)\n", m.ID, t)
	}
	if len(res.Masked) > 0 {
		fmt.Fprintf(w, "backup %s: masked when dumped: %s\n", m.ID, strings.Join(res.Masked, ", "))
	}
	if i := res.Impact; i != nil {
		fmt.Fprintf(w, "backup %s: cost to the server: %s read, DDL blocked %s, commits blocked %s%s\n", m.ID,
			progress.HumanBytes(i.ReadBytes), human(i.DDLBlockedSeconds), human(i.CommitsBlockedSeconds), probed(i.ProbeStats))
	}
	return nil
}

// human is a number of seconds for people, to the millisecond.
func human(seconds float64) string {
	return time.Duration(seconds * float64(time.Second)).Round(time.Millisecond).String()
}

// probed says what the probe query measured, if it ran.
func probed(p mariadb.ProbeStats) string {
	if p.Probes == 0 {
		return ""
	}
	return fmt.Sprintf("; SELECT 1 answered in %s (median of %d), %s at the slowest", human(p.ProbeMedianSeconds), p.Probes, human(p.ProbeMaxSeconds))
}

// JSON is what --json prints of a backup made: the backup as every
// command that makes one prints it, and what it cost the server.
type JSON struct {
	inventory.Made
	Impact *Impact `json:"impact,omitempty"`
}

// JSON is what --json prints of res.
func (res *Result) JSON() JSON { return JSON{Made: inventory.MadeOf(res.Manifest), Impact: res.Impact} }
