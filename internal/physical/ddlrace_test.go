package physical

import (
	"slices"
	"testing"
)

// The server's DDL log names the tables mariabackup copies as files that
// DDL touched during a backup, with the engine an ALTER gave one; InnoDB's
// DDL, which mariabackup follows in the redo log, is left out.
func TestParseDDLLog(t *testing.T) {
	log := "2026-11-25  0:30:16\tRENAME\tAria\t0\tr\taria0\t\tAria\t0\tr\taria0_x\t\n" +
		"2026-11-25  0:30:16\tALTER\tInnoDB\t0\tr\tbig\t\tInnoDB\t0\tr\tbig\t\n" +
		"2026-11-25  0:30:16\tALTER\tAria\t0\tr\taria1\t\tAria\t0\tr\taria1\t\n" +
		"2026-11-25  0:30:16\tTRUNCATE\tMyISAM\t0\tr\tmy@0020t\t\n" +
		"2026-11-25  0:30:16\tRENAME\tAria\t0\tr\taria0_x\t\tAria\t0\tr\taria0\t\n" +
		"2026-11-25  0:30:17\tALTER\tInnoDB\t0\tr\tconv\t\tAria\t0\tr\tconv\t\n" +
		"2026-11-25  0:30:17\tALTER\tAria\t0\tr\tback\t\tInnoDB\t0\tr\tback\t\n" +
		"short line\n"
	got := parseDDLLog([]byte(log))
	want := []string{
		"r.aria0 (Aria: RENAME)",
		"r.aria0_x (Aria: RENAME)",
		"r.aria1 (Aria: ALTER)",
		"r.my@0020t (MyISAM: TRUNCATE)",
		"r.conv (InnoDB to Aria: ALTER)",
		"r.back (Aria to InnoDB: ALTER)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("parseDDLLog:\n got %q\nwant %q", got, want)
	}
	if got := parseDDLLog([]byte("2026-11-25  0:30:16\tCREATE\tInnoDB\t0\tr\tt\t\n")); len(got) != 0 {
		t.Errorf("InnoDB only: %q, want nothing", got)
	}
}
