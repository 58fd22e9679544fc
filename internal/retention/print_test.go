package retention

import (
	"bytes"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/storage"
)

// The plan's text: each entry's action and why (the rules that did not
// keep it, by their flags), the leftovers, and the total of what goes,
// for a dry run and once carried out.
func TestWriteText(t *testing.T) {
	t.Parallel()
	day := func(d int) time.Time { return time.Date(2026, 11, d, 1, 0, 0, 0, time.UTC) }
	entries := func(deleted bool) []Entry {
		return []Entry{
			{ID: "20261120T010000Z-0001", Started: day(20), Complete: true, Size: 2048, Deleted: deleted},
			{ID: "20261121T010000Z-0002", Started: day(21), Complete: true, Size: 1024, Keep: true, Reasons: []string{"keep-last 1", "daily 2026-11-21"}},
			{ID: "20261119T010000Z-0003", Started: day(19), Size: 10, Deleted: deleted},
			{ID: "20261118T010000Z-0004", Started: day(18), Size: 5, Keep: true, Reasons: []string{keepDamaged}, Damaged: "manifest: unexpected EOF"},
			{ID: "db1-1/bin.000001", Kind: archive.KindBinlog, Started: day(20), Complete: true, Size: 100, Reasons: []string{"before the oldest kept backup"}, Deleted: deleted},
			{ID: "db1-1/bin.000002", Kind: archive.KindBinlog, Size: 30, Keep: true, Reasons: []string{"held only as 2 segments, never archived whole", "needed"}},
			leftoversEntry(storage.Leftovers{TempFiles: 1, Bytes: 3}, deleted),
		}
	}
	req := Request{Policy: Policy{KeepLast: 1, KeepDaily: 7, KeepWithin: 36 * time.Hour, KeepPITR: 7 * 24 * time.Hour}, PruneIncomplete: true}
	dry := `ID                     STARTED (UTC)        SIZE     ACTION  WHY
20261120T010000Z-0001  2026-11-20 01:00:00  2.0 KiB  DELETE  not kept by --keep-last 1 --keep-within 36h --keep-daily 7 --keep-pitr 1w
20261121T010000Z-0002  2026-11-21 01:00:00  1.0 KiB  KEEP    keep-last 1, daily 2026-11-21
20261119T010000Z-0003  2026-11-19 01:00:00  10 B     DELETE  incomplete (--prune-incomplete)
20261118T010000Z-0004  2026-11-18 01:00:00  5 B      KEEP    damaged manifest: kept, no rule applies to it (manifest: unexpected EOF)
db1-1/bin.000001       2026-11-20 01:00:00  100 B    DELETE  before the oldest kept backup
db1-1/bin.000002       -                    30 B     KEEP    held only as 2 segments, never archived whole, needed
would remove what unfinished writes left under backups/: 1 temporary file (3 B)
dry run: would delete 3 backups or binary log files, 2.1 KiB; run again with --confirm to delete
`
	done := `ID                     STARTED (UTC)        SIZE     ACTION   WHY
20261120T010000Z-0001  2026-11-20 01:00:00  2.0 KiB  DELETED  not kept by --keep-last 1 --keep-within 36h --keep-daily 7 --keep-pitr 1w
20261121T010000Z-0002  2026-11-21 01:00:00  1.0 KiB  KEEP     keep-last 1, daily 2026-11-21
20261119T010000Z-0003  2026-11-19 01:00:00  10 B     DELETED  incomplete (--prune-incomplete)
20261118T010000Z-0004  2026-11-18 01:00:00  5 B      KEEP     damaged manifest: kept, no rule applies to it (manifest: unexpected EOF)
db1-1/bin.000001       2026-11-20 01:00:00  100 B    DELETED  before the oldest kept backup
db1-1/bin.000002       -                    30 B     KEEP     held only as 2 segments, never archived whole, needed
removed what unfinished writes left under backups/: 1 temporary file (3 B)
deleted 3 backups or binary log files, 2.1 KiB
`
	for _, c := range []struct {
		confirm bool
		want    string
	}{
		{false, dry},
		{true, done},
	} {
		req.Confirm = c.confirm
		var b bytes.Buffer
		if err := (Result{Entries: entries(c.confirm), Request: req}).WriteText(&b); err != nil {
			t.Fatal(err)
		}
		if b.String() != c.want {
			t.Errorf("confirm %v:\n%s\nwant:\n%s", c.confirm, b.String(), c.want)
		}
	}
}

// A deletion that failed counts nothing as deleted; a plan with nothing
// to delete says so, and says whether only leftovers go.
func TestWriteTextTotals(t *testing.T) {
	t.Parallel()
	kept := Entry{ID: "20261121T010000Z-0002", Complete: true, Size: 1024, Keep: true, Reasons: []string{"keep-last 1"}}
	for _, c := range []struct {
		res  Result
		want string
	}{
		{Result{Entries: []Entry{kept}}, "nothing to delete"},
		{Result{}, "nothing to delete"},
		{Result{Entries: []Entry{kept, leftoversEntry(storage.Leftovers{TempFiles: 2}, false)}}, "no backups to delete"},
		{Result{Entries: []Entry{kept, {ID: "20261120T010000Z-0001", Complete: true, Size: 9}}, Request: Request{Confirm: true}}, "nothing to delete"},
	} {
		var b bytes.Buffer
		if err := c.res.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSuffix(b.Bytes(), []byte("\n")), []byte("\n"))
		if got := string(lines[len(lines)-1]); got != c.want {
			t.Errorf("%+v: last line %q, want %q", c.res.Entries, got, c.want)
		}
	}
}

// Every rule is named by its flag where the plan says why a backup goes:
// --keep-monthly and --keep-yearly were left out, and a plan by them alone
// said "not kept by" and nothing more.
func TestPolicyFlags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		p    Policy
		want string
	}{
		{Policy{KeepMonthly: 12}, "--keep-monthly 12"},
		{Policy{KeepYearly: 3}, "--keep-yearly 3"},
		{Policy{KeepLast: 1, KeepWithin: 36 * time.Hour, KeepDaily: 7, KeepWeekly: 5, KeepMonthly: 12, KeepYearly: 3, KeepPITR: 7 * 24 * time.Hour},
			"--keep-last 1 --keep-within 36h --keep-daily 7 --keep-weekly 5 --keep-monthly 12 --keep-yearly 3 --keep-pitr 1w"},
	} {
		if got := policyFlags(c.p); got != c.want {
			t.Errorf("policyFlags(%+v) = %q, want %q", c.p, got, c.want)
		}
	}
}
