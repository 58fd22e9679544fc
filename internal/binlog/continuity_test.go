package binlog

import (
	"errors"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/repo"
)

// TestSourceBreaks: what the archive holds of a source, against the
// numbering of its files, its gap markers and its head, in each way an
// object can be lost, and in the states a running archiver leaves that
// are not losses.
func TestSourceBreaks(t *testing.T) {
	whole := func(n string) heldFile {
		return heldFile{name: "mariadb-bin." + n, whole: true, end: 1000, headed: true}
	}
	segs := func(n string, end int64) heldFile { return heldFile{name: "mariadb-bin." + n, end: end, headed: true} }
	legacy := func(h heldFile) heldFile { h.headed = false; return h }
	head := func(n string, end int64, w bool) *repo.BinlogHead {
		return &repo.BinlogHead{Source: "db-1", File: "mariadb-bin." + n, End: end, Whole: w}
	}
	gap := []repo.BinlogGap{{Source: "db-1", After: "mariadb-bin.000002", Before: "mariadb-bin.000005"}}
	for _, c := range []struct {
		name    string
		held    []heldFile
		gaps    []repo.BinlogGap
		head    *repo.BinlogHead
		headErr error
		want    string // in the only break's message; "" for none
		tail    bool
	}{
		{"whole and segments, head at the newest segment", []heldFile{whole("000001"), whole("000002"), segs("000003", 500)}, nil, head("000003", 500, false), nil, "", false},
		{"a run stored an object and died before the head", []heldFile{whole("000001"), whole("000002"), segs("000003", 700)}, nil, head("000003", 500, false), nil, "", false},
		{"the file whole, its segments gone", []heldFile{whole("000001"), whole("000002")}, nil, head("000002", 500, false), nil, "", false},
		{"a file from the middle", []heldFile{whole("000001"), whole("000003")}, nil, head("000003", 1000, true), nil, "mariadb-bin.000002, archived between", false},
		{"files never archived, recorded", []heldFile{whole("000001"), whole("000002"), whole("000005")}, gap, head("000005", 1000, true), nil, "", false},
		{"segments of a file purged before it was archived whole, recorded", []heldFile{whole("000002"), segs("000003", 300), whole("000005")}, gap, head("000005", 1000, true), nil, "", false},
		{"the newest whole file", []heldFile{whole("000001"), whole("000002")}, nil, head("000003", 1000, true), nil, "mariadb-bin.000003, archived up to offset 1000", true},
		{"the newest files", []heldFile{whole("000001")}, nil, head("000004", 1000, true), nil, "mariadb-bin.000002 .. mariadb-bin.000003 and mariadb-bin.000004", true},
		{"the newest segment", []heldFile{whole("000001"), segs("000002", 300)}, nil, head("000002", 500, false), nil, "bytes 300..500 of mariadb-bin.000002", true},
		{"the rest of a file held as segments", []heldFile{segs("000001", 300), whole("000002")}, nil, head("000002", 1000, true), nil, "mariadb-bin.000001 is held only as segments, up to offset 300", false},
		{"the head", []heldFile{whole("000001"), segs("000002", 300)}, nil, nil, nil, "head object binlogs/db-1/head.json is missing", true},
		{"a damaged head", []heldFile{whole("000001")}, nil, nil, errors.New("binlog head damaged"), "binlog head damaged: the end", true},
		{"an archive older than heads", []heldFile{legacy(whole("000001")), legacy(whole("000002"))}, nil, nil, nil, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := sourceBreaks("db-1", c.held, c.gaps, c.head, c.headErr)
			switch {
			case c.want == "" && len(got) > 0:
				t.Errorf("breaks %v, want none", got)
			case c.want != "" && len(got) != 1:
				t.Errorf("breaks %v, want one naming %q", got, c.want)
			case c.want != "" && (!strings.Contains(got[0].Error(), c.want) || got[0].Tail != c.tail):
				t.Errorf("break %q (tail %v), want one naming %q (tail %v)", got[0].Error(), got[0].Tail, c.want, c.tail)
			}
		})
	}
}
