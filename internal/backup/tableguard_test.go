package backup_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// The table guard on a real race (issue 28, item 1): after a table is
// imported into the running server (a restore of the table with ApplyTo
// and As), mariabackup has taken its tablespace for one dropped during
// the copy and left it out of every backup that still said "completed
// OK!". Each later backup, full and incremental, either holds the table
// (listed in its manifest, verify passes) or fails naming it with nothing
// committed; never succeeds without it.
func TestBackupAfterImportHoldsTheTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	usecasetest.ExecAll(t, src.DB(),
		"CREATE DATABASE shop",
		"CREATE TABLE shop.customers (id INT PRIMARY KEY, name VARCHAR(40)) ENGINE=InnoDB",
		"INSERT INTO shop.customers SELECT seq, CONCAT('c', seq) FROM shop.seq_1_to_3000")
	repo := usecasetest.NewLocalRepo(t)
	usecasetest.Backup(t, usecasetest.BackupOf(t, repo, src))
	imp := usecasetest.ImportOf(repo, src, "shop.customers")
	imp.As = "shop.customers_restored"
	if res := usecasetest.Restore(t, imp); res.Import == nil {
		t.Fatalf("the restore of shop.customers with ApplyTo imported nothing: %+v", res)
	}
	for _, kind := range []string{"full", "incremental"} {
		before := usecasetest.List(t, repo)
		req := usecasetest.BackupOf(t, repo, src)
		if kind == "incremental" {
			req.Physical.Incremental = &backup.Incremental{}
		}
		res, err := backup.Run(ctx, req)
		after := usecasetest.List(t, repo)
		if err != nil {
			t.Logf("%s backup after the import: %v", kind, err)
			if !strings.Contains(err.Error(), "nothing was committed: the backup lacks tables the server has: shop.customers_restored (shop/customers_restored.ibd)") || len(after) != len(before) {
				t.Fatalf("%s backup after the import: %v, %d backups before and %d after; want it to fail naming shop.customers_restored, nothing committed", kind, err, len(before), len(after))
			}
			continue
		}
		id := after[len(after)-1].ID
		if id != res.Manifest.ID {
			t.Fatalf("the repository lists %s last, not the backup made, %s", id, res.Manifest.ID)
		}
		m, err := repo.Open(t).Resolve(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(m.Tables, func(tb archive.Table) bool { return tb.Name == "shop.customers_restored" }) ||
			!slices.ContainsFunc(m.Files, func(f archive.File) bool {
				return strings.HasPrefix(f.Path, "shop/customers_restored.") && !strings.HasSuffix(f.Path, ".frm")
			}) {
			t.Fatalf("%s backup %s after the import said complete without shop.customers_restored: tables %v", kind, id, m.Tables)
		}
		if err := usecasetest.Verify(t, repo, id); err != nil {
			t.Fatalf("verify %s: %v", id, err)
		}
	}
}
