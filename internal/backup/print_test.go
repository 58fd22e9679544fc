package backup

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
)

func TestResultWriteText(t *testing.T) {
	full := &Result{Manifest: &archive.Manifest{ID: "F", Kind: archive.KindPhysical,
		Streams: make([]archive.Stream, 2), Files: make([]archive.File, 3), Stats: archive.Stats{RawBytes: 300, StoredBytes: 100}}}
	inc := &Result{Manifest: &archive.Manifest{ID: "I", Kind: archive.KindPhysical, Parent: "F", Chain: "F", Depth: 1,
		Streams: make([]archive.Stream, 1)}}
	logical := &Result{Manifest: &archive.Manifest{ID: "L", Kind: archive.KindLogical, Streams: make([]archive.Stream, 2),
		Databases: []archive.DatabaseStats{{Name: "shop"}}, Stats: archive.Stats{RawBytes: 50, StoredBytes: 25}},
		Tables: 4, Rows: 10, NoHistory: []string{"shop.t"}, Masked: []string{"shop.u.email=hash"}}
	for _, c := range []struct {
		res  *Result
		want string
	}{
		{full, "backup F complete: full, 2 streams, 3 files, 100 bytes (3.00x of 300) stored\n"},
		{inc, "backup I complete: incremental on F (depth 1 of chain F), 1 streams, 0 files, 0 bytes stored\n"},
		{logical, "backup L complete: logical, 1 databases, 4 tables, 10 rows, 2 streams, 25 bytes (2.00x of 50) stored\n" +
			"backup L: table shop.t: history not in the backup (--versioned-current-only)\n" +
			"backup L: masked when dumped: shop.u.email=hash\n"},
	} {
		var b bytes.Buffer
		if err := c.res.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		if b.String() != c.want {
			t.Errorf("got:\n%s\nwant:\n%s", b.String(), c.want)
		}
	}
}

func TestResultJSON(t *testing.T) {
	res := &Result{Manifest: &archive.Manifest{ID: "L", Kind: archive.KindLogical,
		Databases: []archive.DatabaseStats{{Name: "shop", NoHistory: []string{"t"}, Masked: []string{"u.email=hash"}}},
		Stats:     archive.Stats{RawBytes: 50, StoredBytes: 25, Seconds: 1.5}}}
	raw, err := json.Marshal(res.JSON())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"id":"L"`, `"kind":"logical"`, `"seconds":1.5`, `"stored_bytes":25`,
		`"no_history":["shop.t"]`, `"masked":["shop.u.email=hash"]`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("JSON %s lacks %s", raw, want)
		}
	}
}
