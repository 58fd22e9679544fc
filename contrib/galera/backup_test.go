package galera

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// TestGaleraBackupDesyncsAndRestoresIntoCluster backs up a node of a
// 2-node cluster while the other takes writes: the node is desynced
// (wsrep_desync ON) while the backup runs and resynced after; the
// manifest (list --json) holds the node's cluster position. The backup,
// restored and prepared, carries a grastate.dat at that position: a node
// started on it joins the cluster by IST (no snapshot sent) and holds the
// same rows; another copy bootstraps a new one-node cluster at the
// backup's position.
func TestGaleraBackupDesyncsAndRestoresIntoCluster(t *testing.T) {
	dir := t.TempDir()
	opt, _, _ := installSST(t, dir, "")
	bin := filepath.Join(dir, "backstream")
	c := sandboxtest.StartCluster(t, 2, opt)
	first, second := c.Nodes[0], c.Nodes[1]
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	mustExec(t, first.DB(), "CREATE DATABASE app; CREATE TABLE app.t (id INT AUTO_INCREMENT PRIMARY KEY, n INT, s VARCHAR(200)); CREATE TABLE app.u (id INT PRIMARY KEY, n INT)")
	if err := sandbox.LoadSample(ctx, first.DB(), sandbox.SampleOptions{Tables: 2}); err != nil {
		t.Fatal(err)
	}
	repoDir := filepath.Join(dir, "repo")
	backstream(t, bin, "init", "--repo", repoDir)

	// The backup of the second node, slowed so that its desync can be
	// seen, while the first takes writes.
	stop := startLoad(t, first.DB())
	backup := exec.CommandContext(ctx, bin, "backup", "--repo", repoDir, "--socket", second.Socket, "--user", "root",
		"--parallel", "2", "--max-rate", "8MiB/s")
	var out strings.Builder
	backup.Stdout, backup.Stderr = &out, &out
	if err := backup.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- backup.Wait() }()
	var desynced, polls int
	var berr error
poll:
	for {
		select {
		case berr = <-done:
			break poll
		case <-time.After(100 * time.Millisecond):
		}
		var v string
		if err := second.DB().QueryRowContext(ctx, "SELECT @@GLOBAL.wsrep_desync").Scan(&v); err == nil {
			polls++
			if v == "1" {
				desynced++
			}
		}
	}
	if n := stop(); n == 0 {
		t.Error("the load wrote nothing during the backup")
	}
	if berr != nil {
		t.Fatalf("backup: %v\n%s", berr, out.String())
	}
	if desynced == 0 || desynced < polls/2 {
		t.Errorf("wsrep_desync was ON in %d of %d polls during the backup, want most", desynced, polls)
	}
	var after string
	if err := second.DB().QueryRowContext(ctx, "SELECT @@GLOBAL.wsrep_desync").Scan(&after); err != nil || after != "0" {
		t.Errorf("wsrep_desync after the backup: %q (%v), want OFF", after, err)
	}
	var list []struct {
		ID        string
		Positions archive.Positions
	}
	if err := json.Unmarshal([]byte(backstream(t, bin, "list", "--repo", repoDir, "--json")), &list); err != nil || len(list) != 1 {
		t.Fatalf("list --json: %v %+v", err, list)
	}
	pos := list[0].Positions.Galera
	clusterUUID, err := second.WsrepStatus(ctx, "local_state_uuid")
	if err != nil {
		t.Fatal(err)
	}
	if pos == nil || pos.UUID != clusterUUID || pos.Seqno <= 0 {
		t.Fatalf("the manifest's galera position is %+v, want the cluster's %s at a positive seqno", pos, clusterUUID)
	}
	if table := backstream(t, bin, "list", "--repo", repoDir); !strings.Contains(table, "galera "+pos.String()) {
		t.Errorf("list does not show the galera position %s:\n%s", pos, table)
	}

	t.Run("JoinByIST", func(t *testing.T) {
		restored := filepath.Join(dir, "ist", "data")
		msg := backstream(t, bin, "restore", "latest", "--repo", repoDir, "--target-dir", restored, "--prepare")
		if !strings.Contains(msg, "grastate.dat holds "+pos.String()) {
			t.Errorf("restore does not tell of grastate.dat:\n%s", msg)
		}
		grastate := readFile(t, filepath.Join(restored, "grastate.dat"))
		if !strings.Contains(grastate, pos.UUID) || !strings.Contains(grastate, "safe_to_bootstrap: 1") {
			t.Errorf("grastate.dat:\n%s", grastate)
		}
		mustExec(t, first.DB(), "INSERT INTO app.u VALUES (1000001, 1), (1000002, 2)")
		before := logSizes(c.Nodes)
		n, err := c.Join(t, sandbox.Options{Dir: filepath.Join(dir, "ist"), Datadir: restored})
		if err != nil {
			t.Fatalf("a node on the restored backup did not join: %v", err)
		}
		log := readFile(t, n.ErrorLog)
		if !strings.Contains(log, "by IST") || strings.Contains(log, "receiving a snapshot") {
			t.Errorf("the node on the restored backup did not join by IST:\n%s", n.ErrorLogTail(40))
		}
		if strings.Contains(newLog(c.Nodes[:2], before), "sending a snapshot") {
			t.Errorf("a donor sent a snapshot to the node on the restored backup")
		}
		sameTables(t, ctx, first, n)
	})

	t.Run("Bootstrap", func(t *testing.T) {
		restored := filepath.Join(dir, "new-cluster", "data")
		backstream(t, bin, "restore", "latest", "--repo", repoDir, "--target-dir", restored, "--prepare")
		n, err := sandbox.Start(ctx, sandbox.Options{Dir: filepath.Join(dir, "new-cluster"), Datadir: restored,
			Galera: &sandbox.Galera{ClusterName: "restored"}, OptionFile: opt.OptionFile, Env: opt.Env})
		if err != nil {
			t.Fatalf("a new cluster on the restored backup: %v", err)
		}
		defer n.Close()
		if err := n.WaitSynced(ctx); err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string]string{"cluster_size": "1", "cluster_status": "Primary", "local_state_uuid": pos.UUID} {
			if got, err := n.WsrepStatus(ctx, name); err != nil || got != want {
				t.Errorf("wsrep_%s of the new cluster: %q (%v), want %q", name, got, err, want)
			}
		}
		// The new cluster's first view takes the seqno after the backup's.
		last, err := n.WsrepStatus(ctx, "last_committed")
		if seq, perr := strconv.ParseInt(last, 10, 64); err != nil || perr != nil || seq < pos.Seqno || seq > pos.Seqno+1 {
			t.Errorf("wsrep_last_committed of the new cluster: %q (%v), want the backup's %d or the next", last, err, pos.Seqno)
		}
		if _, err := sandbox.ChecksumTables(ctx, n.DB()); err != nil {
			t.Errorf("the new cluster's tables: %v", err)
		}
	})
}

// backstream runs the binary bin with args and returns its standard
// output; t.Fatal if it fails.
func backstream(t *testing.T, bin string, args ...string) string {
	t.Helper()
	var stderr strings.Builder
	cmd := exec.Command(bin, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("backstream %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}
