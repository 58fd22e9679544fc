package physical

import (
	"testing"
	"time"
)

// The lock clock reads mariabackup's own lines (10.11's, as it prints
// them; FLUSH TABLES WITH READ LOCK for a mariabackup without backup
// stages): DDL waits from the request of BLOCK_DDL, commits from that of
// BLOCK_COMMIT, both until the unlock; a lock never let go of counts
// until mariabackup exited.
func TestLockClock(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 19, 37, 50, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	stages := []struct {
		ms   int
		line string
	}{
		{0, "[00] 2026-11-29 19:37:50 Starting BACKUP STAGE START"},
		{1, "[00] 2026-11-29 19:37:50 Acquiring BACKUP LOCKS..."},
		{2, "[00] 2026-11-29 19:37:50 Acquired locks for BACKUP STAGE START"},
		{3, "[00] 2026-11-29 19:37:50 Starting BACKUP STAGE FLUSH"},
		{4, "[00] 2026-11-29 19:37:50 Acquired locks for BACKUP STAGE FLUSH"},
		{100, "[00] 2026-11-29 19:37:50 Started BACKUP STAGE BLOCK_DDL"},
		{150, "[00] 2026-11-29 19:37:50 Acquired locks for BACKUP STAGE BLOCK_DDL"},
		{160, "[01] 2026-11-29 19:37:50 Streaming ./sys/innodb_lock_waits.frm to <STDOUT>"},
		{900, "[00] 2026-11-29 19:37:51 Finished BACKUP STAGE BLOCK_DDL"},
		{1000, "[00] 2026-11-29 19:37:51 Starting BACKUP STAGE BLOCK_COMMIT"},
		{1010, "[00] 2026-11-29 19:37:51 Acquired locks for BACKUP STAGE BLOCK_COMMIT"},
		{1200, "[00] 2026-11-29 19:37:51 Finishing BACKUP STAGE BLOCK_COMMIT"},
		{1250, "[00] 2026-11-29 19:37:51 Starting BACKUP STAGE END"},
		{1260, "[00] 2026-11-29 19:37:51 Executing BACKUP STAGE END"},
		{1270, "[00] 2026-11-29 19:37:51 All tables unlocked"},
	}
	var c lockClock
	for _, s := range stages {
		c.line(s.line, at(s.ms))
	}
	ddl, commit := c.blocked(at(5000))
	if ddl != 1160*time.Millisecond || commit != 260*time.Millisecond {
		t.Errorf("10.11: DDL blocked %v, commits %v; want 1.16s and 260ms", ddl, commit)
	}

	var ftwrl lockClock
	ftwrl.line("[00] 2024-01-01 00:00:00 Executing FLUSH TABLES WITH READ LOCK...", at(0))
	ftwrl.line("[00] 2024-01-01 00:00:00 Executing UNLOCK TABLES", at(300))
	if ddl, commit := ftwrl.blocked(at(5000)); ddl != 300*time.Millisecond || commit != 300*time.Millisecond {
		t.Errorf("FTWRL: DDL blocked %v, commits %v; want 300ms each", ddl, commit)
	}

	var died lockClock
	died.line("[00] Starting BACKUP STAGE BLOCK_COMMIT", at(100))
	if ddl, commit := died.blocked(at(700)); ddl != 600*time.Millisecond || commit != 600*time.Millisecond {
		t.Errorf("never unlocked: DDL blocked %v, commits %v; want 600ms each, until the exit", ddl, commit)
	}

	var none lockClock
	none.line("[00] All tables unlocked", at(100))
	if ddl, commit := none.blocked(at(700)); ddl != 0 || commit != 0 {
		t.Errorf("no lock taken: %v, %v", ddl, commit)
	}
}
