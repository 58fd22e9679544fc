package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// The table guard on a real race (issue 28, item 1): after a table is
// imported into the running server (restore --table --apply-to --as),
// mariabackup has taken its tablespace for one dropped during the copy
// and left it out of every backup that still said "completed OK!". Each
// later backup, full and incremental, either holds the table (listed in
// its manifest, verify passes) or fails naming it with nothing committed;
// never exit 0 without it.
func TestBackupAfterImportHoldsTheTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	db := src.DB()
	for _, q := range []string{
		"CREATE DATABASE shop",
		"CREATE TABLE shop.customers (id INT PRIMARY KEY, name VARCHAR(40)) ENGINE=InnoDB",
		"INSERT INTO shop.customers SELECT seq, CONCAT('c', seq) FROM shop.seq_1_to_3000",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	repoDir := newRepoDir(t)
	run(t, append([]string{"backup", "--repo", repoDir}, sandboxConn(src)...)...).mustSucceed(t)
	run(t, append([]string{"restore", "--repo", repoDir, "--table", "shop.customers", "--apply-to", "--as", "shop.customers_restored", "--no-binlog"}, sandboxConn(src)...)...).mustSucceed(t)
	for _, kind := range []string{"full", "incremental"} {
		before := backupListing(t, repoDir)
		args := []string{"backup", "--repo", repoDir}
		if kind == "incremental" {
			args = append(args, "--incremental")
		}
		r := run(t, append(args, sandboxConn(src)...)...)
		after := backupListing(t, repoDir)
		if r.code != ExitOK {
			if !strings.Contains(fmt.Sprint(r.err), "nothing was committed: the backup lacks tables the server has: shop.customers_restored (shop/customers_restored.ibd)") || len(after) != len(before) {
				t.Fatalf("%s backup after the import: exit %d, %v, %d backups before and %d after; want it to fail naming shop.customers_restored, nothing committed", kind, r.code, r.err, len(before), len(after))
			}
			continue
		}
		id := after[len(after)-1].ID
		m := readManifest(t, repoDir, id)
		if !slices.ContainsFunc(m.Tables, func(tb archive.Table) bool { return tb.Name == "shop.customers_restored" }) ||
			!slices.ContainsFunc(m.Files, func(f archive.File) bool {
				return strings.HasPrefix(f.Path, "shop/customers_restored.") && !strings.HasSuffix(f.Path, ".frm")
			}) {
			t.Fatalf("%s backup %s after the import said complete without shop.customers_restored: tables %v", kind, id, m.Tables)
		}
		run(t, "verify", id, "--repo", repoDir).mustSucceed(t)
	}
}
