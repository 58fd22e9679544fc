package backup_test

// The fault-injection suite (issue 7): what backstream leaves behind and
// says when its storage, its disk, its server or its mariabackup child
// fails in the middle of the work. Every case checks that no backup looks
// complete that is not, that the next backup of the same server works,
// and that expire --prune-incomplete removes what a dead backup left.
//
// S3 outages are in s3faults_test.go; a process killed mid-way is
// TestKilled in internal/cli (it kills the built binary), a load killed
// mid-way TestLogicalResumeAfterKill there too.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/retention"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/storage/faulty"
	"github.com/backstream/backstream/internal/storage/local"
	"github.com/backstream/backstream/internal/usecasetest"
	"github.com/backstream/backstream/internal/verify"
)

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

// background runs fn in a goroutine; its error comes on the channel.
func background(fn func() error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	return done
}

// waitErr waits for what background started and returns its error; it
// fails the test if that takes more than three minutes: a hang.
func waitErr(t *testing.T, what string, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		t.Logf("%s: %v", what, err)
		return err
	case <-time.After(3 * time.Minute):
		t.Fatalf("%s did not finish", what)
	}
	return nil
}

// errGone is what the faulty backend fails with: a storage that went away.
var errGone = errors.New("storage went away")

// Faults of the storage under the real repository, archive and physical
// code: a write that fails, is cut short or is silently corrupted, a
// cleanup that cannot delete, reads that fail, come back damaged or short
// (the stored data itself intact), and slow ones.
//
// The faulty wrapper is under the repository that the use cases' typed
// requests take (backup.Run, verify.Run, restorecase.Run), because the
// binary has no way to take a wrapped backend, and a test-only URL scheme
// or environment hook would ship in every binary and be one more way to
// misconfigure it.
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
	// plain is the same repository without the faults, as the commands see it.
	plain := usecasetest.Repo{Location: dir, Backend: inner}
	// req is `backup --parallel 2`, into the repository through the faults.
	req := usecasetest.BackupOf(t, plain, src)
	req.Repo = r
	// Stream 00001 gets the faults: the other keeps going meanwhile.
	const victim = "/streams/00001.xbs.zst"

	// met fails the test if the faults set up were never met.
	met := func(t *testing.T) {
		t.Helper()
		if fb.Fired() == 0 {
			t.Fatal("no fault fired: the test did not test what it is about")
		}
	}
	backupFails := func(t *testing.T, want ...string) {
		t.Helper()
		res, err := backup.Run(ctx, req)
		if err == nil {
			t.Fatalf("backup %s succeeded through a failing backend", res.Manifest.ID)
		}
		met(t)
		t.Logf("backup: %v", err)
		if !usecasetest.Failed(err) {
			t.Errorf("backup: %v; want a failure (exit 1), neither a refusal nor damage", err)
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
		if left := plain.BackupDirs(t); len(left) != 0 {
			t.Errorf("left after a failed backup: %v", left)
		}
	})

	t.Run("write cut short", func(t *testing.T) {
		defer fb.Clear()
		fb.Add(faulty.Fault{Op: faulty.OpPut, Name: victim, After: 64 << 10, Truncate: true})
		backupFails(t, "00001.xbs.zst", "backend stopped reading before the stream ended")
		if left := plain.BackupDirs(t); len(left) != 0 {
			t.Errorf("left after a failed backup: %v", left)
		}
	})

	t.Run("write and cleanup fail", func(t *testing.T) {
		defer fb.Clear()
		fb.Add(faulty.Fault{Op: faulty.OpPut, Name: victim, After: 64 << 10, Err: errGone})
		fb.Add(faulty.Fault{Op: faulty.OpDelete, Err: errGone})
		backupFails(t, "removing its partial objects failed")
		left := plain.BackupDirs(t)
		if len(left) != 1 {
			t.Fatalf("%d backup directories after a failed backup that could not clean up, want 1: %v", len(left), left)
		}
		fb.Clear()
		// list and expire see it as the leftover it is, and prune it.
		id, streams := plain.CheckUnfinished(t)
		plain.PruneUnfinished(t, id, streams)
	})

	res, err := backup.Run(ctx, req)
	if err != nil {
		t.Fatalf("backup through the wrapper without faults: %v", err)
	}
	m := res.Manifest
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

	// verifyBackup is verify's reading: every object, every checksum.
	verifyBackup := func(m *archive.Manifest) error {
		_, err := verify.Run(ctx, verify.Request{Repo: r, Backup: m})
		return err
	}
	// restoreInto is `restore ID --target-dir` of a new directory.
	restoreInto := func(t *testing.T, m *archive.Manifest) (string, error) {
		rq := usecasetest.RestoreOf(plain, m.ID)
		rq.Deferred.Open = func(context.Context) (*repo.Repo, error) { return r, nil }
		rq.Restore.TargetDir = filepath.Join(t.TempDir(), "datadir")
		_, err := restorecase.Run(ctx, rq)
		return rq.Restore.TargetDir, err
	}

	t.Run("write corrupted silently", func(t *testing.T) {
		defer fb.Clear()
		fb.Add(faulty.Fault{Op: faulty.OpPut, Name: victim, After: 64 << 10, Corrupt: true})
		res, err := backup.Run(ctx, req)
		met(t)
		if err != nil {
			t.Fatalf("a backend that flips a byte without telling fails the backup: %v", err)
		}
		bad := res.Manifest
		fb.Clear()
		// Nothing at backup time could see it; the first read does.
		err = verifyBackup(bad)
		if !usecasetest.Corrupt(err) || !strings.Contains(fmt.Sprint(err), "00001.xbs.zst") || !strings.Contains(fmt.Sprint(err), bad.ID) {
			t.Errorf("verify of a backup stored damaged: %v; want damage (exit 3) naming the backup and the object", err)
		}
		if err := r.Remove(ctx, bad.ID); err != nil {
			t.Fatal(err)
		}
	})

	// What the commands exit with: 3 for damage, 1 for a failure, 0.
	const damage, failure, success = "damage (exit 3)", "a failure (exit 1)", "success"
	endsAs := map[string]func(error) bool{
		damage:  usecasetest.Corrupt,
		failure: usecasetest.Failed,
		success: func(err error) bool { return err == nil },
	}
	readCases := []struct {
		name  string
		fault faulty.Fault
		ends  string
		want  []string
	}{
		{"read corrupted", faulty.Fault{Corrupt: true}, damage, []string{readName, "checksum mismatch"}},
		{"read cut short", faulty.Fault{Truncate: true}, damage, []string{readName, "truncated"}},
		{"read fails", faulty.Fault{Err: errGone}, failure, []string{readName, errGone.Error()}},
		{"slow reads", faulty.Fault{Delay: 200 * time.Millisecond}, success, nil},
	}
	for _, tc := range readCases {
		t.Run(tc.name, func(t *testing.T) {
			defer fb.Clear()
			f := tc.fault
			f.Op, f.Name, f.After = faulty.OpRead, readVictim, victimSize/2
			fb.Add(f)
			if tc.ends == success {
				fb.Add(faulty.Fault{Op: faulty.OpOpen, Delay: 100 * time.Millisecond})
			}
			for _, what := range []string{"verify", "restore"} {
				before := fb.Fired()
				var err error
				target := ""
				if what == "verify" {
					err = verifyBackup(m)
				} else {
					target, err = restoreInto(t, m)
				}
				if fb.Fired() == before {
					t.Fatalf("%s: no fault fired", what)
				}
				t.Logf("%s: %v", what, err)
				if !endsAs[tc.ends](err) {
					t.Errorf("%s: %v, want %s", what, err, tc.ends)
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
	if err := verifyBackup(m); err != nil {
		t.Fatalf("verify without faults: %v", err)
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
		// Lazily: the use cases run in-process leave their local
		// backend's directory handle open (a process exits instead),
		// which keeps the mount busy until the test binary ends.
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
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 1, BigTableMB: 60}); err != nil {
		t.Fatal(err)
	}

	t.Run("restore target", func(t *testing.T) {
		r := usecasetest.NewLocalRepo(t)
		usecasetest.Backup(t, usecasetest.BackupOf(t, r, src))
		// 32 MiB for a datadir of some 200.
		target := smallDisk(t, "32m")
		req := usecasetest.RestoreOf(r, "")
		req.Restore.TargetDir = target
		err := waitErr(t, "restore onto a full disk", background(func() error {
			_, err := restorecase.Run(ctx, req)
			return err
		}))
		if !usecasetest.Failed(err) {
			t.Errorf("restore onto a full disk: %v; want a failure (exit 1)", err)
		}
		for _, want := range []string{"no space left on device", target + "/"} {
			if !strings.Contains(fmt.Sprint(err), want) {
				t.Errorf("error %v does not say %q", err, want)
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
		if _, err := (repoaccess.Options{Location: repoaccess.Location{Repo: repoDir}}).Create(ctx); err != nil {
			t.Fatalf("init: %v", err)
		}
		r := usecasetest.Repo{Location: repoDir, Backend: mustLocal(t, repoDir)}
		req := usecasetest.BackupOf(t, r, src)
		uncompressed := req
		var err error
		if uncompressed.Codec, err = codec.Parse("none"); err != nil {
			t.Fatal(err)
		}
		err = waitErr(t, "backup onto a full disk", background(func() error {
			_, err := backup.Run(ctx, uncompressed)
			return err
		}))
		if !usecasetest.Failed(err) {
			t.Errorf("backup onto a full disk: %v; want a failure (exit 1)", err)
		}
		for _, want := range []string{"no space left on device", "streams/0000", "nothing was committed"} {
			if !strings.Contains(fmt.Sprint(err), want) {
				t.Errorf("error %v does not say %q", err, want)
			}
		}
		if dirs := r.BackupDirs(t); len(dirs) != 0 {
			t.Errorf("left after the failed backup: %v", dirs)
		}
		if _, err := usecasetest.Expire(t, r, retention.Request{PruneIncomplete: true, Confirm: true}); err != nil {
			t.Fatalf("expire --prune-incomplete --confirm: %v", err)
		}
		usecasetest.Backup(t, req)
		if err := usecasetest.Verify(t, r, "latest"); err != nil {
			t.Fatalf("verify: %v", err)
		}
	})
}

// tcpConn is the connection `--host H --port P --user root --no-defaults`
// makes, for addr H:P.
func tcpConn(t *testing.T, addr string) mariadb.Config {
	t.Helper()
	host, port, _ := strings.Cut(addr, ":")
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := mariadb.Resolve(mariadb.Flags{Host: host, Port: p, User: "root", NoDefaults: true})
	if err != nil {
		t.Fatal(err)
	}
	return conn
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
	r := usecasetest.NewLocalRepo(t)
	// dump is `backup --logical --databases sample --parallel 2` over
	// conn (the accounts skipped, as with any --databases).
	dump := func(conn mariadb.Config) backup.Request {
		req := usecasetest.LogicalBackupOf(t, r, src)
		req.Dump.Filter.Databases, req.Dump.Skip.Users = []string{"sample"}, true
		req.Conn = conn
		return req
	}
	// The gate holds the dump after 8 MB of some 40 MB of table data
	// while the server shuts down under it.
	g := usecasetest.NewGate(t, "127.0.0.1:"+strconv.Itoa(src.Port), 8<<20)
	req := dump(tcpConn(t, g.Addr))
	done := background(func() error {
		_, err := backup.Run(ctx, req)
		return err
	})
	for deadline := time.Now().Add(2 * time.Minute); !g.Holding(); time.Sleep(5 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("the dump ended before 8 MB of table data: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the dump read no 8 MB of table data within 2 minutes")
		}
	}
	if err := src.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	g.Open()
	err := waitErr(t, "a dump whose server shut down", done)
	if !usecasetest.Failed(err) {
		t.Errorf("a dump whose server shut down: %v; want a failure (exit 1)", err)
	}
	for _, want := range []string{"connection to the server", "table sample.big", "nothing was committed"} {
		if !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
	for id, objs := range r.BackupDirs(t) {
		if strings.Contains(strings.Join(objs, " "), repo.ManifestName) {
			t.Errorf("backup %s has a manifest after its server shut down mid-dump", id)
		}
	}
	again := sandboxtest.Start(t, sandbox.Options{Datadir: src.Datadir})
	if _, err := usecasetest.Expire(t, r, retention.Request{PruneIncomplete: true, Confirm: true}); err != nil {
		t.Fatalf("expire --prune-incomplete --confirm: %v", err)
	}
	if dirs := r.BackupDirs(t); len(dirs) != 0 {
		t.Errorf("left after expire --prune-incomplete: %v", dirs)
	}
	usecasetest.Backup(t, dump(usecasetest.Conn(again)))
	if err := usecasetest.Verify(t, r, "latest"); err != nil {
		t.Fatalf("verify: %v", err)
	}
}
