// Package gtid reads and writes MariaDB global transaction ids
// (domain-server-sequence) and the comma-separated lists the server shows
// them in (gtid_binlog_pos, gtid_slave_pos, a GTID list event, a
// manifest's positions). It knows nothing of binary log files or backups.
package gtid

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// GTID is one global transaction id.
type GTID struct {
	Domain, Server uint32
	Seq            uint64
}

func (g GTID) String() string { return fmt.Sprintf("%d-%d-%d", g.Domain, g.Server, g.Seq) }

// IsZero reports a missing GTID.
func (g GTID) IsZero() bool { return g == GTID{} }

// ErrSyntax is what Parse says of anything but domain-server-sequence.
var ErrSyntax = errors.New("want domain-server-sequence, e.g. 0-1-4711")

// Parse reads one GTID, domain-server-sequence, in decimal: nothing
// before, between or after (no sign, no blank).
func Parse(s string) (GTID, error) {
	parts := strings.Split(s, "-")
	if len(parts) != 3 {
		return GTID{}, ErrSyntax
	}
	d, err1 := number(parts[0], 32)
	sv, err2 := number(parts[1], 32)
	sq, err3 := number(parts[2], 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return GTID{}, ErrSyntax
	}
	return GTID{Domain: uint32(d), Server: uint32(sv), Seq: sq}, nil
}

// number reads digits only: strconv takes a sign too.
func number(s string, bits int) (uint64, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, ErrSyntax
	}
	return strconv.ParseUint(s, 10, bits)
}

// ParseList reads a comma-separated list, each entry trimmed of blanks;
// an empty or blank list is none. The first entry that is no GTID is the
// error, naming it.
func ParseList(s string) ([]GTID, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []GTID
	for _, part := range strings.Split(s, ",") {
		g, err := Parse(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("%q: %w", strings.TrimSpace(part), err)
		}
		out = append(out, g)
	}
	return out, nil
}

// Entries reads a comma-separated list as ParseList does, leaving out the
// entries that are no GTID: for lists read from a server or a manifest,
// where one unreadable entry must not hide the others.
func Entries(s string) []GTID {
	var out []GTID
	for _, part := range strings.Split(s, ",") {
		if g, err := Parse(strings.TrimSpace(part)); err == nil {
			out = append(out, g)
		}
	}
	return out
}
