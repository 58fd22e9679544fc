package cli

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
	wantSums, err := sandbox.ChecksumTables(ctx, src.DB())
	if err != nil {
		t.Fatal(err)
	}
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
		repoDir := newRepoDir(t)
		run(t, append([]string{"backup", "--logical", "--repo", repoDir, "--skip-users", "--database", sandboxtest.ValuesDB}, sandboxConn(src)...)...).mustSucceed(t)
		for _, dstMode := range modes {
			t.Run("source_"+orNone(srcMode)+"_target_"+orNone(dstMode), func(t *testing.T) {
				setMode(dst, dstMode)
				run(t, append([]string{"restore", "--repo", repoDir, "--drop-existing"}, sandboxConn(dst)...)...).mustSucceed(t)
				got, err := sandboxtest.DescribeValues(ctx, dst.DB(), sandboxtest.ValuesDB)
				if err != nil {
					t.Fatal(err)
				}
				for table, w := range want {
					if g := got[table]; g != w {
						t.Errorf("%s differs after the restore:\n got:\n%s\nwant:\n%s", table, g, w)
					}
				}
				gotSums, err := sandbox.ChecksumTables(ctx, dst.DB())
				if err != nil {
					t.Fatal(err)
				}
				usecasetest.CompareChecksums(t, gotSums, wantSums)
			})
		}
		if srcMode == "TRADITIONAL" {
			rep, res := restoreTestReport(t, repoDir, "latest")
			if res.code != 0 || !rep.Passed {
				t.Errorf("restore test: exit %d, report %+v", res.code, rep)
			}
		}
	}
}

func orNone(mode string) string {
	if mode == "" {
		return "none"
	}
	return strings.ToLower(mode)
}
