package backup_test

import (
	"context"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// Values only a permissive sql_mode stores (zero dates and dates with a
// zero month or day, invalid dates, ENUM error values next to empty
// members, SETs holding only an empty member) round-trip exactly through
// a logical backup for every pair of source and target global sql_mode
// among the empty one and TRADITIONAL: compared as the server's text (ENUM and SET also as
// numbers) and by CHECKSUM TABLE. The restore test of the backup passes
// too (its row sums read ENUM and SET as the dump did).
func TestLogicalValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	dst := sandboxtest.Start(t, sandbox.Options{})
	if err := sandboxtest.LoadValueFixtures(ctx, src.DB()); err != nil {
		t.Fatal(err)
	}
	want, err := sandboxtest.DescribeValues(ctx, src.DB(), sandboxtest.ValuesDB)
	if err != nil {
		t.Fatal(err)
	}
	wantSums := usecasetest.Checksums(t, src)
	if len(want) != 5 || !strings.Contains(want["fid_v.dates_innodb"], "2020-00-15") || !strings.Contains(want["fid_v.enums_innodb"], "\t\t0\t") {
		t.Fatalf("the fixtures are not what they should be: %q", want)
	}
	setMode := func(s *sandbox.Server, mode string) {
		t.Helper()
		if _, err := s.DB().ExecContext(ctx, "SET GLOBAL sql_mode = ?", mode); err != nil {
			t.Fatal(err)
		}
	}
	modes := []string{"", "TRADITIONAL"}
	for _, srcMode := range modes {
		setMode(src, srcMode)
		repo := usecasetest.NewLocalRepo(t)
		req := usecasetest.LogicalBackupOf(t, repo, src)
		req.Dump.Filter.Databases, req.Dump.Skip.Users = []string{sandboxtest.ValuesDB}, true
		usecasetest.Backup(t, req)
		for _, dstMode := range modes {
			t.Run("source_"+orNone(srcMode)+"_target_"+orNone(dstMode), func(t *testing.T) {
				setMode(dst, dstMode)
				load := usecasetest.LoadOf(repo, "", dst)
				load.Load.DropExisting = true
				usecasetest.Restore(t, load)
				got, err := sandboxtest.DescribeValues(ctx, dst.DB(), sandboxtest.ValuesDB)
				if err != nil {
					t.Fatal(err)
				}
				for table, w := range want {
					if g := got[table]; g != w {
						t.Errorf("%s differs after the restore:\n got:\n%s\nwant:\n%s", table, g, w)
					}
				}
				usecasetest.CompareChecksums(t, usecasetest.Checksums(t, dst), wantSums)
			})
		}
		if srcMode == "TRADITIONAL" {
			if rep, err := usecasetest.RestoreTest(t, repo, "latest"); err != nil || !rep.Passed {
				t.Errorf("restore test: %v, report %+v", err, rep)
			}
		}
	}
}

// orNone names a global sql_mode in a subtest's name.
func orNone(mode string) string {
	if mode == "" {
		return "none"
	}
	return strings.ToLower(mode)
}
