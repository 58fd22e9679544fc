package pitr

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/binlog"
	"github.com/backstream/backstream/internal/gtid"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/restore"
)

// Target is the point to restore to: a time, GTIDs (one per domain) whose
// transactions are the last ones replayed, or the end of the archive.
type Target struct {
	Time time.Time
	GTID string // domain-server-sequence, comma-separated, at most one per domain
	End  bool
	// Server, when not empty, names the server (hostname-server_id, as
	// list shows it) whose backups and binary logs are used; it is needed
	// when the repository holds more than one server's.
	Server string
	// Base, when not empty, is the kind of backup to start from
	// (archive.KindPhysical or archive.KindLogical); empty takes the
	// newest of either.
	Base string
}

func (t Target) String() string {
	switch {
	case t.End:
		return "the end of the archived binary logs"
	case t.GTID != "":
		return "GTID " + t.GTID
	}
	return t.Time.UTC().Format(time.DateTime) + " UTC"
}

// ParseTarget reads a target as restore and verify are asked for one:
// until (a time, or end) or untilGTID, the server and the base's kind.
// named says a backup was named too, which a target refuses: it chooses
// its backup itself. What cannot be read is a *restore.RefusedError.
func ParseTarget(until, untilGTID, server, base string, named bool) (Target, error) {
	t := Target{Server: server, Base: base}
	switch {
	case base != "" && base != archive.KindPhysical && base != archive.KindLogical:
		return t, refusedf("--base %q: want physical or logical", base)
	case named:
		return t, refusedf("--until and --until-gtid choose the backup themselves; give no backup id")
	case until != "" && untilGTID != "":
		return t, refusedf("give --until or --until-gtid, not both")
	case until == "end":
		t.End = true
	case until != "":
		tm, err := parseUntil(until)
		if err != nil {
			return t, &restore.RefusedError{Err: err}
		}
		t.Time = tm
	default:
		if _, err := ParseTargetGTIDs(untilGTID); err != nil {
			return t, refusedf("--until-gtid %q: %v", untilGTID, err)
		}
		t.GTID = untilGTID
	}
	return t, nil
}

// parseUntil reads a point in time: "2006-01-02 15:04:05" (UTC) or RFC 3339
// (also with a space for the T, as RFC 3339 allows).
func parseUntil(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	for _, layout := range []string{time.DateTime, "2006-01-02T15:04:05", "2006-01-02 15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--until %q: want a time like 2026-11-21 10:15:00 (UTC), 2026-11-21T10:15:00+01:00, or end", s)
}

func refusedf(format string, a ...any) error {
	return &restore.RefusedError{Err: fmt.Errorf(format, a...)}
}

// last is the last transaction of one domain in a Position.
type last struct {
	server uint32
	seq    uint64
}

// Position is a GTID position as the server shows it (gtid_binlog_pos,
// gtid_slave_pos, a GTID list event): per domain, its last transaction.
type Position map[uint32]last

// ParsePosition reads a comma-separated list of GTIDs. A domain listed
// more than once (gtid_binlog_state lists one entry per server) keeps its
// highest sequence.
func ParsePosition(s string) (Position, error) {
	list, err := gtid.ParseList(s)
	if err != nil {
		return nil, err
	}
	p := Position{}
	for _, g := range list {
		if old, ok := p[g.Domain]; !ok || g.Seq > old.seq {
			p[g.Domain] = last{g.Server, g.Seq}
		}
	}
	return p, nil
}

// ParseTargetGTIDs reads --until-gtid: one GTID per domain.
func ParseTargetGTIDs(s string) (Position, error) {
	if strings.TrimSpace(s) == "" {
		return nil, gtid.ErrSyntax
	}
	list, err := gtid.ParseList(s)
	if err != nil {
		return nil, err
	}
	seen := map[uint32]bool{}
	for _, g := range list {
		if seen[g.Domain] {
			return nil, fmt.Errorf("domain %d is named twice: give one GTID per domain", g.Domain)
		}
		seen[g.Domain] = true
	}
	return ParsePosition(s)
}

func (p Position) String() string {
	var out []string
	for _, d := range p.domains() {
		out = append(out, fmt.Sprintf("%d-%d-%d", d, p[d].server, p[d].seq))
	}
	return strings.Join(out, ",")
}

func (p Position) domains() []uint32 {
	var ds []uint32
	for d := range p {
		ds = append(ds, d)
	}
	slices.Sort(ds)
	return ds
}

// merge returns p with q's transactions where they are later.
func (p Position) merge(q Position) Position {
	out := Position{}
	for _, x := range []Position{p, q} {
		for d, g := range x {
			if old, ok := out[d]; !ok || g.seq > old.seq {
				out[d] = g
			}
		}
	}
	return out
}

// reaches reports whether p is at or past target in each of target's
// domains.
func (p Position) reaches(target Position) bool {
	for d, g := range target {
		if have, ok := p[d]; !ok || have.seq < g.seq {
			return false
		}
	}
	return true
}

// endOf is what is known of the GTID position at the end of the archived
// file files[i]: exactly the next file's GTID list, when there is one
// (exact is then true); otherwise a lower bound, the file's own list and
// its last GTID.
func endOf(files []repo.BinlogEntry, i int) (end Position, exact bool) {
	own := files[i].Manifest.Binlog
	end, _ = ParsePosition(own.Previous)
	if i+1 < len(files) && files[i+1].Manifest != nil && files[i+1].Source == files[i].Source {
		if next, err := ParsePosition(files[i+1].Manifest.Binlog.Previous); err == nil && len(next) > 0 {
			end, exact = end.merge(next), true
		}
	}
	last, _ := ParsePosition(own.LastGTID)
	return end.merge(last), exact
}

// reachedBy reports whether the archived files up to files[i] hold the
// target. The end of the newest archived file is known only as a lower
// bound (the next file's GTID list is not archived yet): a domain that
// file does not end with counts as not reached there, which refuses
// rather than replays short.
func (t Target) reachedBy(files []repo.BinlogEntry, i int) bool {
	switch {
	case t.End:
		return false
	case t.GTID != "":
		want, err := ParseTargetGTIDs(t.GTID)
		if err != nil {
			return false
		}
		end, _ := endOf(files, i)
		return end.reaches(want)
	}
	return !files[i].Manifest.Binlog.LastTime.Before(t.Time)
}

// checkReached fails when a GTID target was not reached: the replay
// passed on applied, from start.
func checkReached(t Target, start, applied Position) error {
	if t.GTID == "" {
		return nil
	}
	want, _ := ParseTargetGTIDs(t.GTID)
	if got := start.merge(applied); !got.reaches(want) {
		return fmt.Errorf("%s is past the archived binary logs: the replay ended at GTID %s; archive more with backstream binlog", t, got)
	}
	return nil
}

// unnamedDomains returns the domains that have transactions after start
// in the archived files needed (after is the GTID list that follows them,
// "" if none is archived) but no position in the GTID target: the
// replay, which stops each domain at the target's position, would leave
// their transactions out.
func (t Target) unnamedDomains(start Position, needed []covered, after string) Position {
	if t.GTID == "" {
		return nil
	}
	want, _ := ParseTargetGTIDs(t.GTID)
	seen, _ := ParsePosition(after)
	for _, c := range needed {
		for _, s := range []string{c.Index.Previous, c.Index.FirstGTID, c.Index.LastGTID} {
			p, _ := ParsePosition(s)
			seen = seen.merge(p)
		}
	}
	out := Position{}
	for d, g := range seen {
		if _, named := want[d]; named {
			continue
		}
		if s, ok := start[d]; !ok || g.seq > s.seq {
			out[d] = g
		}
	}
	return out
}

// sourceOf is the name list shows for the server of a manifest.
func sourceOf(m *archive.Manifest) string {
	return binlog.SourceKey(m.Server.Hostname, m.Server.ServerID)
}

// checkDomainsNamed refuses a GTID target that leaves out a domain with
// transactions after start: mariadb-binlog, given stop positions, passes
// on only the domains they name.
func checkDomainsNamed(t Target, start Position, files []repo.BinlogEntry, needed []covered) error {
	after := ""
	if len(needed) > 0 {
		last := needed[len(needed)-1].Index
		for i, e := range files {
			if e.Source == last.Source && e.Name == last.Name && i+1 < len(files) && files[i+1].Source == last.Source && files[i+1].Manifest != nil {
				after = files[i+1].Manifest.Binlog.Previous
			}
		}
	}
	extra := t.unnamedDomains(start, needed, after)
	if len(extra) == 0 {
		return nil
	}
	want, _ := ParseTargetGTIDs(t.GTID)
	return fmt.Errorf("--until-gtid %s names no position for GTID domain %s, which has transactions after the start (up to at least %s): give one GTID per domain, e.g. --until-gtid %s",
		t.GTID, joinDomains(extra), extra, want.merge(extra))
}

func joinDomains(p Position) string {
	var out []string
	for _, d := range p.domains() {
		out = append(out, fmt.Sprint(d))
	}
	return strings.Join(out, ", ")
}
