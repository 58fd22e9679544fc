package cli

// The fault-injection suite (issue 7): what backstream leaves behind and
// says when its storage, its process, its disk, its server or its
// mariabackup child fails in the middle of the work. Every case checks
// that no backup looks complete that is not, that the next backup of the
// same server works, and that expire --prune-incomplete removes what a
// dead backup left.
//
// A load killed mid-way is covered by TestLogicalResumeAfterKill
// (logical_test.go), Ctrl-C mid-backup by TestInterruptedBackupLeavesNothing
// (interrupt_test.go) and S3 outages by s3faults_test.go.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/storage/faulty"
	"github.com/backstream/backstream/internal/storage/local"
	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/usecasetest"
)

// repoKinds are the backends the kill tests run on; neither may be skipped.
var repoKinds = []string{"local", "s3"}

// mustLocal opens a local backend on dir for the rest of the test.
func mustLocal(t *testing.T, dir string) *local.Backend {
	t.Helper()
	b, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// begunStreams reads the names of the stream objects a backup announced
// in its begun marker (nil if it has none).
func (r testRepo) begunStreams(t *testing.T, id string) []string {
	t.Helper()
	rc, err := r.Backend.Open(context.Background(), "backups/"+id+"/"+repo.BegunName, 0, -1)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var header archive.Manifest
	if err := json.NewDecoder(rc).Decode(&header); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range header.Streams {
		names = append(names, s.Name)
	}
	return names
}

// uploads counts the incomplete multipart uploads of the named stream
// objects of backup id (always 0 in a local repository). MinIO lists
// uploads only by whole object name.
func (r testRepo) uploads(t *testing.T, id string, streams []string) int {
	t.Helper()
	if r.S3 == nil {
		return 0
	}
	keys := make([]string, len(streams))
	for i, s := range streams {
		keys[i] = "repo/backups/" + id + "/" + s
	}
	return incompleteUploads(t, r.S3, r.Bucket, keys)
}

// streaming reports whether backup data is reaching the repository: more
// than a MiB of (partial) objects on disk, or a multipart upload begun.
func (r testRepo) streaming(t *testing.T) bool {
	if r.S3 == nil {
		return usecasetest.DirBytes(filepath.Join(r.Location, "backups")) > 1<<20
	}
	for id := range r.backupDirs(t) {
		if r.uploads(t, id, r.begunStreams(t, id)) > 0 {
			return true
		}
	}
	return false
}

// backupDirs maps every backup directory of the repository to the names
// of its objects, relative to it.
func (r testRepo) backupDirs(t *testing.T) map[string][]string {
	t.Helper()
	objs, err := r.Backend.List(context.Background(), "backups/")
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string][]string{}
	for _, o := range objs {
		id, rest, _ := strings.Cut(strings.TrimPrefix(o.Name, "backups/"), "/")
		dirs[id] = append(dirs[id], rest)
	}
	return dirs
}

// checkKilled checks what a backup that died mid-way left: one backup
// directory, with its begun marker and without a manifest, that list does
// not show and expire shows as incomplete. It returns the backup's id and
// the stream objects it announced.
func (r testRepo) checkKilled(t *testing.T) (string, []string) {
	t.Helper()
	dirs := r.backupDirs(t)
	if len(dirs) != 1 {
		t.Fatalf("%d backup directories after one killed backup, want 1: %v", len(dirs), dirs)
	}
	var id string
	for d, objs := range dirs {
		id = d
		names := strings.Join(objs, " ")
		if strings.Contains(names, repo.ManifestName) {
			t.Errorf("backup %s of a killed backup has a manifest: %v", id, objs)
		}
		if !strings.Contains(names, repo.BegunName) {
			t.Errorf("backup %s of a killed backup has no %s: %v", id, repo.BegunName, objs)
		}
	}
	if ids := listIDs(t, r.Location); len(ids) != 0 {
		t.Errorf("list shows %v after a killed backup, want nothing", ids)
	}
	plan := expirePlan(t, run(t, "expire", "--repo", r.Location, "--prune-incomplete", "--json").mustSucceed(t))
	if e, ok := plan[id]; !ok || e.Complete || e.Deleted {
		t.Errorf("expire's dry run shows the killed backup %s as %+v (listed %v), want it incomplete and not deleted", id, e, ok)
	}
	return id, r.begunStreams(t, id)
}

// prune runs expire --prune-incomplete --confirm and checks that nothing
// of backup id is left, not even an invisible upload of its streams.
func (r testRepo) prune(t *testing.T, id string, streams []string) {
	t.Helper()
	run(t, "expire", "--repo", r.Location, "--prune-incomplete", "--confirm").mustSucceed(t)
	if objs := r.backupDirs(t)[id]; len(objs) != 0 {
		t.Errorf("objects of backup %s left after expire --prune-incomplete: %v", id, objs)
	}
	if n := r.uploads(t, id, streams); n != 0 {
		t.Errorf("%d incomplete uploads of backup %s left after expire --prune-incomplete", n, id)
	}
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

// gate is a TCP proxy in front of a server that lets the first limit bytes
// of the server's answers through (all connections together), then holds
// the rest until opened: whoever reads through it is stuck mid-transfer,
// for as long as the test needs, at a point set in bytes, not in time.
type gate struct {
	Addr   string // where clients connect: 127.0.0.1:port
	target string
	limit  int64

	mu     sync.Mutex
	passed int64
	conns  []net.Conn
	held   chan struct{} // closed once the limit is reached
	opened chan struct{} // closed by open
	once   sync.Once
}

func newGate(t *testing.T, target string, limit int64) *gate {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{Addr: l.Addr().String(), target: target, limit: limit, held: make(chan struct{}), opened: make(chan struct{})}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		l.Close()
		g.open()
		g.mu.Lock()
		for _, c := range g.conns {
			c.Close()
		}
		g.mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { g.serve(c) })
		}
	})
	return g
}

func (g *gate) serve(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", g.target)
	if err != nil {
		return
	}
	defer server.Close()
	g.mu.Lock()
	g.conns = append(g.conns, client, server)
	g.mu.Unlock()
	go func() {
		io.Copy(server, client)
		server.(*net.TCPConn).CloseWrite()
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			g.wait(int64(n))
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// wait counts n bytes going to a client and blocks while the gate holds.
func (g *gate) wait(n int64) {
	g.mu.Lock()
	g.passed += n
	over := g.passed > g.limit
	g.mu.Unlock()
	if over {
		g.once.Do(func() { close(g.held) })
		<-g.opened
	}
}

// holding reports whether the limit was reached: a client is stuck.
func (g *gate) holding() bool {
	select {
	case <-g.held:
		return true
	default:
		return false
	}
}

// open lets everything through from now on.
func (g *gate) open() {
	select {
	case <-g.opened:
	default:
		close(g.opened)
	}
}

// tcpConn connects to a sandbox server through addr (host:port).
func tcpConn(addr string) []string {
	host, port, _ := strings.Cut(addr, ":")
	return []string{"--host", host, "--port", port, "--user", "root", "--no-defaults"}
}

// errGone is what the faulty backend fails with: a storage that went away.
var errGone = errors.New("storage went away")

// Faults of the storage under the real repository, archive and physical
// code: a write that fails, is cut short or is silently corrupted, a
// cleanup that cannot delete, reads that fail, come back damaged or short
// (the stored data itself intact), and slow ones.
//
// The faulty wrapper is driven in-process through the calls the commands
// make (physical.RunBackup and RunRestore with a repository as backup and
// restore do, archive.Read as verify does), because the binary has no way
// to take a wrapped backend, and a test-only URL scheme or environment hook
// would ship in every binary and be one more way to misconfigure it. What
// is left out is only flag parsing; the other tests here run the binary.
func TestFaultyBackendEndToEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 2, BigTableMB: 24}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	inner := mustLocal(t, dir)
	fb := faulty.New(inner)
	r, err := repo.Init(ctx, fb, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := mariadb.Resolve(mariadb.Flags{Socket: src.Socket, User: "root", NoDefaults: true})
	if err != nil {
		t.Fatal(err)
	}
	zstd, err := codec.Parse(codec.Default)
	if err != nil {
		t.Fatal(err)
	}
	job := physical.BackupJob{Dest: r, Conn: conn, Parallel: 2, Codec: zstd, Hash: archive.DefaultHash, Version: "test"}
	// Stream 00001 gets the faults: the other keeps going meanwhile.
	const victim = "/streams/00001.xbs.zst"

	// met fails the test if the faults set up were never met.
	met := func(t *testing.T) {
		t.Helper()
		if fb.Fired() == 0 {
			t.Fatal("no fault fired: the test did not test what it is about")
		}
	}
	// plain is the same repository without the faults, as the commands see it.
	plain := testRepo{usecasetest.Repo{Location: dir, Backend: inner}}
	backupFails := func(t *testing.T, want ...string) {
		t.Helper()
		m, err := physical.RunBackup(ctx, job)
		if err == nil {
			t.Fatalf("backup %s succeeded through a failing backend", m.ID)
		}
		met(t)
		t.Logf("backup: %v", err)
		if ExitCode(err, false) != ExitFailure {
			t.Errorf("exit code %d, want %d", ExitCode(err, false), ExitFailure)
		}
		for _, w := range append(want, "nothing was committed") {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not say %q", err, w)
			}
		}
	}

	t.Run("write fails", func(t *testing.T) {
		defer fb.Clear()
		fb.Add(faulty.Fault{Op: faulty.OpPut, Name: victim, After: 64 << 10, Err: errGone})
		backupFails(t, "00001.xbs.zst", errGone.Error())
		// The backup cleaned up after itself.
		if left := plain.backupDirs(t); len(left) != 0 {
			t.Errorf("left after a failed backup: %v", left)
		}
	})

	t.Run("write cut short", func(t *testing.T) {
		defer fb.Clear()
		fb.Add(faulty.Fault{Op: faulty.OpPut, Name: victim, After: 64 << 10, Truncate: true})
		backupFails(t, "00001.xbs.zst", "backend stopped reading before the stream ended")
		if left := plain.backupDirs(t); len(left) != 0 {
			t.Errorf("left after a failed backup: %v", left)
		}
	})

	t.Run("write and cleanup fail", func(t *testing.T) {
		defer fb.Clear()
		fb.Add(faulty.Fault{Op: faulty.OpPut, Name: victim, After: 64 << 10, Err: errGone})
		fb.Add(faulty.Fault{Op: faulty.OpDelete, Err: errGone})
		backupFails(t, "removing its partial objects failed")
		left := plain.backupDirs(t)
		if len(left) != 1 {
			t.Fatalf("%d backup directories after a failed backup that could not clean up, want 1: %v", len(left), left)
		}
		fb.Clear()
		// The commands see it as the leftover it is, and prune it.
		id, streams := plain.checkKilled(t)
		plain.prune(t, id, streams)
	})

	m, err := physical.RunBackup(ctx, job)
	if err != nil {
		t.Fatalf("backup through the wrapper without faults: %v", err)
	}
	// The reads are faulted in the middle of the biggest stream: which
	// stream the big table's file went to depends on which path reached
	// the stream writer first (a new path goes to the stream with the
	// fewest bytes so far), and the other may hold under a MiB.
	readVictim, victimSize := "", int64(-1)
	for _, s := range m.Streams {
		if s.Size > victimSize {
			readVictim, victimSize = "/streams/"+path.Base(s.Name), s.Size
		}
	}
	if victimSize < 1<<20 {
		t.Fatalf("the biggest stream, %s, is %d bytes: too small to fault in its middle", readVictim, victimSize)
	}
	readName := path.Base(readVictim)

	// verify is the verify command's reading: every stream, every checksum.
	verify := func(m *archive.Manifest) error {
		if err := archive.Read(ctx, archive.ReadOptions{Input: r.Input(m), Manifest: m}); err != nil {
			return fmt.Errorf("backup %s: %w", m.ID, err)
		}
		return nil
	}
	restoreInto := func(t *testing.T, m *archive.Manifest) (string, error) {
		target := filepath.Join(t.TempDir(), "datadir")
		return target, restore.Datadir(ctx, restore.Job{Links: []restore.Link{{Manifest: m, Input: r.Input(m)}}, TargetDir: target})
	}

	t.Run("write corrupted silently", func(t *testing.T) {
		defer fb.Clear()
		fb.Add(faulty.Fault{Op: faulty.OpPut, Name: victim, After: 64 << 10, Corrupt: true})
		bad, err := physical.RunBackup(ctx, job)
		met(t)
		if err != nil {
			t.Fatalf("a backend that flips a byte without telling fails the backup: %v", err)
		}
		fb.Clear()
		// Nothing at backup time could see it; the first read does.
		err = verify(bad)
		if ExitCode(err, false) != ExitCorrupt || !strings.Contains(fmt.Sprint(err), "00001.xbs.zst") || !strings.Contains(fmt.Sprint(err), bad.ID) {
			t.Errorf("verify of a backup stored damaged: exit %d, %v; want %d naming the backup and the object", ExitCode(err, false), err, ExitCorrupt)
		}
		if err := r.Remove(ctx, bad.ID); err != nil {
			t.Fatal(err)
		}
	})

	readCases := []struct {
		name  string
		fault faulty.Fault
		code  int
		want  []string
	}{
		{"read corrupted", faulty.Fault{Corrupt: true}, ExitCorrupt, []string{readName, "checksum mismatch"}},
		{"read cut short", faulty.Fault{Truncate: true}, ExitCorrupt, []string{readName, "truncated"}},
		{"read fails", faulty.Fault{Err: errGone}, ExitFailure, []string{readName, errGone.Error()}},
		{"slow reads", faulty.Fault{Delay: 200 * time.Millisecond}, ExitOK, nil},
	}
	for _, tc := range readCases {
		t.Run(tc.name, func(t *testing.T) {
			defer fb.Clear()
			f := tc.fault
			f.Op, f.Name, f.After = faulty.OpRead, readVictim, victimSize/2
			fb.Add(f)
			if tc.code == ExitOK {
				fb.Add(faulty.Fault{Op: faulty.OpOpen, Delay: 100 * time.Millisecond})
			}
			for _, what := range []string{"verify", "restore"} {
				before := fb.Fired()
				var err error
				target := ""
				if what == "verify" {
					err = verify(m)
				} else {
					target, err = restoreInto(t, m)
				}
				if fb.Fired() == before {
					t.Fatalf("%s: no fault fired", what)
				}
				t.Logf("%s: %v", what, err)
				if code := ExitCode(err, false); code != tc.code {
					t.Errorf("%s: exit %d (%v), want %d", what, code, err, tc.code)
				}
				if err == nil {
					continue
				}
				for _, w := range append(tc.want, m.ID) {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: error %q does not name %q", what, err, w)
					}
				}
				if errors.Is(tc.fault.Err, errGone) && !errors.Is(err, errGone) {
					t.Errorf("%s: error %q does not wrap the backend's", what, err)
				}
				if target != "" {
					if _, serr := os.Stat(target); !errors.Is(serr, fs.ErrNotExist) {
						t.Errorf("a failed restore left its target behind (%v)", serr)
					}
				}
			}
		})
	}

	// The faults were in transit only: the stored backup is whole.
	if err := verify(m); err != nil {
		t.Fatalf("verify without faults: %v", err)
	}
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
			g := newGate(t, "127.0.0.1:"+strconv.Itoa(src.Port), 24<<20)
			p := startProc(t, bin, append(append(backup, "--compress", "none"), tcpConn(g.Addr)...)...)
			waitUntil(t, "24 MB of table data read by the dump, and stored", p, func() bool { return g.holding() && r.streaming(t) })
			p.kill(t)
			g.open()
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
		g := newGate(t, strings.TrimPrefix(r.S3.Endpoint, "http://"), 20<<20)
		target := filepath.Join(t.TempDir(), "datadir")
		p := startProc(t, bin, "restore", id, "--repo", r.Location, "--s3-endpoint", "http://"+g.Addr, "--target-dir", target)
		waitUntil(t, "a restore stuck with data written", p, func() bool { return g.holding() && usecasetest.DirBytes(target) > 8<<20 })
		p.kill(t)
		g.open()

		// Part of a datadir: fewer bytes than the backup holds. (Not
		// fewer files: the files of the other stream may all be there,
		// and the held one's begun, besides the marker and the journal.)
		written := usecasetest.TreeDigests(t, target)
		m, err := archive.ParseManifest(r.Read(t, "backups/"+id+"/"+repo.ManifestName))
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
		usecasetest.CompareTrees(t, "the killed restore's target after a second restore", usecasetest.TreeDigests(t, target), written)
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
		if dirs := r.backupDirs(t); len(dirs) != 0 {
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
	id, streams := r.checkKilled(t)
	if r.S3 != nil && r.uploads(t, id, streams) == 0 {
		t.Error("no incomplete upload left by the killed backup: the prune below is not tested on one")
	}
	next := run(t, backup...).mustSucceed(t)
	gone := fmt.Sprintf("its process %d on this host is gone", killed.cmd.Process.Pid)
	if !strings.Contains(next.stderr, "stale lock") || !strings.Contains(next.stderr, gone) {
		t.Errorf("the next backup did not report the killed one's lock as stale (%q): %s", gone, next.stderr)
	}
	run(t, "verify", "--repo", r.Location).mustSucceed(t)
	r.prune(t, id, streams)
	if ids := listIDs(t, r.Location); len(ids) != 1 {
		t.Errorf("backups after the prune: %v, want the one after the kill", ids)
	}
}

// smallDisk mounts a tmpfs of the given size on a new directory for the
// rest of the test.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a %s tmpfs on %s: %v\n%s", size, dir, err, out)
	}
	t.Cleanup(func() {
		// Lazily: commands run in-process leave their local backend's
		// directory handle open (a process exits instead), which keeps
		// the mount busy until the test binary ends.
		if out, err := exec.Command("umount", "--lazy", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", dir, err, out)
		}
	})
	return dir
}

// A full disk under a restore's target and under a local repository: a
// clear error naming the file, nothing that looks complete, no hang.
func TestFullDisk(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("mounting a small tmpfs needs root, which CI has")
		}
		t.Skip("mounting a small tmpfs needs root")
	}
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1, BigTableMB: 60}); err != nil {
		t.Fatal(err)
	}
	background := func(args ...string) <-chan result {
		done := make(chan result, 1)
		go func() { done <- runQuiet(args...) }()
		return done
	}

	t.Run("restore target", func(t *testing.T) {
		repoDir := newRepoDir(t)
		backup := append([]string{"backup", "--repo", repoDir, "--parallel", "2"}, sandboxConn(src)...)
		run(t, backup...).mustSucceed(t)
		// 32 MiB for a datadir of some 200.
		target := smallDisk(t, "32m")
		r := waitResult(t, "restore onto a full disk", background("restore", "--repo", repoDir, "--target-dir", target))
		if r.code != ExitFailure {
			t.Errorf("exit %d, want %d", r.code, ExitFailure)
		}
		for _, want := range []string{"no space left on device", target + "/"} {
			if !strings.Contains(fmt.Sprint(r.err), want) {
				t.Errorf("error %v does not say %q", r.err, want)
			}
		}
		if entries, err := os.ReadDir(target); err != nil || len(entries) != 0 {
			t.Errorf("the target holds %d entries after the failed restore (%v)", len(entries), err)
		}
	})

	t.Run("repository", func(t *testing.T) {
		// 64 MiB: too small for an uncompressed backup of some 200, large
		// enough for a compressed one of some 35.
		repoDir := filepath.Join(smallDisk(t, "64m"), "repo")
		run(t, "init", "--repo", repoDir).mustSucceed(t)
		backup := append([]string{"backup", "--repo", repoDir, "--parallel", "2"}, sandboxConn(src)...)
		r := waitResult(t, "backup onto a full disk", background(append(backup, "--compress", "none")...))
		if r.code != ExitFailure {
			t.Errorf("exit %d, want %d", r.code, ExitFailure)
		}
		for _, want := range []string{"no space left on device", "streams/0000", "nothing was committed"} {
			if !strings.Contains(fmt.Sprint(r.err), want) {
				t.Errorf("error %v does not say %q", r.err, want)
			}
		}
		left := testRepo{usecasetest.Repo{Location: repoDir, Backend: mustLocal(t, repoDir)}}
		if dirs := left.backupDirs(t); len(dirs) != 0 {
			t.Errorf("left after the failed backup: %v", dirs)
		}
		run(t, "expire", "--repo", repoDir, "--prune-incomplete", "--confirm").mustSucceed(t)
		run(t, backup...).mustSucceed(t)
		run(t, "verify", "--repo", repoDir).mustSucceed(t)
	})
}

// The server shut down cleanly in the middle of a logical dump: the dump
// fails saying the connection to the server was lost, nothing is
// committed, and once the server is back the next dump works.
func TestServerShutdownMidDump(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 1, BigTableMB: 60}); err != nil {
		t.Fatal(err)
	}
	r := newTestRepo(t, "local")
	backup := []string{"backup", "--logical", "--databases", "sample", "--repo", r.Location, "--parallel", "2"}
	// The gate holds the dump after 8 MB of some 40 MB of table data
	// while the server shuts down under it.
	g := newGate(t, "127.0.0.1:"+strconv.Itoa(src.Port), 8<<20)
	done := make(chan result, 1)
	go func() { done <- runQuiet(append(backup, tcpConn(g.Addr)...)...) }()
	for deadline := time.Now().Add(2 * time.Minute); !g.holding(); time.Sleep(5 * time.Millisecond) {
		select {
		case r := <-done:
			t.Fatalf("the dump ended before 8 MB of table data: %v", r.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the dump read no 8 MB of table data within 2 minutes")
		}
	}
	if err := src.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	g.open()
	res := waitResult(t, "a dump whose server shut down", done)
	if res.code != ExitFailure {
		t.Errorf("exit %d, want %d", res.code, ExitFailure)
	}
	for _, want := range []string{"connection to the server", "table sample.big", "nothing was committed"} {
		if !strings.Contains(fmt.Sprint(res.err), want) {
			t.Errorf("error %v does not say %q", res.err, want)
		}
	}
	for id, objs := range r.backupDirs(t) {
		if strings.Contains(strings.Join(objs, " "), repo.ManifestName) {
			t.Errorf("backup %s has a manifest after its server shut down mid-dump", id)
		}
	}
	again := sandboxtest.Start(t, sandbox.Options{Datadir: src.Datadir})
	run(t, "expire", "--repo", r.Location, "--prune-incomplete", "--confirm").mustSucceed(t)
	if dirs := r.backupDirs(t); len(dirs) != 0 {
		t.Errorf("left after expire --prune-incomplete: %v", dirs)
	}
	run(t, append(backup, sandboxConn(again)...)...).mustSucceed(t)
	run(t, "verify", "--repo", r.Location).mustSucceed(t)
}
