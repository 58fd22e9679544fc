package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/usecasetest"
)

// slowDown runs p a twentieth of the time (SIGSTOP, SIGCONT) until the test
// ends or p does: a restore of a few tens of MB to tmpfs is otherwise over
// before its journal has recorded a file, and there is no point to kill
// it at.
func slowDown(t *testing.T, p *proc) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			p.cmd.Process.Signal(syscall.SIGSTOP)
			select {
			case <-stop:
				p.cmd.Process.Signal(syscall.SIGCONT)
				return
			case <-p.done:
				return
			case <-time.After(95 * time.Millisecond):
			}
			p.cmd.Process.Signal(syscall.SIGCONT)
			select {
			case <-stop:
				return
			case <-p.done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
}

// journaled counts the files the journal of an interrupted restore in
// target records as restored.
func journaled(target string) int {
	data, _ := os.ReadFile(filepath.Join(target, ".backstream-restoring.journal"))
	return bytes.Count(data, []byte(`"t":"done"`))
}

// TestRestoreResumesAfterKill: a physical restore from a local and from
// an S3 repository, killed (SIGKILL) at two points, the second while it
// resumes, ends with --resume as an uninterrupted restore does, file for
// file, having fetched less than the whole backup on the last run; a
// resume into the target of another backup is refused and changes
// nothing.
func TestRestoreResumesAfterKill(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	src := sampleServer(t)
	for _, kind := range repoKinds {
		t.Run(kind, func(t *testing.T) {
			r := newTestRepo(t, kind)
			b, want := restoredOnce(t, src, r, "--target-dir")
			id, files := b.ID, b.Files

			target := filepath.Join(t.TempDir(), "datadir")
			restore := []string{"restore", id, "--repo", r.Location, "--target-dir", target}
			last := 0
			for point, args := range [][]string{restore, append(restore, "--resume")} {
				p := startProc(t, bin, args...)
				slowDown(t, p)
				waitUntil(t, "more files in the restore's journal", p, func() bool { return journaled(target) > last })
				p.kill(t)
				n := journaled(target)
				if n >= files {
					t.Fatalf("kill %d: the journal records %d of %d files: the restore was not killed mid-way", point+1, n, files)
				}
				t.Logf("kill %d: %d of %d files recorded", point+1, n, files)
				last = n
			}
			// Another backup's resume is refused and changes nothing.
			run(t, append([]string{"backup", "--repo", r.Location, "--parallel", "2"}, sandboxConn(src)...)...).mustSucceed(t)
			other := backupListing(t, r.Location)[0].ID
			if other == id {
				other = backupListing(t, r.Location)[1].ID
			}
			before := testkit.TreeDigests(t, target)
			refused := run(t, "restore", other, "--repo", r.Location, "--target-dir", target, "--resume")
			if refused.code != ExitUsage || !strings.Contains(refused.err.Error(), "it restores backup "+id+", not backup "+other) {
				t.Errorf("resume of backup %s into a restore of %s: exit %d, %v; want a refusal naming both", other, id, refused.code, refused.err)
			}
			testkit.CompareTrees(t, "the target after a refused resume", testkit.TreeDigests(t, target), before)

			resumeToEnd(t, restore, target, b.StoredBytes, want)
		})
	}
}

// TestRestoreResumesAfterPowerCut: a physical restore whose machine loses
// its power mid-way (the target's file system shut down without flushing
// anything more to its device, then mounted again from what the device
// holds, see testkit.PowerCut) resumes with --resume and ends as an
// uninterrupted restore does, file for file, keeping what its journal
// recorded: a file is recorded only once it is on the device, so what
// the journal names survived the cut.
func TestRestoreResumesAfterPowerCut(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	r := newTestRepo(t, "local")
	b, want := restoredOnce(t, sampleServer(t), r, "--target-dir")
	id, files := b.ID, b.Files

	disk := testkit.NewPowerCut(t, 1<<30)
	target := filepath.Join(disk.Dir, "datadir")
	restore := []string{"restore", id, "--repo", r.Location, "--target-dir", target}
	// Read at 4 MiB/s (about 8 s for the sample's 30 MiB), so that the
	// journal records files many times before the cut, however fast the
	// machine.
	p := startProc(t, bin, append(restore, "--limit-download", "4MiB/s")...)
	slowDown(t, p)
	// The journal is written, then synced: records read back may still
	// be on their way to the disk, but not once later ones are written.
	waitUntil(t, "files in the restore's journal", p, func() bool { return journaled(target) > 0 })
	first := journaled(target)
	waitUntil(t, "more files in the restore's journal", p, func() bool { return journaled(target) > first })
	// The power fails: the process stops where it is, and nothing it
	// did not sync before reaches the disk.
	p.cmd.Process.Signal(syscall.SIGSTOP)
	disk.Cut()
	p.cmd.Process.Kill()
	<-p.done
	if p.err == nil {
		t.Fatalf("the restore ended well before the power cut: nothing to resume")
	}
	disk.Recover()
	n := journaled(target)
	if n < first || n >= files {
		t.Fatalf("after the power cut the journal records %d of %d files: want at least the %d recorded before the last record, not all", n, files, first)
	}
	t.Logf("after the power cut the journal records %d of %d files", n, files)

	resumeToEnd(t, restore, target, b.StoredBytes, want)
}

// resumeToEnd runs restore (into target) again with --resume, which must
// say how many files it kept, read some but not all of the backup's
// stored bytes, and end with the tree want.
func resumeToEnd(t *testing.T, restore []string, target string, stored int64, want map[string]string) {
	t.Helper()
	res := run(t, append(restore, "--resume", "--json")...).mustSucceed(t)
	if !strings.Contains(res.stderr, "files kept") {
		t.Errorf("the resume did not say what it kept: %s", res.stderr)
	}
	var out struct {
		ReadBytes int64 `json:"read_bytes"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.ReadBytes <= 0 || out.ReadBytes >= stored {
		t.Errorf("the resume read %d of the backup's %d stored bytes: want some, not all", out.ReadBytes, stored)
	}
	testkit.CompareTrees(t, "the resumed restore", testkit.TreeDigests(t, target), want)
}

// TestRestoreIntoPlaceResumesAfterKill: a restore into place (--datadir),
// killed while it writes beside the datadir, is refused without --resume
// (the message says how to continue it) and with --resume ends as an
// uninterrupted restore into place does, file for file, prepared, having
// read part of the backup.
func TestRestoreIntoPlaceResumesAfterKill(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	r := newTestRepo(t, "local")
	b, want := restoredOnce(t, sampleServer(t), r, "--datadir")
	id, files := b.ID, b.Files

	datadir := filepath.Join(t.TempDir(), "datadir")
	staging := filepath.Join(filepath.Dir(datadir), ".datadir.backstream-new")
	restore := []string{"restore", id, "--repo", r.Location, "--datadir", datadir}
	p := startProc(t, bin, restore...)
	slowDown(t, p)
	waitUntil(t, "files in the restore's journal", p, func() bool { return journaled(staging) > 0 })
	p.kill(t)
	if n := journaled(staging); n >= files {
		t.Fatalf("the journal records %d of %d files: the restore was not killed mid-way", n, files)
	}
	if _, err := os.Stat(datadir); err == nil {
		t.Fatalf("the datadir %s exists after the restore was killed before its swap", datadir)
	}
	again := run(t, restore...)
	if again.code == 0 || !strings.Contains(again.err.Error(), "holds an interrupted restore") || !strings.Contains(again.err.Error(), "--resume") {
		t.Errorf("the same restore again without --resume: exit %d, %v; want a refusal that names --resume", again.code, again.err)
	}
	resumeToEnd(t, restore, datadir, b.StoredBytes, want)
	if _, err := os.Stat(staging); err == nil {
		t.Errorf("%s is left beside the datadir after the resumed restore", staging)
	}
}

// sampleServer starts a sandbox server holding a sample of 12 tables, one
// of 40 MB: a restore of its backup takes long enough to be killed.
func sampleServer(t *testing.T) *sandbox.Server {
	t.Helper()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 12, BigTableMB: 40}); err != nil {
		t.Fatal(err)
	}
	// The load's bulk inserts into empty tables leave the redo log no
	// record of their pages: a backup whose redo copy still holds them
	// copies those tables again at its end (as .new files), and a
	// stream that replaces files reports none verified, so a restore of
	// it journals no file to resume from. Checkpointed, it has none.
	usecasetest.WaitCheckpoint(t, src.DB())
	return src
}

// restoredOnce backs src up into r and restores the backup,
// uninterrupted, with into (--target-dir or --datadir) and a new
// directory. It returns the backup and the restored files' digests.
func restoredOnce(t *testing.T, src *sandbox.Server, r testRepo, into string) (inventory.Backup, map[string]string) {
	t.Helper()
	run(t, append([]string{"backup", "--repo", r.Location, "--parallel", "2"}, sandboxConn(src)...)...).mustSucceed(t)
	b := backupListing(t, r.Location)[0]
	reference := filepath.Join(t.TempDir(), "reference")
	run(t, "restore", b.ID, "--repo", r.Location, into, reference).mustSucceed(t)
	return b, testkit.TreeDigests(t, reference)
}

// TestReceiveResumesAfterKill: a receive of a stored backup (send ID
// --repo R, from a local and from an S3 repository) killed (SIGKILL) at
// two points, the second while it resumes, ends with receive --resume and
// the same send as an uninterrupted restore does, file for file, the last
// send having sent less than the whole backup; a resume from a send of
// another backup, and from a send that takes a new backup, is refused and
// changes nothing.
func TestReceiveResumesAfterKill(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	src := sampleServer(t)
	tok := tokenFile(t)
	for _, kind := range repoKinds {
		t.Run(kind, func(t *testing.T) {
			r := newTestRepo(t, kind)
			b, want := restoredOnce(t, src, r, "--target-dir")
			target := filepath.Join(t.TempDir(), "datadir")
			receive := []string{"receive", "--listen", "127.0.0.1:0", "--token-file", tok, "--target-dir", target}
			send := func(addr, id string, more ...string) *proc {
				return startProc(t, bin, append([]string{"send", id, "--repo", r.Location, "--to", addr, "--token-file", tok}, more...)...)
			}
			last := 0
			for point, args := range [][]string{receive, append(receive, "--resume")} {
				rv := startProc(t, bin, args...)
				s := send(listeningOn(t, rv), b.ID)
				slowDown(t, rv)
				waitUntil(t, "more files in the receive's journal", rv, func() bool { return journaled(target) > last })
				rv.kill(t)
				if <-s.done; s.err == nil {
					t.Fatalf("kill %d: the send succeeded although its receiver was killed", point+1)
				}
				n := journaled(target)
				if n >= b.Files {
					t.Fatalf("kill %d: the journal records %d of %d files: the receive was not killed mid-way", point+1, n, b.Files)
				}
				t.Logf("kill %d: %d of %d files recorded", point+1, n, b.Files)
				last = n
			}

			// Refused, changing nothing: a send of another stored backup,
			// and a send that takes a new one.
			run(t, append([]string{"backup", "--repo", r.Location, "--parallel", "2"}, sandboxConn(src)...)...).mustSucceed(t)
			other := backupListing(t, r.Location)[0].ID
			if other == b.ID {
				other = backupListing(t, r.Location)[1].ID
			}
			before := testkit.TreeDigests(t, target)
			for _, tc := range []struct {
				send []string
				want string
			}{
				{[]string{other, "--repo", r.Location}, "it restores backup " + b.ID + ", not backup " + other},
				{append([]string{"--parallel", "2"}, sandboxConn(src)...), "--resume continues the receive of a stored backup"},
			} {
				rv := startProc(t, bin, append(receive, "--resume")...)
				s := startProc(t, bin, append([]string{"send", "--to", listeningOn(t, rv), "--token-file", tok}, tc.send...)...)
				<-rv.done
				<-s.done
				if rv.err == nil || s.err == nil || !strings.Contains(rv.stderr.String(), tc.want) {
					t.Errorf("receive --resume of %v: %v, %s; send: %v; want both to fail, the receiver saying %q", tc.send, rv.err, rv.stderr.String(), s.err, tc.want)
				}
			}
			testkit.CompareTrees(t, "the target after refused resumes", testkit.TreeDigests(t, target), before)

			rv := startProc(t, bin, append(receive, "--resume")...)
			s := send(listeningOn(t, rv), b.ID, "--json")
			resumed(t, rv, s, b.StoredBytes)
			testkit.CompareTrees(t, "the resumed receive", testkit.TreeDigests(t, target), want)
		})
	}
}

// listeningOn waits for receive p to say where it listens, and returns
// that address.
func listeningOn(t *testing.T, p *proc) string {
	t.Helper()
	var addr string
	waitUntil(t, "the receiver's address", p, func() bool {
		_, rest, ok := strings.Cut(p.stderr.String(), "receive: listening on ")
		addr, _, _ = strings.Cut(rest, "\n")
		return ok && strings.Contains(rest, "\n")
	})
	return addr
}

// TestReceiveIntoPlaceResumesAfterKill: a receive into place (--datadir)
// of a stored backup, killed while it writes beside the datadir, ends with
// receive --resume and the same send as an uninterrupted restore into
// place does, file for file, prepared, the last send having sent part of
// the backup, and nothing left beside the datadir.
func TestReceiveIntoPlaceResumesAfterKill(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	r := newTestRepo(t, "local")
	b, want := restoredOnce(t, sampleServer(t), r, "--datadir")
	tok := tokenFile(t)
	datadir := filepath.Join(t.TempDir(), "datadir")
	staging := filepath.Join(filepath.Dir(datadir), ".datadir.backstream-new")
	receive := []string{"receive", "--listen", "127.0.0.1:0", "--token-file", tok, "--datadir", datadir}
	send := []string{"send", b.ID, "--repo", r.Location, "--token-file", tok, "--json", "--to"}
	rv := startProc(t, bin, receive...)
	s := startProc(t, bin, append(send, listeningOn(t, rv))...)
	slowDown(t, rv)
	waitUntil(t, "files in the receive's journal", rv, func() bool { return journaled(staging) > 0 })
	rv.kill(t)
	<-s.done
	if n := journaled(staging); n >= b.Files || s.err == nil {
		t.Fatalf("the journal records %d of %d files, the send ended with %v: the receive was not killed mid-way", n, b.Files, s.err)
	}
	rv = startProc(t, bin, append(receive, "--resume")...)
	s = startProc(t, bin, append(send, listeningOn(t, rv))...)
	resumed(t, rv, s, b.StoredBytes)
	testkit.CompareTrees(t, "the resumed receive into place", testkit.TreeDigests(t, datadir), want)
	if _, err := os.Stat(staging); err == nil {
		t.Errorf("%s is left beside the datadir after the resumed receive", staging)
	}
}

// tokenFile is a new token in a file of its own, as send and receive take it.
func tokenFile(t *testing.T) string {
	t.Helper()
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte(run(t, "token").mustSucceed(t).stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	return tok
}

// resumed waits for receive --resume rv and send --json s to end, which
// must both succeed, s having sent its one receiver some of the backup's
// stored bytes, not all: what the resumed receive lacked.
func resumed(t *testing.T, rv, s *proc, stored int64) {
	t.Helper()
	<-s.done
	<-rv.done
	if s.err != nil || rv.err != nil {
		t.Fatalf("the resumed receive: send %v: %s; receive %v: %s", s.err, s.stderr.String(), rv.err, rv.stderr.String())
	}
	var out struct {
		Receivers []struct {
			SentBytes int64 `json:"sent_bytes"`
		} `json:"receivers"`
	}
	if err := json.Unmarshal([]byte(s.stdout.String()), &out); err != nil || len(out.Receivers) != 1 {
		t.Fatalf("send --json: %v: %s", err, s.stdout.String())
	}
	if sent := out.Receivers[0].SentBytes; sent <= 0 || sent >= stored {
		t.Errorf("the resumed send sent %d of the backup's %d stored bytes: want some, not all", sent, stored)
	}
}
