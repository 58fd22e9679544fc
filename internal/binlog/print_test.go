package binlog

import (
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/repo"
)

// An overview says what a point-in-time restore reaches, the lag as the
// last run measured it (following, caught up, behind, or never), the link
// of a failover, and the gaps.
func TestOverviewWriteText(t *testing.T) {
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	from := Point{File: "bin.000002", Time: at, GTID: "0-1-5"}
	to := Point{File: "bin.000004", Time: at.Add(time.Hour), GTID: "0-1-9"}
	status := func(following bool, lag int64) *repo.BinlogStatus {
		return &repo.BinlogStatus{Updated: at.Add(2 * time.Hour), Following: following, ServerFile: "bin.000005", ServerSize: 4096,
			ArchivedFile: "bin.000005", ArchivedOffset: 4096 - lag, LagBytes: lag, LagSeconds: 3}
	}
	gap := repo.BinlogGap{Source: "db1-1", After: "bin.000001", Before: "bin.000003", Missing: "bin.000002", AfterGTID: "0-1-4",
		Detected: at, Reason: "(purged on the server before they were archived)"}
	for _, c := range []struct {
		name string
		v    Overview
		want []string
	}{
		{"nothing", Overview{Source: "db1-1"}, []string{"", "SERVER db1-1",
			"  recoverable: nothing archived after the last gap",
			"  lag: unknown (no run of binlog has measured it); newest archived event "}},
		{"from a backup, following", Overview{Source: "db1-1", From: from, FromBackup: "20261128T0900Z-abcd", To: to, Status: status(true, 1024)},
			[]string{"", "SERVER db1-1",
				"  recoverable: from backup 20261128T0900Z-abcd, 2026-11-28 10:00:00 UTC (GTID 0-1-5, bin.000002), to 2026-11-28 11:00:00 UTC (GTID 0-1-9, bin.000004)",
				"  lag: 3s, 1.0 KiB behind the server (binlog --follow, measured 2026-11-28 12:00:00 UTC; bin.000005:3072 archived of bin.000005:4096)"}},
		{"caught up, a link and a gap", Overview{Source: "db2-2", From: from, To: to, Status: status(false, 0), Gaps: []repo.BinlogGap{gap},
			Continues: &repo.BinlogLink{Continues: "db1-1", GTID: "0-1-7", File: "bin.000003", Offset: 256}},
			[]string{"", "SERVER db2-2",
				"  recoverable: archived from 2026-11-28 10:00:00 UTC (GTID 0-1-5, bin.000002) to 2026-11-28 11:00:00 UTC (GTID 0-1-9, bin.000004); no physical backup of this server within it to restore from",
				"  lag: none when binlog last ran, 2026-11-28 12:00:00 UTC: the archive held all the server had written (bin.000005:4096)",
				"  continues db1-1 after GTID 0-1-7 (a failover; from bin.000003 at offset 256): a restore from db1-1's backups goes on into this server's files",
				"  GAP: bin.000002 (purged on the server before they were archived) (detected 2026-11-28 10:00:00 UTC; lost: after GTID 0-1-4 up to bin.000003, GTID list -; binlog stops on it until run with --allow-gap)"}},
		{"behind", Overview{Source: "db1-1", From: from, To: to, Status: status(false, 2048)}, []string{
			"  lag: 2.0 KiB behind the server when binlog last ran, 2026-11-28 12:00:00 UTC (without --follow the active file bin.000005 is not archived)"}},
	} {
		var b strings.Builder
		c.v.WriteText(&b)
		got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		for _, want := range c.want {
			found := false
			for _, line := range got {
				found = found || line == want
			}
			if !found {
				t.Errorf("%s: no line %q in:\n%s", c.name, want, b.String())
			}
		}
	}
}
