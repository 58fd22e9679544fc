package backup_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// What a backup reports it cost the server is what the server's clients
// met. A logical backup dumps a MyISAM table under BACKUP STAGE BLOCK_DDL
// at --max-rate 1 MiB/s, about two seconds, while a client runs DDL in
// another database the whole time: no DDL statement waited for the
// backup's lock longer than the DDL blocked time the backup reports (and
// one waited, so the report is of a real block). A physical backup of the same server
// reports the bytes mariabackup streamed and its own lock times. Both
// report the probe query's answers and print the same in text and JSON.
func TestBackupReportsItsImpact(t *testing.T) {
	t.Parallel()
	src := sandboxtest.Start(t, sandbox.Options{})
	usecasetest.ExecAll(t, src.DB(),
		"CREATE DATABASE m", "CREATE DATABASE other",
		"CREATE TABLE m.big (id INT PRIMARY KEY, pad VARCHAR(2000)) ENGINE=MyISAM",
		"INSERT INTO m.big SELECT seq, REPEAT(MD5(seq), 60) FROM m.seq_1_to_1100",
		"CREATE TABLE m.inno (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
		"INSERT INTO m.inno SELECT seq, seq FROM m.seq_1_to_1000")
	repo := usecasetest.NewLocalRepo(t)

	// DDL in a loop, in a database the backup leaves out, until stopped:
	// the longest wait of a statement for the backup's lock.
	stop, longest := ddlLoop(t, src)
	req := usecasetest.LogicalBackupOf(t, repo, src)
	req.Dump.Filter.Databases, req.MaxRate, req.Dump.Skip.Users = []string{"m"}, 1<<20, true
	res := usecasetest.Backup(t, req)
	stop()
	waited := longest()
	i := res.Impact
	if i == nil {
		t.Fatal("the logical backup reports no impact")
	}
	ddl := time.Duration(i.DDLBlockedSeconds * float64(time.Second))
	t.Logf("logical: %+v; a DDL statement waited for the backup's lock %v at most", *i, waited)
	if ddl < time.Second || waited < ddl/2 || waited > ddl+500*time.Millisecond {
		t.Errorf("logical: DDL blocked %v reported, a DDL statement waited for the backup's lock %v: want about the same, over a second", ddl, waited)
	}
	checkImpact(t, "logical", res)

	phys := usecasetest.Backup(t, usecasetest.BackupOf(t, repo, src))
	checkImpact(t, "physical", phys)
	if i := phys.Impact; i.CommitsBlockedSeconds <= 0 || i.DDLBlockedSeconds < i.CommitsBlockedSeconds {
		t.Errorf("physical: DDL blocked %gs, commits %gs: want both, commits within DDL's", i.DDLBlockedSeconds, i.CommitsBlockedSeconds)
	}
}

// checkImpact checks what any backup's impact must hold, and that its text
// and JSON say it.
func checkImpact(t *testing.T, what string, res *backup.Result) {
	t.Helper()
	i, m := res.Impact, res.Manifest
	switch {
	case i == nil:
		t.Fatalf("%s: no impact reported", what)
	case i.ReadBytes != m.Stats.RawBytes || i.ReadBytes <= 0:
		t.Errorf("%s: %d bytes read reported, the backup holds %d", what, i.ReadBytes, m.Stats.RawBytes)
	case i.DDLBlockedSeconds != m.Stats.DDLBlockedSeconds || i.CommitsBlockedSeconds != m.Stats.CommitsBlockedSeconds:
		t.Errorf("%s: the report's lock times %+v are not the manifest's %+v", what, *i, m.Stats)
	case i.DDLBlockedSeconds <= 0 || i.DDLBlockedSeconds > m.Stats.Seconds:
		t.Errorf("%s: DDL blocked %gs of a backup of %gs", what, i.DDLBlockedSeconds, m.Stats.Seconds)
	case i.Probes < 1 || i.ProbeMedianSeconds <= 0 || i.ProbeMaxSeconds < i.ProbeMedianSeconds:
		t.Errorf("%s: probes %+v", what, i.ProbeStats)
	}
	var text bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("backup %s: cost to the server: ", m.ID); !strings.Contains(text.String(), want) || !strings.Contains(text.String(), "SELECT 1 answered in") {
		t.Errorf("%s: the text lacks the cost:\n%s", what, text.String())
	}
	data, err := json.Marshal(res.JSON())
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		ID     string         `json:"id"`
		Impact *backup.Impact `json:"impact"`
	}
	if err := json.Unmarshal(data, &got); err != nil || got.ID != m.ID || got.Impact == nil || *got.Impact != *i {
		t.Errorf("%s: the JSON %s does not say the impact %+v", what, data, *i)
	}
}

// ddlLoop runs CREATE and DROP TABLE in database other of s, one after
// the other, until stop; longest is the longest any of them waited for
// the backup's lock, as the server counts it (its processlist's time in
// the state "Waiting for backup lock", polled every 20 ms): not the
// statement's whole time, which on a loaded machine adds a second or
// more of its own work to the wait.
func ddlLoop(t *testing.T, s *sandbox.Server) (stop func(), longest func() time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		most time.Duration
		err  error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ctx.Err() == nil; n++ {
			for _, q := range []string{fmt.Sprintf("CREATE TABLE other.t%d (id INT) ENGINE=InnoDB", n), fmt.Sprintf("DROP TABLE other.t%d", n)} {
				_, qerr := s.DB().ExecContext(context.WithoutCancel(ctx), q)
				mu.Lock()
				if qerr != nil && err == nil {
					err = qerr
				}
				mu.Unlock()
			}
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			var ms float64
			qerr := s.DB().QueryRowContext(context.WithoutCancel(ctx), `SELECT COALESCE(MAX(TIME_MS), 0) FROM information_schema.PROCESSLIST
				WHERE STATE = 'Waiting for backup lock' AND INFO LIKE '% TABLE other.t%'`).Scan(&ms)
			mu.Lock()
			if qerr != nil && err == nil {
				err = qerr
			}
			most = max(most, time.Duration(ms*float64(time.Millisecond)))
			mu.Unlock()
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	}()
	stop = func() {
		cancel()
		wg.Wait()
		if err != nil {
			t.Fatalf("DDL beside the backup: %v", err)
		}
	}
	return stop, func() time.Duration { mu.Lock(); defer mu.Unlock(); return most }
}
