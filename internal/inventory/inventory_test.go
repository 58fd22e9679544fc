package inventory

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/binlog"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repo/repotest"
)

var db1 = archive.Server{Version: "10.11.6-MariaDB", Hostname: "db1", ServerID: 1}

// recommit stores m's manifest again, changed by change.
func recommit(t *testing.T, r *repo.Repo, m *archive.Manifest, change func(*archive.Manifest)) {
	t.Helper()
	change(m)
	if err := r.Commit(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

// A repository with a chain, a logical backup, a damaged manifest with an
// incremental on it and a backup that never committed: List names each
// complete one as its manifest says, the damaged one by its id, time and
// size, the incremental as unrestorable, and leaves the unfinished one
// out; --kind keeps the damaged one.
func TestList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := repotest.New(t)
	full := repotest.Store(t, r, repotest.Backup{ID: "20261120T010000Z-0001", Server: db1, Files: map[string]string{"f": "a"}})
	inc := repotest.Store(t, r, repotest.Backup{ID: "20261121T010000Z-0002", Parent: full, Files: map[string]string{"f.delta": "b"}})
	lg := repotest.Store(t, r, repotest.Backup{ID: "20261122T010000Z-0003", Server: db1, Files: map[string]string{"db/t.sql": "c"}})
	recommit(t, r, lg, func(m *archive.Manifest) {
		m.Kind, m.Databases = archive.KindLogical, []archive.DatabaseStats{{Name: "db", Tables: 1, Rows: 2, Bytes: 3}}
	})
	damaged := repotest.Store(t, r, repotest.Backup{ID: "20261123T010000Z-0004", Server: db1, Files: map[string]string{"f": "d"}})
	orphan := repotest.Store(t, r, repotest.Backup{ID: "20261124T010000Z-0005", Parent: damaged, Files: map[string]string{"f.delta": "e"}})
	repotest.DamageManifest(t, r, damaged.ID)
	if _, err := r.Backend.Put(ctx, repo.Dir("20261125T010000Z-0006")+"/"+repo.BegunName, strings.NewReader("{}")); err != nil {
		t.Fatal(err)
	}

	l, err := List(ctx, r, Request{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, b := range l {
		ids = append(ids, b.ID)
	}
	if want := []string{full.ID, inc.ID, lg.ID, damaged.ID, orphan.ID}; strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Fatalf("listed %v, want %v", ids, want)
	}
	if b := l[1]; b.Kind != archive.KindPhysical || b.Parent != full.ID || b.Depth != 1 || b.Chain != full.ID || b.Unrestorable != "" || b.Streams != 2 || b.Files != 1 {
		t.Errorf("incremental: %+v", b)
	}
	if b := l[2]; b.Kind != archive.KindLogical || len(b.Databases) != 1 || b.Databases[0].Rows != 2 {
		t.Errorf("logical backup: %+v", b)
	}
	if b := l[3]; !b.Damaged || !strings.Contains(b.Damage, "is damaged") || b.Kind != "" || b.StoredBytes == 0 ||
		!b.Started.Equal(time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC)) {
		t.Errorf("damaged manifest: %+v", b)
	}
	if b := l[4]; !strings.Contains(b.Unrestorable, "its chain is broken at its parent "+damaged.ID) || b.Damaged {
		t.Errorf("incremental on the damaged backup: %+v", b)
	}

	l, err = List(ctx, r, Request{Kind: archive.KindLogical})
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != 2 || l[0].ID != lg.ID || l[1].ID != damaged.ID {
		t.Errorf("--kind logical listed %+v, want the logical backup and the damaged one", l)
	}
}

// An empty repository lists as an empty JSON array, not null, and as the
// table's header alone.
func TestListEmpty(t *testing.T) {
	t.Parallel()
	l, err := List(context.Background(), repotest.New(t), Request{})
	if err != nil {
		t.Fatal(err)
	}
	if data, err := json.Marshal(l); err != nil || string(data) != "[]" {
		t.Errorf("JSON %s, %v; want []", data, err)
	}
	var out, warn bytes.Buffer
	if err := l.WriteText(&out, &warn); err != nil {
		t.Fatal(err)
	}
	if want := "ID  KIND  STARTED (UTC)  TOOK  SIZE  STORED  RATIO  SERVER  BINLOG POSITION\n"; out.String() != want || warn.Len() != 0 {
		t.Errorf("text %q, warnings %q; want %q and none", out.String(), warn.String(), want)
	}
}

// The table names each backup's kind as list always has (its depth, merged,
// partial, BROKEN), its time, sizes, ratio and position; what logical
// backups hold follows it, and the warnings go to their own writer.
func TestListingWriteText(t *testing.T) {
	t.Parallel()
	at := func(s string) time.Time {
		v, err := time.Parse(time.DateTime, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	l := Listing{
		{ID: "20261120T010000Z-0001", Kind: "physical", Started: at("2026-11-20 01:00:00"), Finished: at("2026-11-20 01:30:00"),
			Server: db1, RawBytes: 4 << 20, StoredBytes: 1 << 20,
			Positions: archive.Positions{BinlogFile: "bin.000001", BinlogPosition: 456, Galera: &archive.GaleraPosition{UUID: "u", Seqno: 42}}},
		{ID: "20261121T010000Z-0002", Kind: "physical", Parent: "20261120T010000Z-0001", Depth: 1, Started: at("2026-11-21 01:00:00"),
			Finished: at("2026-11-21 01:00:01.25"), Server: db1, Unrestorable: "backup 20261121T010000Z-0002 cannot be restored: why"},
		{ID: "20261122T010000Z-0003", Kind: "physical", MergedFrom: []string{"a", "b"}, Started: at("2026-11-22 01:00:00"), Finished: at("2026-11-22 02:00:00"), Server: db1},
		{ID: "20261123T010000Z-0004", Kind: "logical", Partial: true, Started: at("2026-11-23 01:00:00"), Finished: at("2026-11-23 01:00:00"), Server: db1,
			StoredBytes: 10, Databases: []archive.DatabaseStats{{Name: "db", Tables: 3, Rows: 1000, Bytes: 4096, NoHistory: []string{"h"}, Masked: []string{"t.c=hash", "t.d=null"}}}},
		{ID: "20261124T010000Z-0005", Started: at("2026-11-24 01:00:00"), StoredBytes: 865, Damaged: true, Damage: "manifest is damaged"},
	}
	var out, warn bytes.Buffer
	if err := l.WriteText(&out, &warn); err != nil {
		t.Fatal(err)
	}
	want := `ID                     KIND                STARTED (UTC)        TOOK    SIZE     STORED   RATIO  SERVER           BINLOG POSITION
20261120T010000Z-0001  physical            2026-11-20 01:00:00  30m0s   4.0 MiB  1.0 MiB  4.00x  10.11.6-MariaDB  bin.000001:456 galera u:42
20261121T010000Z-0002  physical +1 BROKEN  2026-11-21 01:00:00  1.3s    0 B      0 B      -      10.11.6-MariaDB  -
20261122T010000Z-0003  physical merged     2026-11-22 01:00:00  1h0m0s  0 B      0 B      -      10.11.6-MariaDB  -
20261123T010000Z-0004  logical partial     2026-11-23 01:00:00  0s      0 B      10 B     0.00x  10.11.6-MariaDB  -
20261124T010000Z-0005  DAMAGED             2026-11-24 01:00:00  -       -        865 B    -      -                -

LOGICAL BACKUP         DATABASE  TABLES  ROWS  SIZE
20261123T010000Z-0004  db        3       1000  4.0 KiB
backup 20261123T010000Z-0004: table db.h: history not in the backup (--versioned-current-only)
backup 20261123T010000Z-0004: masked when dumped: db.t.c=hash, db.t.d=null
`
	if got := out.String(); got != want {
		t.Errorf("text:\n%s\nwant:\n%s", got, want)
	}
	wantWarn := "warning: backup 20261121T010000Z-0002 cannot be restored: why\n" +
		"warning: manifest is damaged; latest and new incrementals skip backup 20261124T010000Z-0005\n"
	if warn.String() != wantWarn {
		t.Errorf("warnings:\n%s\nwant:\n%s", warn.String(), wantWarn)
	}
}

// ListBinlogs gives every archived file and each source's window.
func TestListBinlogs(t *testing.T) {
	t.Parallel()
	r := repotest.New(t)
	repotest.Store(t, r, repotest.Backup{ID: "20261120T010000Z-0001", Server: db1, Files: map[string]string{"f": "a"}})
	repotest.StoreBinlog(t, r, db1, "db1-1", "bin.000001")
	repotest.StoreBinlog(t, r, db1, "db1-1", "bin.000002")
	b, err := ListBinlogs(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Files) != 2 || b.Files[0].Name != "bin.000001" || b.Files[1].Name != "bin.000002" {
		t.Errorf("files %+v, want bin.000001 and bin.000002", b.Files)
	}
	if len(b.Overviews) != 1 || b.Overviews[0].Source != "db1-1" || b.Overviews[0].To.File != "bin.000002" {
		t.Errorf("overviews %+v, want db1-1's, up to bin.000002", b.Overviews)
	}
}

// list --binlogs and list --status print the files and windows, as text
// or JSON; an empty --status --json is [], never null.
func TestBinlogsPrinters(t *testing.T) {
	t.Parallel()
	r := repotest.New(t)
	repotest.StoreBinlog(t, r, db1, "db1-1", "bin.000001")
	b, err := ListBinlogs(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	var list, want, warn bytes.Buffer
	if err := b.WriteText(&list, &warn, false); err != nil {
		t.Fatal(err)
	}
	if err := binlog.WriteListing(&want, &warn, b.Files, b.Overviews); err != nil {
		t.Fatal(err)
	}
	if list.String() != want.String() || !strings.Contains(list.String(), "bin.000001") {
		t.Errorf("list --binlogs:\n%s\nwant:\n%s", list.String(), want.String())
	}
	var status bytes.Buffer
	if err := b.WriteText(&status, &warn, true); err != nil {
		t.Fatal(err)
	}
	want.Reset()
	b.Overviews[0].WriteText(&want)
	if status.String() != want.String() {
		t.Errorf("list --status:\n%s\nwant:\n%s", status.String(), want.String())
	}
	for _, c := range []struct {
		b      Binlogs
		status bool
		want   string
	}{
		{Binlogs{}, true, "[]"},
		{Binlogs{}, false, "[]"},
		{b, false, `"name":"bin.000001"`},
		{b, true, `"source":"db1-1"`},
	} {
		raw, err := json.Marshal(c.b.JSON(c.status))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(raw), c.want) {
			t.Errorf("JSON (status %v) %s lacks %s", c.status, raw, c.want)
		}
	}
}
