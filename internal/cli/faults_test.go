package cli

// SIGKILL in the middle of the work, to the built binary (TestKilled).
// The rest of the fault-injection suite (issue 7) drives the use cases'
// typed entry points: storage faults, a full disk and a server shut down
// mid-dump in internal/backup (faults_test.go), S3 outages there too
// (s3faults_test.go). A load killed mid-way is covered by
// TestLogicalResumeAfterKill (logical_test.go), Ctrl-C mid-backup by
// TestInterruptedBackupLeavesNothing (interrupt_test.go).

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/usecasetest"
)

// repoKinds are the backends the kill tests run on; neither may be skipped.
var repoKinds = []string{"local", "s3"}

// streaming reports whether backup data is reaching the repository: more
// than a MiB of (partial) objects on disk, or a multipart upload begun.
func (r testRepo) streaming(t *testing.T) bool {
	if r.S3 == nil {
		return usecasetest.DirBytes(filepath.Join(r.Location, "backups")) > 1<<20
	}
	for id := range r.BackupDirs(t) {
		if r.Uploads(t, id, r.BegunStreams(t, id)) > 0 {
			return true
		}
	}
	return false
}

// proc is a backstream process started by a test.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr testkit.SyncBuffer
	done           chan struct{}
	err            error // valid once done is closed
}

// startProc runs the built binary with args in the background; the test's
// end kills it if it is still running.
func startProc(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{done: make(chan struct{})}
	p.cmd = exec.Command(bin, append(args, "--progress", "none")...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL and waits for the process; it fails the test if the
// process had ended by itself before.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	p.cmd.Process.Kill()
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		t.Fatal("backstream still running a minute after SIGKILL")
	}
	ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("backstream ended by itself before the kill: %v\nstdout: %s\nstderr: %s", p.err, p.stdout.String(), p.stderr.String())
	}
}

// waitUntil polls cond until it holds; it fails the test after two
// minutes, or as soon as p (if given) has ended.
func waitUntil(t *testing.T, what string, p *proc, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if p != nil && p.exited() {
			t.Fatalf("waiting for %s: backstream ended first: %v\nstderr: %s", what, p.err, p.stderr.String())
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 2 minutes", what)
		}
	}
}

// procStat reads a process's command name, state and parent from
// /proc/<pid>/stat; ok is false once the process is gone.
func procStat(pid int) (comm string, state byte, ppid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, 0, false
	}
	// The name is in parentheses and may itself hold ") ".
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return "", 0, 0, false
	}
	fields := strings.Fields(string(b[end+1:]))
	if len(fields) < 2 {
		return "", 0, 0, false
	}
	ppid, _ = strconv.Atoi(fields[1])
	return string(b[open+1 : end]), fields[0][0], ppid, true
}

// mariabackupChildren returns the pids of the mariabackup processes whose
// parent is ppid and whose command line contains marker.
func mariabackupChildren(t *testing.T, ppid int, marker string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, _, parent, ok := procStat(pid)
		if !ok || parent != ppid || (comm != "mariabackup" && comm != "mariadb-backup") {
			continue
		}
		if cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline"); bytes.Contains(cmdline, []byte(marker)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// processGone reports whether pid has exited (a zombie has).
func processGone(pid int) bool {
	_, state, _, ok := procStat(pid)
	return !ok || state == 'Z'
}

// tcpConn connects to a sandbox server through addr (host:port).
func tcpConn(addr string) []string {
	host, port, _ := strings.Cut(addr, ":")
	return []string{"--host", host, "--port", port, "--user", "root", "--no-defaults"}
}

// SIGKILL in the middle of the work: of a physical and of a logical
// backup into a local and an S3 repository, of a restore, and of the
// mariabackup child of a backup. One source server serves them all.
//
// After a killed backup the mariabackup child is gone with backstream, no
// manifest exists and list shows nothing, the dead process's lock does not
// stop the next backup, which works and verifies, and expire
// --prune-incomplete then removes every object and upload of the killed
// one.
func TestKilled(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1, BigTableMB: 60}); err != nil {
		t.Fatal(err)
	}
	for _, kind := range repoKinds {
		t.Run("physical backup/"+kind, func(t *testing.T) {
			r := newTestRepo(t, kind)
			backup := append([]string{"backup", "--repo", r.Location, "--parallel", "2"}, sandboxConn(src)...)
			// Uncompressed, each stream is past the size at which an S3
			// multipart upload begins long before the throttled backup ends.
			p := startProc(t, bin, append(backup, "--compress", "none", "--max-io", "20")...)
			waitUntil(t, "backup data in the repository", p, func() bool { return r.streaming(t) })
			children := mariabackupChildren(t, p.cmd.Process.Pid, src.Datadir)
			if len(children) != 1 {
				t.Fatalf("%d mariabackup children of backstream mid-backup, want 1", len(children))
			}
			p.kill(t)
			waitUntil(t, "the end of mariabackup after backstream was killed", nil, func() bool { return processGone(children[0]) })
			afterKill(t, r, p, backup)
		})
	}
	for _, kind := range repoKinds {
		t.Run("logical backup/"+kind, func(t *testing.T) {
			r := newTestRepo(t, kind)
			backup := []string{"backup", "--logical", "--databases", "sample", "--repo", r.Location, "--parallel", "2"}
			// Through a gate that holds the server's answers after 24 MB
			// of them, out of some 40 MB of table data: the dump is mid-way
			// for sure when it is killed, with the big table's stream
			// (uncompressed) past the start of an S3 multipart upload.
			g := usecasetest.NewGate(t, "127.0.0.1:"+strconv.Itoa(src.Port), 24<<20)
			p := startProc(t, bin, append(append(backup, "--compress", "none"), tcpConn(g.Addr)...)...)
			waitUntil(t, "24 MB of table data read by the dump, and stored", p, func() bool { return g.Holding() && r.streaming(t) })
			p.kill(t)
			g.Open()
			afterKill(t, r, p, append(backup, sandboxConn(src)...))
		})
	}

	t.Run("restore", func(t *testing.T) {
		r := newTestRepo(t, "s3")
		run(t, append([]string{"backup", "--repo", r.Location, "--parallel", "2"}, sandboxConn(src)...)...).mustSucceed(t)
		listing := backupListing(t, r.Location)
		id := listing[0].ID
		// The restore reads the repository through a gate that holds
		// MinIO's answers after 20 MB of the backup's 35.
		g := usecasetest.NewGate(t, strings.TrimPrefix(r.S3.Endpoint, "http://"), 20<<20)
		target := filepath.Join(t.TempDir(), "datadir")
		p := startProc(t, bin, "restore", id, "--repo", r.Location, "--s3-endpoint", "http://"+g.Addr, "--target-dir", target)
		waitUntil(t, "a restore stuck with data written", p, func() bool { return g.Holding() && usecasetest.DirBytes(target) > 8<<20 })
		p.kill(t)
		g.Open()

		// Part of a datadir: fewer bytes than the backup holds. (Not
		// fewer files: the files of the other stream may all be there,
		// and the held one's begun, besides the marker and the journal.)
		written := testkit.TreeDigests(t, target)
		m, err := r.Open(t).Resolve(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		var whole int64
		for _, f := range m.Files {
			whole += f.Size
		}
		if n := usecasetest.DirBytes(filepath.Join(target, ".backstream-restoring.d")); n == 0 || n >= whole {
			t.Errorf("the killed restore left %d bytes of the backup's files' %d", n, whole)
		}
		// Restoring again into it is refused, naming the directory and the
		// interrupted restore, and touches nothing: what is there is for
		// the user to look at.
		again := run(t, "restore", id, "--repo", r.Location, "--target-dir", target)
		if want := "target " + target + " holds an interrupted restore (backup " + id; again.code != ExitFailure || !strings.Contains(fmt.Sprint(again.err), want) {
			t.Errorf("a second restore into the killed one's target: exit %d, %v; want a refusal saying %q", again.code, again.err, want)
		}
		testkit.CompareTrees(t, "the killed restore's target after a second restore", testkit.TreeDigests(t, target), written)
		// No server starts on it.
		if s, err := sandbox.Start(context.Background(), sandbox.Options{Dir: t.TempDir(), Datadir: target}); err == nil {
			s.Close()
			t.Error("a server started on the target of a killed restore")
		}
		// Emptied, it takes the restore.
		if err := os.RemoveAll(target); err != nil {
			t.Fatal(err)
		}
		run(t, "restore", id, "--repo", r.Location, "--target-dir", target).mustSucceed(t)
	})

	// mariabackup killed under a running backup: the backup fails naming
	// mariabackup and the signal, and leaves nothing.
	t.Run("mariabackup", func(t *testing.T) {
		r := newTestRepo(t, "local")
		backup := append([]string{"backup", "--repo", r.Location, "--parallel", "2"}, sandboxConn(src)...)
		p := startProc(t, bin, append(backup, "--max-io", "20")...)
		waitUntil(t, "backup data in the repository", p, func() bool { return r.streaming(t) })
		children := mariabackupChildren(t, p.cmd.Process.Pid, src.Datadir)
		if len(children) != 1 {
			t.Fatalf("%d mariabackup children of backstream mid-backup, want 1", len(children))
		}
		if err := syscall.Kill(children[0], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		select {
		case <-p.done:
		case <-time.After(2 * time.Minute):
			t.Fatal("backstream still running 2 minutes after its mariabackup was killed")
		}
		stderr := p.stderr.String()
		t.Logf("backstream: %v\n%s", p.err, stderr)
		if code := p.cmd.ProcessState.ExitCode(); code != ExitFailure {
			t.Errorf("exit code %d, want %d", code, ExitFailure)
		}
		for _, want := range []string{"mariabackup --backup failed", "signal: killed", "nothing was committed"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr does not say %q", want)
			}
		}
		if dirs := r.BackupDirs(t); len(dirs) != 0 {
			t.Errorf("left after the failed backup: %v", dirs)
		}
		run(t, "expire", "--repo", r.Location, "--prune-incomplete", "--confirm").mustSucceed(t)
		run(t, backup...).mustSucceed(t)
		run(t, "verify", "--repo", r.Location).mustSucceed(t)
	})
}

// afterKill checks the repository a backup was killed in, takes the next
// backup and prunes the killed one.
func afterKill(t *testing.T, r testRepo, killed *proc, backup []string) {
	t.Helper()
	id, streams := r.CheckUnfinished(t)
	if r.S3 != nil && r.Uploads(t, id, streams) == 0 {
		t.Error("no incomplete upload left by the killed backup: the prune below is not tested on one")
	}
	next := run(t, backup...).mustSucceed(t)
	gone := fmt.Sprintf("its process %d on this host is gone", killed.cmd.Process.Pid)
	if !strings.Contains(next.stderr, "stale lock") || !strings.Contains(next.stderr, gone) {
		t.Errorf("the next backup did not report the killed one's lock as stale (%q): %s", gone, next.stderr)
	}
	run(t, "verify", "--repo", r.Location).mustSucceed(t)
	r.PruneUnfinished(t, id, streams)
	if ids := listIDs(t, r.Location); len(ids) != 1 {
		t.Errorf("backups after the prune: %v, want the one after the kill", ids)
	}
}
