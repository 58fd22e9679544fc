package pitr

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/backstream/backstream/internal/binlog"
)

// relaySpan is the part of one archived file a relay-log replay applies.
type relaySpan struct {
	path     string
	fdeEnd   int64 // where its format description ends
	from, to int64
	file     binlog.File
}

// relayPlan is what a replay through the server's replication applier
// applies: exactly the transactions mariadb-binlog would pass on for the
// same files, start and target (see planRelay).
type relayPlan struct {
	spans []relaySpan
	// last is the GTID of the last transaction applied, per domain: what
	// gtid_slave_pos must say once the applier is done.
	last Position
}

// errRelay is why a replay cannot take the parallel path: planRelay found
// something it cannot stop at exactly where mariadb-binlog would.
type errRelay string

func (e errRelay) Error() string { return string(e) }

// planRelay reads the archived files paths (the replay starts at byte
// start of the first, after GTID position from when the target is a
// GTID) and cuts them where the replay of t stops, by mariadb-binlog's
// rules: with --stop-datetime, before the first event whose time is at or
// after the target's second (the whole transaction it is in left out);
// with --stop-position (a GTID per domain), after each domain's target
// transaction; otherwise at the end. A stop one relay position cannot
// express (domains whose transactions interleave around their targets, a
// domain the target does not name, a transaction at or before from after
// start) is an errRelay: the replay then keeps the pipe.
func planRelay(paths []string, start int64, from Position, t Target) (*relayPlan, error) {
	var want Position
	if t.GTID != "" {
		var err error
		if want, err = ParseTargetGTIDs(t.GTID); err != nil {
			return nil, err
		}
	}
	p := &relayPlan{last: Position{}}
	stopFile := -1
	for i, path := range paths {
		if stopFile >= 0 && t.GTID == "" {
			break // a time stops everything: nothing after it can count
		}
		sp := relaySpan{path: path, from: int64(len(binlog.Magic))}
		if i == 0 {
			sp.from = start
		}
		var refusal error
		file, err := binlog.ReadUnits(path, func(u binlog.Unit) error {
			if refusal != nil {
				return nil
			}
			if u.Start == int64(len(binlog.Magic)) && u.Type == formatDescription {
				sp.fdeEnd = u.End
				if i == 0 {
					return nil // read whatever the start position
				}
			}
			apply, why := p.unit(u, sp.from, from, t, want)
			switch {
			case why != "":
				refusal = errRelay(why)
			case u.End <= sp.from:
			case stopFile >= 0 && apply && u.Group:
				refusal = errRelay(fmt.Sprintf("transaction %s comes after one the target leaves out", u.GTID))
			case stopFile >= 0:
			case !apply:
				stopFile, sp.to = i, u.Start
			case applierDiffers(u.Statements) != "":
				refusal = errRelay(fmt.Sprintf("the transaction at %d of %s %s", u.Start, filepath.Base(path), applierDiffers(u.Statements)))
			case u.Group:
				p.last[u.GTID.Domain] = last{u.GTID.Server, u.GTID.Seq}
			}
			return nil
		})
		switch {
		case err != nil:
			return nil, errRelay(err.Error())
		case refusal != nil:
			return nil, refusal
		case sp.fdeEnd == 0:
			return nil, errRelay(filepath.Base(path) + " does not start with a format description")
		case stopFile >= 0 && stopFile < i:
			continue
		case stopFile < 0:
			st, err := os.Stat(path)
			if err != nil {
				return nil, err
			}
			sp.to = st.Size()
		}
		sp.file, sp.from = file, max(sp.from, sp.fdeEnd)
		p.spans = append(p.spans, sp)
	}
	return p, nil
}

// unit decides one unit of the archive: whether mariadb-binlog, started
// at byte floor (and GTID position from, for a GTID target) and stopping
// at t, passes it on; why is set when the relay logs cannot follow it.
func (p *relayPlan) unit(u binlog.Unit, floor int64, from Position, t Target, want Position) (apply bool, why string) {
	in := u.Group && len(from) > 0 && from.reaches(Position{u.GTID.Domain: {u.GTID.Server, u.GTID.Seq}})
	switch {
	case u.End <= floor && u.Group && len(from) > 0 && !in:
		return false, fmt.Sprintf("transaction %s lies before the start position %d but after GTID position %s", u.GTID, floor, from)
	case u.End <= floor:
		return false, ""
	case u.Start < floor:
		return false, fmt.Sprintf("the start position %d is inside the transaction at %d", floor, u.Start)
	case in:
		return false, fmt.Sprintf("transaction %s comes after the start position but is already in GTID position %s", u.GTID, from)
	case t.End:
		return true, ""
	case t.GTID != "" && !u.Group:
		return true, ""
	case t.GTID != "":
		w, ok := want[u.GTID.Domain]
		if !ok {
			return false, fmt.Sprintf("the target names no position for the domain of transaction %s", u.GTID)
		}
		return u.GTID.Seq <= w.seq, ""
	}
	return int64(u.MaxTime) < t.Time.Unix(), ""
}

// applierDiffers says why the server's applier would not run the
// statements as a client does, "" when it would: a replica marks the
// events it creates or alters DISABLE ON SLAVE, and XA transactions and
// statements that cannot be read are not known to apply alike. A match is
// on words, so a table named event keeps the pipe too: that costs speed,
// never exactness.
func applierDiffers(stmts []string) string {
	for _, q := range stmts {
		switch {
		case q == "?":
			return "holds a statement that cannot be read (a compressed event)"
		case xaStatement.MatchString(q):
			return "is an XA transaction"
		case eventDDL.MatchString(q):
			return "creates or alters an event, which a replica would mark DISABLE ON SLAVE"
		}
	}
	return ""
}

var (
	xaStatement = regexp.MustCompile(`(?i)^\s*XA\b`)
	eventDDL    = regexp.MustCompile(`(?is)\b(CREATE|ALTER)\b.*\bEVENT\b`)
)

// formatDescription is the type of the event that starts a binary log.
const formatDescription = 15

// relayName is the name of the n-th relay log (from 1) in dir.
func relayName(dir string, n int) string {
	return filepath.Join(dir, fmt.Sprintf("relay-bin.%06d", n))
}

// write writes the plan's relay logs into dir, one per span and then an
// empty one, and their index: each starts with its archived file's format
// description and the Rotate event a replica's I/O thread would have
// written, and holds the span's bytes. The applier stops at the empty
// one's first event (the UNTIL position), which is after everything the
// plan applies.
func (p *relayPlan) write(dir string) (until string, err error) {
	var index strings.Builder
	for i, sp := range p.spans {
		name := relayName(dir, i+1)
		if err := writeRelayLog(name, sp, sp.from, sp.to); err != nil {
			return "", err
		}
		index.WriteString(name + "\n")
	}
	lastSpan := p.spans[len(p.spans)-1]
	sentinel := relayName(dir, len(p.spans)+1)
	if err := writeRelayLog(sentinel, lastSpan, 0, 0); err != nil {
		return "", err
	}
	index.WriteString(sentinel + "\n")
	if err := os.WriteFile(filepath.Join(dir, "relay-bin.index"), []byte(index.String()), 0o600); err != nil {
		return "", err
	}
	return filepath.Base(sentinel), nil
}

// writeRelayLog writes the relay log name: the magic, sp's file's format
// description, an artificial Rotate naming that file, and its bytes
// [from, to).
func writeRelayLog(name string, sp relaySpan, from, to int64) (err error) {
	src, err := os.Open(sp.path)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := dst.Close(); err == nil {
			err = cerr
		}
	}()
	w := bufio.NewWriterSize(dst, 1<<20)
	if _, err := io.Copy(w, io.NewSectionReader(src, 0, sp.fdeEnd)); err != nil {
		return fmt.Errorf("write relay log %s: %w", name, err)
	}
	if _, err := w.Write(binlog.ArtificialRotate(filepath.Base(sp.path), sp.file.ServerID, sp.file.CRC)); err != nil {
		return err
	}
	if to > from {
		if _, err := io.Copy(w, io.NewSectionReader(src, from, to-from)); err != nil {
			return fmt.Errorf("write relay log %s: %w", name, err)
		}
	}
	return w.Flush()
}
