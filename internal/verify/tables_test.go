package verify

import (
	"context"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo/repotest"
)

// A physical backup's manifest lists its tables with their files (the
// backup's table guard): verify fails, naming the backup and the table,
// on a backup whose stored files lack one, a full as an incremental (whose
// tablespaces are deltas), and passes when they hold them all.
func TestVerifyChecksTheTableList(t *testing.T) {
	ctx := context.Background()
	r := repotest.New(t)
	tables := []archive.Table{
		{Name: "shop.customers", Engine: "InnoDB", Files: []string{"shop/customers.frm", "shop/customers.ibd"}},
		{Name: "shop.log", Engine: "Aria", Files: []string{"shop/log.frm", "shop/log.MAD", "shop/log.MAI"}},
		{Name: "shop.v", Type: "view", Files: []string{"shop/v.frm"}},
	}
	whole := map[string]string{"ibdata1": "sys", "shop/customers.frm": "f", "shop/customers.ibd": "c",
		"shop/log.frm": "f", "shop/log.MAD": "d", "shop/log.MAI": "i", "shop/v.frm": "v"}
	full := repotest.Store(t, r, repotest.Backup{ID: "20261121T030000Z-0001", Files: whole, Tables: tables})
	if _, err := Restorable(ctx, r, full, Reading{Read: archive.ReadOptions{Workers: 2}}); err != nil {
		t.Fatalf("a full backup holding its tables: %v", err)
	}
	inc := repotest.Store(t, r, repotest.Backup{ID: "20261121T040000Z-0002", Parent: full, Tables: tables, Files: map[string]string{
		"ibdata1.delta": "d", "ibdata1.meta": "m", "shop/customers.frm": "f", "shop/customers.ibd.delta": "d",
		"shop/customers.ibd.meta": "m", "shop/log.frm": "f", "shop/log.MAD": "d", "shop/log.MAI": "i", "shop/v.frm": "v"}})
	if _, err := Restorable(ctx, r, inc, Reading{Read: archive.ReadOptions{Workers: 2}}); err != nil {
		t.Fatalf("an incremental holding its tables as deltas: %v", err)
	}

	lacking := map[string]string{}
	for p, c := range whole {
		if p != "shop/customers.ibd" {
			lacking[p] = c
		}
	}
	bad := repotest.Store(t, r, repotest.Backup{ID: "20261121T050000Z-0003", Files: lacking, Tables: tables})
	_, err := Restorable(ctx, r, bad, Reading{Read: archive.ReadOptions{Workers: 2}})
	if !archive.IsCorrupt(err) || !strings.Contains(err.Error(), bad.ID) || !strings.Contains(err.Error(), "shop.customers (shop/customers.ibd)") {
		t.Fatalf("a backup lacking a listed table's tablespace: %v; want corruption naming the backup and shop.customers", err)
	}
	badInc := repotest.Store(t, r, repotest.Backup{ID: "20261121T060000Z-0004", Parent: full, Tables: tables, Files: map[string]string{
		"ibdata1.delta": "d", "shop/customers.frm": "f", "shop/customers.ibd.delta": "d", "shop/v.frm": "v"}})
	_, err = Restorable(ctx, r, badInc, Reading{Read: archive.ReadOptions{Workers: 2}})
	if !archive.IsCorrupt(err) || !strings.Contains(err.Error(), badInc.ID) || !strings.Contains(err.Error(), "shop.log (shop/log.frm, shop/log.MAD, shop/log.MAI)") {
		t.Fatalf("an incremental lacking a listed table: %v; want corruption naming the incremental and shop.log", err)
	}
	// A manifest written before the table list has nothing to check.
	old := repotest.Store(t, r, repotest.Backup{ID: "20261121T070000Z-0005", Files: lacking})
	if err := Backup(ctx, r, old, Reading{Read: archive.ReadOptions{Workers: 2}}); err != nil {
		t.Fatalf("a backup without a table list: %v", err)
	}
}
