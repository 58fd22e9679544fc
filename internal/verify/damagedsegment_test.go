package verify_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/binlog"
	"github.com/backstream/backstream/internal/pitr"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/usecasetest"
	"github.com/backstream/backstream/internal/verify"
)

// A segment stored by the archiver following the binary log (binlog
// --follow) and damaged afterwards: the restore test until the end fails
// as corruption (exit 3) naming the segment, a verify of that point in
// time and of every binary log alike, and the restore until the end
// refuses it the same way, leaving no datadir.
func TestVerifyDamagedSegment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	for _, q := range []string{"CREATE DATABASE m", "CREATE TABLE m.counter (id BIGINT PRIMARY KEY)"} {
		if _, err := src.DB().Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	r := usecasetest.NewLocalRepo(t)
	usecasetest.Backup(t, usecasetest.LogicalBackupOf(t, r, src))
	// Following as `binlog --follow --flush-interval 1s` does, until
	// stopped as SIGINT stops it.
	a := usecasetest.ArchiverOf(t, r, src)
	var said testkit.SyncBuffer
	a.FlushInterval, a.Log = time.Second, func(msg string) { fmt.Fprintln(&said, msg) }
	stop := usecasetest.Follow(t, a)
	writes(t, src.DB(), 3*time.Second)
	time.Sleep(2 * time.Second)
	if err := stop(); err != nil {
		t.Fatalf("binlog --follow, stopped: %v\n%s", err, said.String())
	}

	var hostname string
	var serverID uint32
	src.DB().QueryRow("SELECT @@hostname, @@server_id").Scan(&hostname, &serverID)
	segs, err := r.Open(t).BinlogSegments(ctx, binlog.SourceKey(hostname, serverID))
	if err != nil || len(segs) < 2 {
		t.Fatalf("%d segments archived (%v); binlog --follow said:\n%s", len(segs), err, said.String())
	}
	// verify --binlogs reads every archived file and segment.
	var quiet usecasetest.Said
	verifyBinlogs := func() (*verify.Result, error) {
		return verify.Locked(ctx, r.Access(), "", "", verify.Request{Binlogs: true}, quiet.Tracker)
	}
	if res, err := verifyBinlogs(); err != nil || !res.Binlogs || res.Segments != len(segs) {
		t.Errorf("verify --binlogs before any damage: %+v, %v; want OK counting %d segments", res, err, len(segs))
	}
	seg := segs[len(segs)-1]
	data := r.Read(t, seg.Object())
	data[len(data)-10] ^= 0x40 // in the binary log's bytes, after the header line
	r.Write(t, seg.Object(), data)
	named := fmt.Sprintf("segment %d..%d of binary log %s", seg.Start, seg.End, seg.Name)
	// What the command exits 3 for, naming the segment in its error or,
	// for the restore test, in the problems it prints.
	corrupt := func(what string, err error, printed string) {
		t.Helper()
		if !archive.IsCorrupt(err) || usecasetest.Refused(err) || !strings.Contains(errText(err)+printed, named) {
			t.Errorf("%s with a damaged segment: %v; want corruption naming %q\n%s", what, err, named, printed)
		}
	}
	_, err = verifyBinlogs()
	corrupt("verify --binlogs", err, "")
	_, err = verify.Locked(ctx, r.Access(), "", "", verify.Request{Until: &pitr.Target{End: true}}, quiet.Tracker)
	corrupt("verify --until end", err, "")
	rep, err := usecasetest.RestoreTestTo(t, r, pitr.Target{End: true})
	problems := ""
	if rep != nil {
		problems = strings.Join(rep.Problems, "\n")
	}
	corrupt("the restore test until the end", err, problems)
	req := usecasetest.PointInTimeOf(r, filepath.Join(t.TempDir(), "dd"))
	req.Until = "end"
	_, err = restorecase.Run(ctx, req)
	corrupt("the restore until the end", err, "")
	if _, err := os.Stat(req.Restore.TargetDir); err == nil {
		t.Errorf("a refused restore left %s", req.Restore.TargetDir)
	}
}

// writes inserts rows into m.counter for d, one a few milliseconds.
func writes(t *testing.T, db *sql.DB, d time.Duration) {
	t.Helper()
	end := time.Now().Add(d)
	for id := 1; time.Now().Before(end); id++ {
		if _, err := db.Exec("INSERT INTO m.counter VALUES (?)", id); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// errText is err's message; "" for none.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
