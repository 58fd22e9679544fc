package pitr

import (
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
)

func TestParseGTID(t *testing.T) {
	for _, tt := range []struct {
		in             string
		domain, server uint32
		seq            uint64
	}{
		{"0-1-4711", 0, 1, 4711},
		{"3-100-1", 3, 100, 1},
		{"4294967295-4294967295-18446744073709551615", 1<<32 - 1, 1<<32 - 1, 1<<64 - 1},
		{"00-01-007", 0, 1, 7},
	} {
		d, s, q, err := ParseGTID(tt.in)
		if err != nil || d != tt.domain || s != tt.server || q != tt.seq {
			t.Errorf("ParseGTID(%q) = %d, %d, %d, %v; want %d, %d, %d", tt.in, d, s, q, err, tt.domain, tt.server, tt.seq)
		}
	}
	for _, in := range []string{
		"", "0", "0-1", "0-1-2-3", "a-1-2", "0-b-2", "0-1-c", "-1-2", "0--2", "0-1-", " 0-1-2", "0-1-2 ",
		"4294967296-1-2", "0-4294967296-2", "0-1-18446744073709551616", "+0-1-2", "0-1-2,0-1-3", "0x1-1-2", "0-0x1-2", "0-1-0x2", "0-1-1_000",
	} {
		if d, s, q, err := ParseGTID(in); err == nil {
			t.Errorf("ParseGTID(%q) = %d, %d, %d, want an error", in, d, s, q)
		} else if !strings.Contains(err.Error(), "want domain-server-sequence") {
			t.Errorf("ParseGTID(%q): error %q does not say what a GTID looks like", in, err)
		}
	}
}

func TestGtidNotAfter(t *testing.T) {
	for _, tt := range []struct {
		pos, target string
		want        bool
	}{
		{"0-1-100", "0-1-100", true},
		{"0-1-100", "0-1-101", true},
		{"0-1-100", "0-1-99", false},
		{"0-1-100", "0-2-150", true}, // the server id does not matter
		{"0-1-100", "0-2-50", false},
		{"0-1-100,1-1-500", "1-1-400", false}, // the target's domain decides
		{"0-1-100,1-1-500", "1-1-600", true},
		{"0-1-100, 1-1-500", "1-1-499", false}, // spaces after commas
		{"0-1-100", "5-1-1", true},             // no transactions in the domain before the backup
		{"", "0-1-1", true},
		{"garbage,0-1-100", "0-1-99", false}, // unreadable entries are skipped
	} {
		got, err := gtidNotAfter(tt.pos, tt.target)
		if err != nil || got != tt.want {
			t.Errorf("gtidNotAfter(%q, %q) = %v, %v; want %v", tt.pos, tt.target, got, err, tt.want)
		}
	}
	for _, target := range []string{"", "0-1", "latest"} {
		if _, err := gtidNotAfter("0-1-100", target); err == nil || !strings.Contains(err.Error(), "--until-gtid") {
			t.Errorf("gtidNotAfter with target %q: %v, want an error naming --until-gtid", target, err)
		}
	}
}

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// backup is a manifest as Repo.List returns it.
func backup(id, kind, binlogFile, gtid string, finished time.Time) *archive.Manifest {
	return &archive.Manifest{ID: id, Kind: kind, Finished: finished,
		Server:    archive.Server{Hostname: "db1", ServerID: 1},
		Positions: archive.Positions{BinlogFile: binlogFile, BinlogPosition: 4, GTID: gtid}}
}

func TestChooseBackup(t *testing.T) {
	// Oldest first, as Repo.List returns them.
	ms := []*archive.Manifest{
		backup("b1", archive.KindPhysical, "bin.000001", "0-1-10", t0),
		backup("b2", archive.KindLogical, "bin.000002", "0-1-20", t0.Add(time.Hour)),
		backup("b3", archive.KindPhysical, "", "", t0.Add(2*time.Hour)), // no binlog position
		backup("b4", archive.KindPhysical, "bin.000003", "0-1-30,1-1-5", t0.Add(3*time.Hour)),
		backup("b5", archive.KindPhysical, "bin.000004", "0-1-40,1-1-9", t0.Add(4*time.Hour)),
	}
	for _, tt := range []struct {
		name   string
		target Target
		want   string
	}{
		{"long after the last", Target{Time: t0.Add(48 * time.Hour)}, "b5"},
		{"at the finish of the last", Target{Time: t0.Add(4 * time.Hour)}, "b5"},
		{"just before the last finished", Target{Time: t0.Add(4*time.Hour - time.Second)}, "b4"},
		{"skips logical and position-less backups", Target{Time: t0.Add(3*time.Hour - time.Second)}, "b1"},
		{"at the first", Target{Time: t0}, "b1"},
		{"GTID at the last", Target{GTID: "0-1-40"}, "b5"},
		{"GTID past the last", Target{GTID: "0-1-41"}, "b5"},
		{"GTID between", Target{GTID: "0-1-39"}, "b4"},
		{"GTID in another domain", Target{GTID: "1-1-6"}, "b4"},
		{"GTID in a domain no backup has", Target{GTID: "7-1-1"}, "b5"},
		{"GTID at the first", Target{GTID: "0-3-10"}, "b1"},
	} {
		got, err := chooseBackup(ms, tt.target)
		if err != nil || got.ID != tt.want {
			id := ""
			if got != nil {
				id = got.ID
			}
			t.Errorf("%s: chooseBackup(%s) = %q, %v; want %s", tt.name, tt.target, id, err, tt.want)
		}
	}
	for _, tt := range []struct {
		name   string
		ms     []*archive.Manifest
		target Target
		want   []string
	}{
		{"before the first", ms, Target{Time: t0.Add(-time.Second)},
			[]string{"2026-11-21 09:59:59 UTC is before the first usable backup, b1", "finished 2026-11-21 10:00:00 UTC", "GTID 0-1-10"}},
		{"GTID before the first", ms, Target{GTID: "0-1-9"}, []string{"GTID 0-1-9 is before the first usable backup, b1"}},
		{"bad GTID", ms, Target{GTID: "0-1"}, []string{`--until-gtid "0-1"`}},
		{"no physical backup", ms[1:3], Target{Time: t0.Add(48 * time.Hour)}, []string{"no physical backup with a binary log position"}},
		{"empty repository", nil, Target{Time: t0}, []string{"no physical backup with a binary log position"}},
	} {
		got, err := chooseBackup(tt.ms, tt.target)
		if err == nil {
			t.Errorf("%s: chooseBackup(%s) = %s, want an error", tt.name, tt.target, got.ID)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tt.name, err, w)
			}
		}
	}
}

// binlogFile is an archived binary log's manifest.
func binlogFile(source, name, lastGTID string, last time.Time) *archive.Manifest {
	return &archive.Manifest{ID: name, Kind: archive.KindBinlog,
		Binlog: &archive.BinlogFile{Source: source, Name: name, LastGTID: lastGTID, LastTime: last, Closed: true}}
}

func names(ms []*archive.Manifest) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Binlog.Name)
	}
	return out
}

func TestCoveringFiles(t *testing.T) {
	base := backup("b1", archive.KindPhysical, "bin.000002", "0-1-20", t0)
	// Sorted by source, then name, as Repo.Binlogs returns them.
	files := []*archive.Manifest{
		binlogFile("db1-1", "bin.000001", "0-1-10", t0.Add(-time.Hour)),
		binlogFile("db1-1", "bin.000002", "0-1-25", t0.Add(time.Hour)),
		binlogFile("db1-1", "bin.000003", "0-1-30", t0.Add(2*time.Hour)),
		binlogFile("db1-1", "bin.000004", "0-1-40", t0.Add(3*time.Hour)),
		binlogFile("db2-1", "bin.000009", "0-1-99", t0.Add(9*time.Hour)), // another server
	}
	for _, tt := range []struct {
		name   string
		target Target
		want   []string
	}{
		{"within the backup's file", Target{Time: t0.Add(30 * time.Minute)}, []string{"bin.000002"}},
		{"at the end of the backup's file", Target{Time: t0.Add(time.Hour)}, []string{"bin.000002"}},
		{"in the next file", Target{Time: t0.Add(time.Hour + time.Second)}, []string{"bin.000002", "bin.000003"}},
		{"in the last file", Target{Time: t0.Add(3 * time.Hour)}, []string{"bin.000002", "bin.000003", "bin.000004"}},
		{"GTID in the backup's file", Target{GTID: "0-1-21"}, []string{"bin.000002"}},
		{"GTID ending a file", Target{GTID: "0-1-30"}, []string{"bin.000002", "bin.000003"}},
		{"GTID in the last file", Target{GTID: "0-1-31"}, []string{"bin.000002", "bin.000003", "bin.000004"}},
	} {
		got, err := coveringFiles(base, files, tt.target)
		if err != nil || strings.Join(names(got), " ") != strings.Join(tt.want, " ") {
			t.Errorf("%s: coveringFiles(%s) = %q, %v; want %q", tt.name, tt.target, names(got), err, tt.want)
		}
	}

	gap := []*archive.Manifest{files[1], files[3]}
	otherHost := backup("b9", archive.KindPhysical, "bin.000002", "0-1-20", t0)
	otherHost.Server.Hostname = "db3"
	for _, tt := range []struct {
		name   string
		base   *archive.Manifest
		files  []*archive.Manifest
		target Target
		want   []string
	}{
		{"past the archive", base, files, Target{Time: t0.Add(3*time.Hour + time.Second)},
			[]string{"2026-11-21 13:00:01 UTC is past the archived binary logs of db1-1", "the last archived file, bin.000004, ends at 2026-11-21 13:00:00 UTC (GTID 0-1-40)", "backstream binlog"}},
		{"GTID past the archive", base, files, Target{GTID: "0-1-41"}, []string{"GTID 0-1-41 is past the archived binary logs of db1-1"}},
		{"GTID in a domain never logged", base, files, Target{GTID: "5-1-1"}, []string{"GTID 5-1-1 is past the archived binary logs"}},
		{"a gap", base, gap, Target{Time: t0.Add(3 * time.Hour)},
			[]string{"the archive has a gap before bin.000004: bin.000003 not archived, so 2026-11-21 13:00:00 UTC cannot be reached"}},
		{"the backup's file not archived", base, files[2:4], Target{Time: t0.Add(2 * time.Hour)},
			[]string{"binary log bin.000002 of db1-1, where backup b1 stands, is not archived (run backstream binlog)"}},
		{"no file of the backup's server", otherHost, files, Target{Time: t0.Add(time.Hour)},
			[]string{"binary log bin.000002 of db3-1, where backup b9 stands, is not archived"}},
		{"nothing archived", base, nil, Target{Time: t0}, []string{"binary log bin.000002 of db1-1"}},
	} {
		got, err := coveringFiles(tt.base, tt.files, tt.target)
		if err == nil {
			t.Errorf("%s: coveringFiles(%s) = %q, want an error", tt.name, tt.target, names(got))
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tt.name, err, w)
			}
		}
	}
}

func TestTargetString(t *testing.T) {
	if got := (Target{Time: time.Date(2026, 1, 2, 4, 5, 6, 0, time.FixedZone("X", 3600))}).String(); got != "2026-01-02 03:05:06 UTC" {
		t.Errorf("a time target reads %q", got)
	}
	if got := (Target{GTID: "0-1-2", Time: t0}).String(); got != "GTID 0-1-2" {
		t.Errorf("a GTID target reads %q", got)
	}
}
