package pitr

import (
	"errors"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/restore"
)

// A target reads as restore and verify take it: times in UTC or with an
// offset, end, GTIDs; what cannot be read is refused.
func TestParseTarget(t *testing.T) {
	utc := time.Date(2026, 11, 21, 10, 15, 0, 0, time.UTC)
	for _, c := range []struct {
		until, gtid, base string
		named             bool
		want              Target // zero for refused
	}{
		{until: "2026-11-21 10:15:00", want: Target{Time: utc}},
		{until: "2026-11-21 10:15", want: Target{Time: utc}},
		{until: "2026-11-21T11:15:00+01:00", want: Target{Time: utc}},
		{until: "2026-11-21 11:15:00+01:00", want: Target{Time: utc}},
		{until: "end", base: "logical", want: Target{End: true, Base: "logical"}},
		{gtid: "0-1-5,1-2-7", want: Target{GTID: "0-1-5,1-2-7"}},
		{until: "soon"},
		{gtid: "0-1-5,0-2-7"},
		{until: "end", gtid: "0-1-5"},
		{until: "end", base: "binlog"},
		{until: "end", named: true},
	} {
		got, err := ParseTarget(c.until, c.gtid, "", c.base, c.named)
		var re *restore.RefusedError
		switch {
		case c.want == Target{} && !errors.As(err, &re):
			t.Errorf("%q %q %q: %v, %v; want refused", c.until, c.gtid, c.base, got, err)
		case c.want != Target{} && (err != nil || got != c.want || !got.Time.Equal(c.want.Time)):
			t.Errorf("%q %q %q: %+v, %v; want %+v", c.until, c.gtid, c.base, got, err, c.want)
		}
	}
}

func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"2026-11-21 10:15:00", "end", "0-1-5,1-2-7", "2026-11-21T11:15:00+01:00"} {
		f.Add(s, "")
		f.Add("", s)
	}
	f.Fuzz(func(t *testing.T, until, gtid string) {
		if until == "" && gtid == "" {
			return // a target is asked for by one of them
		}
		if _, err := ParseTarget(until, gtid, "", "", false); err != nil {
			var re *restore.RefusedError
			if !errors.As(err, &re) {
				t.Errorf("%q %q: %v is not a refusal", until, gtid, err)
			}
		}
	})
}
