package pitr

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/binlog"
	"github.com/backstream/backstream/internal/repo"
)

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

// notWhole says that no logical backup took the whole server.
func notWhole(*archive.Manifest) (bool, error) { return false, nil }

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
		got, err := chooseBackup(ms, tt.target, notWhole)
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
		got, err := chooseBackup(tt.ms, tt.target, notWhole)
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

// A logical backup of the whole server is a base as a physical one is,
// the newest before the target of either kind, or of the kind --base
// names; one limited to some databases never is.
func TestChooseLogicalBase(t *testing.T) {
	ms := []*archive.Manifest{
		backup("p1", archive.KindPhysical, "bin.000001", "0-1-10", t0),
		backup("l2", archive.KindLogical, "bin.000002", "0-1-20", t0.Add(time.Hour)),
		backup("l3", archive.KindLogical, "bin.000003", "0-1-30", t0.Add(2*time.Hour)), // limited to some databases
		backup("p4", archive.KindPhysical, "bin.000004", "0-1-40", t0.Add(3*time.Hour)),
	}
	var asked []string
	whole := func(m *archive.Manifest) (bool, error) {
		asked = append(asked, m.ID)
		return m.ID == "l2", nil
	}
	for _, tt := range []struct {
		name   string
		target Target
		want   string
	}{
		{"the newest, physical", Target{End: true}, "p4"},
		{"the newest before, logical", Target{Time: t0.Add(3*time.Hour - time.Second)}, "l2"},
		{"GTID in a logical backup's range", Target{GTID: "0-1-35"}, "l2"},
		{"--base physical", Target{Time: t0.Add(3*time.Hour - time.Second), Base: archive.KindPhysical}, "p1"},
		{"--base logical", Target{End: true, Base: archive.KindLogical}, "l2"},
	} {
		got, err := chooseBackup(ms, tt.target, whole)
		if err != nil || got.ID != tt.want {
			t.Errorf("%s: chooseBackup(%s) = %v, %v; want %s", tt.name, tt.target, got, err, tt.want)
		}
	}
	asked = nil
	chooseBackup(ms, Target{End: true}, whole)
	if len(asked) != 0 {
		t.Errorf("catalogs of %v read, though the newest backup is physical", asked)
	}
	if _, err := chooseBackup(ms[2:3], Target{End: true}, whole); err == nil || !strings.Contains(err.Error(), "nor logical backup of the whole server with one") {
		t.Errorf("only a limited logical backup: %v; want a refusal", err)
	}
	if _, err := chooseBackup(ms, Target{Time: t0.Add(90 * time.Minute), Base: archive.KindLogical}, whole); err != nil {
		t.Errorf("--base logical after l2: %v", err)
	}
	if _, err := chooseBackup(ms[3:], Target{End: true, Base: archive.KindLogical}, whole); err == nil || !strings.Contains(err.Error(), "no --database, --table or --skip-") {
		t.Errorf("--base logical without one: %v; want a refusal saying what a logical base is", err)
	}
}

// binlogFile is an archived binary log's manifest.
func binlogFile(source, name, lastGTID string, last time.Time) *archive.Manifest {
	return &archive.Manifest{ID: name, Kind: archive.KindBinlog,
		Binlog: &archive.BinlogFile{Source: source, Name: name, LastGTID: lastGTID, LastTime: last, Closed: true}}
}

// entries are the repository's entries of archived binary logs ms.
func entries(ms ...*archive.Manifest) []repo.BinlogEntry {
	var out []repo.BinlogEntry
	for _, m := range ms {
		out = append(out, repo.BinlogEntry{Source: m.Binlog.Source, Name: m.Binlog.Name, Manifest: m})
	}
	return out
}

func names(cs []covered) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func TestCoveringFiles(t *testing.T) {
	base := backup("b1", archive.KindPhysical, "bin.000002", "0-1-20", t0)
	// Sorted by source, then name, as Repo.Binlogs returns them.
	files := entries(
		binlogFile("db1-1", "bin.000001", "0-1-10", t0.Add(-time.Hour)),
		binlogFile("db1-1", "bin.000002", "0-1-25", t0.Add(time.Hour)),
		binlogFile("db1-1", "bin.000003", "0-1-30", t0.Add(2*time.Hour)),
		binlogFile("db1-1", "bin.000004", "0-1-40", t0.Add(3*time.Hour)),
		binlogFile("db2-1", "bin.000009", "0-1-99", t0.Add(9*time.Hour)), // another server
	)
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
		got, err := coveringFiles(base, files, nil, nil, tt.target, nil)
		if err != nil || strings.Join(names(got), " ") != strings.Join(tt.want, " ") {
			t.Errorf("%s: coveringFiles(%s) = %q, %v; want %q", tt.name, tt.target, names(got), err, tt.want)
		}
	}

	gap := []repo.BinlogEntry{files[1], files[3]}
	otherHost := backup("b9", archive.KindPhysical, "bin.000002", "0-1-20", t0)
	otherHost.Server.Hostname = "db3"
	for _, tt := range []struct {
		name   string
		base   *archive.Manifest
		files  []repo.BinlogEntry
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
		got, err := coveringFiles(tt.base, tt.files, nil, nil, tt.target, nil)
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

// A damaged manifest among the archived files stops a restore only when
// the replay needs that file, and then as damage naming it.
func TestCoveringFilesWithDamage(t *testing.T) {
	base := backup("b1", archive.KindPhysical, "bin.000002", "0-1-20", t0)
	files := entries(
		binlogFile("db1-1", "bin.000002", "0-1-25", t0.Add(time.Hour)),
		binlogFile("db1-1", "bin.000003", "0-1-30", t0.Add(2*time.Hour)),
		binlogFile("db1-1", "bin.000004", "0-1-40", t0.Add(3*time.Hour)),
	)
	damage := archive.Corruptf("binlog db1-1/bin.000003: binlogs/db1-1/bin.000003/manifest.json is damaged: unexpected end of JSON input")
	files[1] = repo.BinlogEntry{Source: "db1-1", Name: "bin.000003", Damage: damage}
	got, err := coveringFiles(base, files, nil, nil, Target{Time: t0.Add(30 * time.Minute)}, nil)
	if err != nil || strings.Join(names(got), " ") != "bin.000002" {
		t.Errorf("a target before the damaged file: %q, %v; want bin.000002", names(got), err)
	}
	for _, target := range []Target{{Time: t0.Add(3 * time.Hour)}, {GTID: "0-1-35"}} {
		got, err := coveringFiles(base, files, nil, nil, target, nil)
		if !archive.IsCorrupt(err) || !strings.Contains(err.Error(), "binlogs/db1-1/bin.000003/manifest.json") || !strings.Contains(err.Error(), "b1") {
			t.Errorf("a target past the damaged file (%s): %q, %v; want damage naming the manifest and the backup", target, names(got), err)
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

// The file being written when archiving last stored comes after the
// whole files as its segments, in order, contiguous from offset 0 (a
// second cut of the same bytes is skipped); the header of its last
// segment says what it reaches. A hole between segments is damage naming
// it, but only when the replay needs that file; segments of a file
// archived whole since are not used.
func TestCoveringFilesWithSegments(t *testing.T) {
	base := backup("b1", archive.KindPhysical, "bin.000002", "0-1-20", t0)
	files := entries(
		binlogFile("db1-1", "bin.000002", "0-1-25", t0.Add(time.Hour)),
		binlogFile("db1-1", "bin.000003", "0-1-30", t0.Add(2*time.Hour)),
	)
	seg := func(name string, a, b int64) repo.BinlogSegment {
		return repo.BinlogSegment{Source: "db1-1", Name: name, Start: a, End: b}
	}
	// Leftovers of bin.000003, archived whole since; bin.000004 active.
	segs := []repo.BinlogSegment{seg("bin.000003", 0, 50), seg("bin.000004", 0, 100), seg("bin.000004", 0, 150), seg("bin.000004", 100, 200), seg("bin.000004", 200, 300)}
	var read []string
	last := func(s repo.BinlogSegment) (binlog.Segment, error) {
		read = append(read, fmt.Sprintf("%s:%d", s.Name, s.Start))
		return binlog.Segment{BinlogFile: archive.BinlogFile{Source: s.Source, Name: s.Name, LastGTID: "0-1-35", LastTime: t0.Add(2*time.Hour + 30*time.Minute)}, Start: s.Start, End: s.End}, nil
	}
	for _, target := range []Target{{Time: t0.Add(2*time.Hour + 30*time.Minute)}, {GTID: "0-1-35"}} {
		read = nil
		got, err := coveringFiles(base, files, segs, nil, target, last)
		if err != nil || strings.Join(names(got), " ") != "bin.000002 bin.000003 bin.000004" {
			t.Fatalf("%s: %q, %v; want bin.000002 .. bin.000004", target, names(got), err)
		}
		var chain []string
		for _, s := range got[2].Segments {
			chain = append(chain, fmt.Sprintf("%d-%d", s.Start, s.End))
		}
		if got[1].Whole == nil || got[2].Whole != nil || strings.Join(chain, " ") != "0-150 100-200 200-300" || strings.Join(read, " ") != "bin.000004:200" {
			t.Errorf("%s: bin.000003 whole %v, bin.000004 segments %v, headers read %v", target, got[1].Whole != nil, chain, read)
		}
	}
	if _, err := coveringFiles(base, files, segs, nil, Target{GTID: "0-1-36"}, last); err == nil || !strings.Contains(err.Error(), "the last archived file, bin.000004, ends at 2026-11-21 12:30:00 UTC (GTID 0-1-35)") {
		t.Errorf("past the segments: %v", err)
	}

	holed := []repo.BinlogSegment{seg("bin.000004", 0, 100), seg("bin.000004", 120, 300)}
	if got, err := coveringFiles(base, files, holed, nil, Target{GTID: "0-1-30"}, last); err != nil || len(got) != 2 {
		t.Errorf("a hole in a file the target is reached before: %q, %v", names(got), err)
	}
	_, err := coveringFiles(base, files, holed, nil, Target{GTID: "0-1-31"}, last)
	if !archive.IsCorrupt(err) || !strings.Contains(err.Error(), "bytes 100..120 are in no segment") || !strings.Contains(err.Error(), "binlogs/db1-1/bin.000004/segments/") {
		t.Errorf("a hole in a needed file: %v; want damage naming the missing bytes", err)
	}

	// Segments of a file the server moved past: the rest of it is in no
	// object, so nothing after it is reached.
	stale := append(entries(binlogFile("db1-1", "bin.000005", "0-1-50", t0.Add(4*time.Hour))), files...)
	slices.SortFunc(stale, func(a, b repo.BinlogEntry) int { return strings.Compare(a.Name, b.Name) })
	_, err = coveringFiles(base, stale, segs, nil, Target{GTID: "0-1-50"}, last)
	if err == nil || !strings.Contains(err.Error(), "binary log bin.000004 of db1-1 is archived only as segments, up to offset 300, and bin.000005 follows it") {
		t.Errorf("segments before a whole file: %v", err)
	}
}

// One server's binary logs never replay onto another's backup: with
// several servers' backups, the server must be named, and only its
// backups are chosen.
func TestChooseBackupPerServer(t *testing.T) {
	other := backup("o1", archive.KindPhysical, "bin.000009", "0-2-90", t0.Add(5*time.Hour))
	other.Server = archive.Server{Hostname: "db2", ServerID: 2}
	ms := []*archive.Manifest{backup("b1", archive.KindPhysical, "bin.000001", "0-1-10", t0), other}
	if _, err := chooseBackup(ms, Target{End: true}, notWhole); err == nil || !strings.Contains(err.Error(), "db1-1, db2-2") || !strings.Contains(err.Error(), "--server") {
		t.Errorf("two servers, none named: %v; want a refusal naming both", err)
	}
	if got, err := chooseBackup(ms, Target{End: true, Server: "db1-1"}, notWhole); err != nil || got.ID != "b1" {
		t.Errorf("--server db1-1: %v, %v; want b1", got, err)
	}
	if _, err := chooseBackup(ms, Target{End: true, Server: "db3-3"}, notWhole); err == nil || !strings.Contains(err.Error(), "db3-3") {
		t.Errorf("an unknown server: %v", err)
	}
	if got, err := chooseBackup(ms, Target{GTID: "0-1-10,1-1-3", Server: "db1-1"}, notWhole); err != nil || got.ID != "b1" {
		t.Errorf("two-domain GTID target: %v, %v", got, err)
	}
}

func TestParseTargetGTIDs(t *testing.T) {
	p, err := ParseTargetGTIDs("1-7-3, 0-7-12")
	if err != nil || p.String() != "0-7-12,1-7-3" {
		t.Errorf("two domains: %v, %v", p, err)
	}
	for _, bad := range []string{"", "0-1-2,0-1-3", "0-1-2,", "x"} {
		if _, err := ParseTargetGTIDs(bad); err == nil {
			t.Errorf("ParseTargetGTIDs(%q): no error", bad)
		}
	}
}

// The scanner keeps each domain's last transaction header of
// mariadb-binlog's output, whatever lies between (long base64 lines).
func TestGtidScanner(t *testing.T) {
	out := "# at 4\n#261125  0:39:43 server id 7  end_log_pos 364 CRC32 0xe25c9985 \tGTID 0-7-1 ddl\nBINLOG '\n" +
		strings.Repeat("A", 100000) + "\tGTID 9-9-9\n'/*!*/;\n#261125 server id 7 \tGTID 1-7-4 trans\n#261125 server id 7 \tGTID 0-7-2 trans\n"
	g := &gtidScanner{pos: Position{}}
	for i := 0; i < len(out); i += 7 { // in pieces, as a pipe delivers it
		g.Write([]byte(out[i:min(i+7, len(out))]))
	}
	if got := g.pos.String(); got != "0-7-2,1-7-4" {
		t.Errorf("scanned %s, want 0-7-2,1-7-4", got)
	}
}

// Where the archive of the backup's server ends at the GTID a link names,
// the files go on with the server that continues it, from the link's file
// (replayed from its offset) on; a link from another GTID is not crossed.
func TestCoveringFilesAcrossLink(t *testing.T) {
	base := backup("b1", archive.KindPhysical, "bin.000002", "0-1-20", t0)
	files := entries(
		binlogFile("db1-1", "bin.000002", "0-1-25", t0.Add(time.Hour)),
		binlogFile("db1-1", "bin.000003", "0-1-30", t0.Add(2*time.Hour)),
		binlogFile("db2-2", "bin.000002", "0-1-30", t0.Add(2*time.Hour)),
		binlogFile("db2-2", "bin.000003", "0-2-40", t0.Add(3*time.Hour)),
	)
	link := repo.BinlogLink{Source: "db2-2", Continues: "db1-1", GTID: "0-1-30", File: "bin.000002", Offset: 700}
	for _, tt := range []struct {
		target Target
		want   string
	}{
		{Target{End: true}, "db1-1/bin.000002@0 db1-1/bin.000003@0 db2-2/bin.000002@700 db2-2/bin.000003@0"},
		{Target{Time: t0.Add(2*time.Hour + time.Second)}, "db1-1/bin.000002@0 db1-1/bin.000003@0 db2-2/bin.000002@700 db2-2/bin.000003@0"},
		{Target{GTID: "0-1-28"}, "db1-1/bin.000002@0 db1-1/bin.000003@0"},
	} {
		got, err := coveringFiles(base, files, nil, []repo.BinlogLink{link}, tt.target, nil)
		var s []string
		for _, c := range got {
			s = append(s, fmt.Sprintf("%s/%s@%d", c.Source, c.Name, c.From))
		}
		if err != nil || strings.Join(s, " ") != tt.want {
			t.Errorf("coveringFiles(%s) across the link = %q, %v; want %q", tt.target, s, err, tt.want)
		}
	}
	stale := link
	stale.GTID = "0-1-29"
	got, err := coveringFiles(base, files, nil, []repo.BinlogLink{stale}, Target{End: true}, nil)
	if err != nil || len(got) != 2 {
		t.Errorf("a link from a GTID the archive does not end at: %q, %v; want db1-1's files only", names(got), err)
	}
	if _, err := coveringFiles(base, files[:2], nil, []repo.BinlogLink{link}, Target{End: true}, nil); err == nil || !strings.Contains(err.Error(), "where it continues db1-1 after GTID 0-1-30") {
		t.Errorf("a link to files not archived: %v; want a refusal naming the link", err)
	}
}
