package cli

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/binlog"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/usecasetest"
)

// The recovery point of issue 14: a counter table written at about 500
// transactions a second, binlog --follow --flush-interval 1s archiving
// it, the source killed with SIGKILL at a random moment and its datadir
// deleted. A point-in-time restore to the last archived transaction holds
// every row committed up to flush interval + 1 s before the kill, and no
// row the writer never sent. Local and S3 repositories alike; and once
// more with binlog --follow killed first, so that it cannot store what it
// received last when the source goes away: what the interval alone
// guarantees, if the archiving host is lost too.
func TestBinlogFollowRPO(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	for _, k := range usecasetest.Backends {
		for _, killArchiver := range []bool{false, true} {
			name := k.Name + "/source-killed"
			if killArchiver {
				name = k.Name + "/archiver-and-source-killed"
			}
			t.Run(name, func(t *testing.T) { followRPO(t, bin, testRepo{k.Make(t)}, killArchiver) })
		}
	}
}

func followRPO(t *testing.T, bin string, tr testRepo, killArchiver bool) {
	const flush = time.Second
	{
		ctx := context.Background()
		src := sandboxtest.Start(t, sandbox.Options{})
		if _, err := src.DB().Exec("CREATE DATABASE m"); err != nil {
			t.Fatal(err)
		}
		if _, err := src.DB().Exec("CREATE TABLE m.counter (id BIGINT PRIMARY KEY, at DATETIME(6))"); err != nil {
			t.Fatal(err)
		}
		var hostname string
		var serverID uint32
		if err := src.DB().QueryRow("SELECT @@hostname, @@server_id").Scan(&hostname, &serverID); err != nil {
			t.Fatal(err)
		}
		run(t, append([]string{"backup", "--repo", tr.Location}, sandboxConn(src)...)...).mustSucceed(t)

		follow := exec.Command(bin, append([]string{"binlog", "--repo", tr.Location, "--follow", "--flush-interval", flush.String(), "--progress", "none"}, sandboxConn(src)...)...)
		var stderr testkit.SyncBuffer
		follow.Stderr = &stderr
		if err := follow.Start(); err != nil {
			t.Fatal(err)
		}
		defer follow.Process.Kill()

		// The writer: one autocommit insert every 2 ms, each id recorded
		// with the moment its commit returned (never before the commit).
		type commit struct {
			id int64
			at time.Time
		}
		var (
			mu        sync.Mutex
			committed []commit
			attempted int64
		)
		db, err := src.Open("")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		db.SetMaxOpenConns(1)
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			tick := time.NewTicker(2 * time.Millisecond)
			defer tick.Stop()
			for id := int64(1); ; id++ {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				mu.Lock()
				attempted = id
				mu.Unlock()
				if _, err := db.Exec("INSERT INTO m.counter VALUES (?, NOW(6))", id); err != nil {
					return // the source is gone
				}
				at := time.Now()
				mu.Lock()
				committed = append(committed, commit{id, at})
				mu.Unlock()
			}
		}()

		time.Sleep(3*time.Second + rand.N(4*time.Second))
		// Stored every interval while the writer runs (checked below): on
		// a loaded machine, whose follower may take longer than its
		// interval, the writer goes on until three segments are stored.
		r, err := repo.Open(ctx, tr.Backend)
		if err != nil {
			t.Fatal(err)
		}
		usecasetest.WaitFor(t, "three segments stored while the writer runs", &stderr, func() bool {
			segs, err := r.BinlogSegments(ctx, binlog.SourceKey(hostname, serverID))
			return err == nil && len(segs) >= 3
		})
		killAt := time.Now()
		if killArchiver {
			follow.Process.Kill()
		}
		src.Kill()
		close(stop)
		<-done
		if err := os.RemoveAll(src.Datadir); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		if killArchiver {
			follow.Wait()
		} else {
			if err := follow.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			if err := follow.Wait(); err != nil {
				t.Errorf("binlog --follow after SIGINT: %v\n%s", err, stderr.String())
			}
		}
		if len(committed) == 0 {
			t.Fatal("the writer committed nothing")
		}
		rate := float64(len(committed)) / killAt.Sub(committed[0].at).Seconds()

		// What the archive reaches: the last GTID of the newest segment.
		segs, err := r.BinlogSegments(ctx, binlog.SourceKey(hostname, serverID))
		if err != nil || len(segs) == 0 {
			t.Fatalf("no segments archived (%v); binlog --follow said:\n%s", err, stderr.String())
		}
		// Stored every interval while the writer ran, not only at the end.
		if len(segs) < 3 {
			t.Errorf("%d segments after at least 3 s at --flush-interval %s", len(segs), flush)
		}
		last := segs[len(segs)-1]
		rc, err := r.OpenBinlogSegment(ctx, last)
		if err != nil {
			t.Fatal(err)
		}
		head, err := binlog.ReadSegment(rc, last.Source, last.Name, last.Start, last.End, nil)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}

		target := filepath.Join(t.TempDir(), "restored")
		run(t, "restore", "--repo", tr.Location, "--until-gtid", head.LastGTID, "--target-dir", target).mustSucceed(t)
		dst := usecasetest.ServerOn(t, target)
		var rows, maxID int64
		if err := dst.DB().QueryRow("SELECT COUNT(*), COALESCE(MAX(id), 0) FROM m.counter").Scan(&rows, &maxID); err != nil {
			t.Fatal(err)
		}
		if rows != maxID {
			t.Errorf("the restored counter table has %d rows up to id %d: a hole", rows, maxID)
		}
		if maxID > attempted {
			t.Errorf("the restored counter table holds id %d; the writer never sent more than %d", maxID, attempted)
		}
		cutoff := killAt.Add(-flush - time.Second)
		var must int64
		lastAt := committed[0].at
		for _, c := range committed {
			if !c.at.After(cutoff) {
				must = c.id
			}
			if c.id == maxID {
				lastAt = c.at
			}
		}
		lastID := committed[len(committed)-1].id
		lostRows := max(lastID-maxID, 0)
		lostTime := max(killAt.Sub(lastAt), 0)
		if maxID == 0 {
			lostTime = killAt.Sub(committed[0].at)
		}
		t.Logf("RPO into %s (binlog --follow killed too: %v), --flush-interval %s, %.0f commits/s, %d segments: lost %.3f s and %d rows (restored up to id %d of %d committed)",
			tr.Location, killArchiver, flush, rate, len(segs), lostTime.Seconds(), lostRows, maxID, lastID)
		if maxID < must {
			t.Errorf("the restored counter table ends at id %d; id %d was committed by %s, flush interval + 1 s before the kill", maxID, must, cutoff.Format(time.TimeOnly+".000"))
		}
	}
}
