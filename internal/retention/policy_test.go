package retention

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
)

// backupsAt makes one manifest per start time, ids in the repository's form.
func backupsAt(times ...string) []*archive.Manifest {
	var ms []*archive.Manifest
	for i, s := range times {
		t, err := time.Parse("2006-01-02 15:04", s)
		if err != nil {
			panic(err)
		}
		ms = append(ms, &archive.Manifest{ID: t.Format("20060102T150405Z") + fmt.Sprintf("-%04x", i), Started: t})
	}
	return ms
}

func kept(ds []Decision) map[string]string {
	out := map[string]string{}
	for _, d := range ds {
		if d.Keep {
			out[d.Manifest.Started.Format("2006-01-02 15:04")] = strings.Join(d.Reasons, ", ")
		}
	}
	return out
}

func TestPlan(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	// Fri 2026-11-20 is ISO week 47; Mon 2026-11-16 starts it.
	all := backupsAt("2026-11-01 03:00", "2026-11-08 03:00", "2026-11-14 03:00", "2026-11-15 23:00",
		"2026-11-16 01:00", "2026-11-19 03:00", "2026-11-20 03:00", "2026-11-20 15:00", "2026-11-21 03:00")
	tests := []struct {
		name string
		ms   []*archive.Manifest
		p    Policy
		want map[string]string
	}{
		{"keep-last 3", all, Policy{KeepLast: 3}, map[string]string{
			"2026-11-20 03:00": "keep-last 3", "2026-11-20 15:00": "keep-last 3", "2026-11-21 03:00": "keep-last 3"}},
		{"keep-last more than there are", all[:2], Policy{KeepLast: 5}, map[string]string{
			"2026-11-01 03:00": "keep-last 5", "2026-11-08 03:00": "keep-last 5"}},
		{"within 2d", all, Policy{KeepWithin: 48 * time.Hour}, map[string]string{
			"2026-11-20 03:00": "within 2d", "2026-11-20 15:00": "within 2d", "2026-11-21 03:00": "within 2d"}},
		{"within keeps only the newest when all are old", all[:3], Policy{KeepWithin: time.Hour}, map[string]string{
			"2026-11-14 03:00": "newest"}},
		{"daily 3: newest of each day", all, Policy{KeepDaily: 3}, map[string]string{
			"2026-11-19 03:00": "daily 2026-11-19", "2026-11-20 15:00": "daily 2026-11-20", "2026-11-21 03:00": "daily 2026-11-21"}},
		{"weekly 3: ISO weeks, Sunday ends a week", all, Policy{KeepWeekly: 3}, map[string]string{
			"2026-11-21 03:00": "weekly 2026-W47", "2026-11-15 23:00": "weekly 2026-W46", "2026-11-08 03:00": "weekly 2026-W45"}},
		{"combination: reasons add up", all, Policy{KeepLast: 1, KeepDaily: 2, KeepWeekly: 2}, map[string]string{
			"2026-11-21 03:00": "keep-last 1, daily 2026-11-21, weekly 2026-W47",
			"2026-11-20 15:00": "daily 2026-11-20", "2026-11-15 23:00": "weekly 2026-W46"}},
		{"weekly across a year boundary", backupsAt("2020-12-31 10:00", "2021-01-03 10:00", "2021-01-04 10:00"), Policy{KeepWeekly: 2},
			map[string]string{"2021-01-03 10:00": "weekly 2020-W53", "2021-01-04 10:00": "weekly 2021-W01"}},
		{"monthly 2: the newest of each calendar month", backupsAt("2026-09-30 23:00", "2026-10-01 01:00", "2026-10-31 23:00", "2026-11-01 00:30", "2026-11-20 03:00"),
			Policy{KeepMonthly: 2}, map[string]string{"2026-11-20 03:00": "monthly 2026-11", "2026-10-31 23:00": "monthly 2026-10"}},
		{"yearly 3: years without a backup do not count", backupsAt("2022-06-01 00:00", "2023-12-31 23:59", "2024-01-01 00:00", "2026-03-01 00:00", "2026-11-20 03:00"),
			Policy{KeepYearly: 3}, map[string]string{"2026-11-20 03:00": "yearly 2026", "2024-01-01 00:00": "yearly 2024", "2023-12-31 23:59": "yearly 2023"}},
		{"unsorted input is sorted by time", []*archive.Manifest{all[8], all[0], all[4]}, Policy{KeepLast: 1},
			map[string]string{"2026-11-21 03:00": "keep-last 1"}},
		{"no backups", nil, Policy{KeepLast: 1}, map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds, err := Plan(tt.ms, now, tt.p)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) != len(tt.ms) {
				t.Fatalf("%d decisions for %d backups", len(ds), len(tt.ms))
			}
			got := kept(ds)
			if len(got) != len(tt.want) {
				t.Errorf("kept %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s: kept for %q, want %q", k, got[k], v)
				}
			}
			for _, d := range ds {
				if !d.Keep && len(d.Reasons) > 0 {
					t.Errorf("%s deleted with reasons %v", d.Manifest.ID, d.Reasons)
				}
			}
		})
	}
}

func TestPlanParentsStay(t *testing.T) {
	ms := backupsAt("2026-11-01 03:00", "2026-11-02 03:00", "2026-11-03 03:00", "2026-11-04 03:00")
	ms[2].Parent = ms[1].ID
	ms[3].Parent = ms[2].ID
	ds, err := Plan(ms, time.Date(2026, 11, 5, 0, 0, 0, 0, time.UTC), Policy{KeepLast: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := []bool{false, true, true, true}
	for i, d := range ds {
		if d.Keep != want[i] {
			t.Errorf("%s: keep %v (%v), want %v", d.Manifest.ID, d.Keep, d.Reasons, want[i])
		}
	}
	if r := ds[1].Reasons; len(r) != 1 || r[0] != "parent of "+ms[2].ID {
		t.Errorf("reasons of the grandparent: %v", r)
	}
}

func TestPlanRefuses(t *testing.T) {
	ms := backupsAt("2026-11-01 03:00")
	for _, p := range []Policy{{}, {KeepLast: -1}, {KeepDaily: -2, KeepLast: 1}} {
		if _, err := Plan(ms, time.Now(), p); err == nil {
			t.Errorf("policy %+v accepted", p)
		}
	}
}

// FuzzPlan checks the planner's invariants over random dates and policies.
func FuzzPlan(f *testing.F) {
	f.Add(uint64(1), uint8(5), uint8(2), uint16(48), uint8(3), uint8(1))
	f.Add(uint64(7), uint8(40), uint8(0), uint16(0), uint8(0), uint8(4))
	f.Fuzz(func(t *testing.T, seed uint64, count, last uint8, withinHours uint16, daily, weekly uint8) {
		rng := rand.New(rand.NewPCG(seed, seed>>7))
		now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
		var ms []*archive.Manifest
		for i := range int(count % 60) {
			at := now.Add(-time.Duration(rng.Int64N(int64(90 * 24 * time.Hour))))
			if rng.IntN(10) == 0 {
				at = now.Add(time.Duration(rng.Int64N(int64(time.Hour)))) // clock skew: in the future
			}
			ms = append(ms, &archive.Manifest{ID: fmt.Sprintf("%s-%04x", at.Format("20060102T150405Z"), i), Started: at})
		}
		p := Policy{KeepLast: int(last % 20), KeepWithin: time.Duration(withinHours) * time.Hour, KeepDaily: int(daily % 20), KeepWeekly: int(weekly % 10)}
		ds, err := Plan(ms, now, p)
		if p.Empty() {
			if err == nil {
				t.Fatal("empty policy accepted")
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != len(ms) {
			t.Fatalf("%d decisions for %d backups", len(ds), len(ms))
		}
		if len(ds) == 0 {
			return
		}
		if !ds[len(ds)-1].Keep {
			t.Fatal("newest backup deleted")
		}
		for i, d := range ds {
			if i > 0 && d.Manifest.Started.Before(ds[i-1].Manifest.Started) {
				t.Fatal("decisions not oldest first")
			}
			if d.Keep != (len(d.Reasons) > 0) {
				t.Fatalf("%s: keep %v with reasons %v", d.Manifest.ID, d.Keep, d.Reasons)
			}
			byLast := slices.Contains(d.Reasons, fmt.Sprintf("keep-last %d", p.KeepLast))
			if newestN := i >= len(ds)-p.KeepLast; byLast != newestN {
				t.Fatalf("%s (%d of %d): kept by keep-last %d: %v", d.Manifest.ID, i, len(ds), p.KeepLast, byLast)
			}
			within := p.KeepWithin > 0 && now.Sub(d.Manifest.Started) <= p.KeepWithin
			if within && !d.Keep {
				t.Fatalf("%s within %v deleted", d.Manifest.ID, p.KeepWithin)
			}
		}
	})
}

// --keep-pitr keeps the newest backup finished before the window (its
// chain with it), and the binary logs from the oldest kept backup's
// position on; files of a server without kept backups stay.
func TestKeepPITR(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	ms := backupsAt("2026-11-10 00:00", "2026-11-14 00:00", "2026-11-18 00:00", "2026-11-21 00:00")
	for i, m := range ms {
		m.Kind, m.Finished = archive.KindPhysical, m.Started.Add(time.Hour)
		m.Server = archive.Server{Hostname: "db1", ServerID: 1}
		m.Positions.BinlogFile = fmt.Sprintf("bin.%06d", 10*(i+1))
	}
	ds, err := Plan(ms, now, Policy{KeepPITR: 5 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	k := kept(ds)
	if _, ok := k["2026-11-14 00:00"]; !ok || len(k) != 2 {
		t.Fatalf("kept %v, want the base of the window (2026-11-14) and the newest", k)
	}
	var keptMs []*archive.Manifest
	for _, d := range ds {
		if d.Keep {
			keptMs = append(keptMs, d.Manifest)
		}
	}
	var files []*archive.Manifest
	for _, name := range []string{"bin.000009", "bin.000019", "bin.000020", "bin.000041"} {
		files = append(files, &archive.Manifest{Server: archive.Server{Hostname: "db1", ServerID: 1}, Binlog: &archive.BinlogFile{Source: "db1-1", Name: name}})
	}
	files = append(files, &archive.Manifest{Server: archive.Server{Hostname: "db2", ServerID: 2}, Binlog: &archive.BinlogFile{Source: "db2-2", Name: "bin.000001"}})
	got := map[string]bool{}
	for _, d := range PlanBinlogs(keptMs, nil, files) {
		got[d.Manifest.Binlog.Source+"/"+d.Manifest.Binlog.Name] = d.Keep
	}
	want := map[string]bool{"db1-1/bin.000009": false, "db1-1/bin.000019": false, "db1-1/bin.000020": true, "db1-1/bin.000041": true, "db2-2/bin.000001": true}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("binlog plan %v, want %v", got, want)
	}
}

// --keep-pitr keeps a base per server: server db2's newest backup before
// the window stays even when db1 has a newer one there, and db2's binary
// logs are planned from db2's backup, not db1's.
func TestKeepPITRPerServer(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	ms := backupsAt("2026-11-10 00:00", "2026-11-12 00:00", "2026-11-14 00:00")
	for i, m := range ms {
		m.Kind, m.Finished = archive.KindPhysical, m.Started.Add(time.Hour)
		m.Server = archive.Server{Hostname: "db1", ServerID: 1}
		m.Positions.BinlogFile = fmt.Sprintf("bin.%06d", 10*(i+1))
	}
	ms[1].Server = archive.Server{Hostname: "db2", ServerID: 2}
	ds, err := Plan(ms, now, Policy{KeepPITR: 5 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	k := kept(ds)
	if _, ok := k["2026-11-12 00:00"]; !ok || len(k) != 2 {
		t.Fatalf("kept %v, want db2's base (2026-11-12) and db1's (2026-11-14)", k)
	}
	var keptMs []*archive.Manifest
	for _, d := range ds {
		if d.Keep {
			keptMs = append(keptMs, d.Manifest)
		}
	}
	var files []*archive.Manifest
	for _, f := range []struct{ src, name string }{{"db1-1", "bin.000019"}, {"db1-1", "bin.000030"}, {"db2-2", "bin.000019"}, {"db2-2", "bin.000020"}} {
		files = append(files, &archive.Manifest{Binlog: &archive.BinlogFile{Source: f.src, Name: f.name}})
	}
	got := map[string]bool{}
	for _, d := range PlanBinlogs(keptMs, nil, files) {
		got[d.Manifest.Binlog.Source+"/"+d.Manifest.Binlog.Name] = d.Keep
	}
	want := map[string]bool{"db1-1/bin.000019": false, "db1-1/bin.000030": true, "db2-2/bin.000019": false, "db2-2/bin.000020": true}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("binlog plan %v, want %v", got, want)
	}
}

// A server that continues another's archive after a failover keeps its
// files from the link's on while the other server's backups are kept (a
// restore from them rolls forward into it), even when its own oldest
// kept backup is newer.
func TestPlanBinlogsAcrossLink(t *testing.T) {
	kept := []*archive.Manifest{
		{Kind: archive.KindPhysical, Server: archive.Server{Hostname: "db1", ServerID: 1}, Positions: archive.Positions{BinlogFile: "bin.000010"}},
		{Kind: archive.KindPhysical, Server: archive.Server{Hostname: "db2", ServerID: 2}, Positions: archive.Positions{BinlogFile: "bin.000030"}},
	}
	links := []repo.BinlogLink{{Source: "db2-2", Continues: "db1-1", GTID: "0-1-99", File: "bin.000020", Offset: 500}}
	var files []*archive.Manifest
	for _, f := range []struct{ src, name string }{{"db1-1", "bin.000009"}, {"db1-1", "bin.000011"}, {"db2-2", "bin.000019"}, {"db2-2", "bin.000020"}, {"db2-2", "bin.000025"}, {"db2-2", "bin.000030"}} {
		files = append(files, &archive.Manifest{Binlog: &archive.BinlogFile{Source: f.src, Name: f.name}})
	}
	got := map[string]bool{}
	for _, d := range PlanBinlogs(kept, links, files) {
		got[d.Manifest.Binlog.Source+"/"+d.Manifest.Binlog.Name] = d.Keep
	}
	want := map[string]bool{"db1-1/bin.000009": false, "db1-1/bin.000011": true, "db2-2/bin.000019": false, "db2-2/bin.000020": true, "db2-2/bin.000025": true, "db2-2/bin.000030": true}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("binlog plan %v, want %v", got, want)
	}
	// Without db1's backups kept, db2's own backup decides.
	got = map[string]bool{}
	for _, d := range PlanBinlogs(kept[1:], links, files) {
		got[d.Manifest.Binlog.Source+"/"+d.Manifest.Binlog.Name] = d.Keep
	}
	if got["db2-2/bin.000025"] || !got["db2-2/bin.000030"] {
		t.Errorf("binlog plan without db1's backups %v: want db2's files from its backup's bin.000030 on", got)
	}
}

// The rules count each kind of backup apart: hourly dumps of one database
// never push the nightly physical backups out; with Kind, the rules are
// for that kind alone and every backup of another kind stays.
func TestPlanPerKind(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	ms := backupsAt("2026-11-18 01:00", "2026-11-19 01:00", "2026-11-20 01:00", "2026-11-21 08:00", "2026-11-21 09:00", "2026-11-21 10:00", "2026-11-21 11:00")
	for i, m := range ms {
		m.Kind = archive.KindPhysical
		if i >= 3 {
			m.Kind, m.Partial = archive.KindLogical, true
		}
	}
	plan, err := Plan(ms, now, Policy{KeepLast: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"2026-11-19 01:00": "keep-last 2", "2026-11-20 01:00": "keep-last 2", "2026-11-21 10:00": "keep-last 2", "2026-11-21 11:00": "keep-last 2"}
	if got := kept(plan); !maps.Equal(got, want) {
		t.Errorf("keep-last 2 over two kinds: kept %v, want %v", got, want)
	}
	plan, err = Plan(ms, now, Policy{KeepLast: 1, Kind: archive.KindLogical})
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]string{"2026-11-18 01:00": "a physical backup (the rules are for logical backups)", "2026-11-19 01:00": "a physical backup (the rules are for logical backups)",
		"2026-11-20 01:00": "a physical backup (the rules are for logical backups)", "2026-11-21 11:00": "keep-last 1"}
	if got := kept(plan); !maps.Equal(got, want) {
		t.Errorf("keep-last 1 of logical backups: kept %v, want %v", got, want)
	}
}

// A count or duration below zero, any of them, is refused before the
// repository is opened, as a usage error (it was a failure, exit 1, for
// --keep-monthly, --keep-yearly, --keep-within and --keep-pitr).
func TestCheckRefusesNegatives(t *testing.T) {
	for _, p := range []Policy{{KeepLast: -1}, {KeepDaily: -1}, {KeepWeekly: -1}, {KeepMonthly: -1}, {KeepYearly: -1},
		{KeepWithin: -time.Hour}, {KeepLast: 1, KeepPITR: -time.Hour}} {
		var r interface{ Refused() bool }
		if err := (Request{Policy: p}).Check(); !errors.As(err, &r) || !strings.Contains(err.Error(), "must not be negative") {
			t.Errorf("%+v: %v; want refused as negative", p, err)
		}
	}
	if err := (Request{Policy: Policy{KeepMonthly: 3}}).Check(); err != nil {
		t.Errorf("keep-monthly 3: %v", err)
	}
}
