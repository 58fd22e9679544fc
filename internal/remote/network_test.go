package remote_test

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/remote"
	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/usecasetest"
)

// senderEnv, set to "ADDR TOKEN-FILE SOCKET", makes the test binary the
// sender its parent kills or stops (see startSender).
const senderEnv = "BACKSTREAM_TEST_SENDER"

// sendUntilStopped, in the test binary startSender ran, sends as its
// parent asked and fails if the send ends: the parent was to stop it
// first. Elsewhere it does nothing.
func sendUntilStopped(t *testing.T) {
	v := os.Getenv(senderEnv)
	if v == "" {
		return
	}
	f := strings.Fields(v)
	req := usecasetest.SendOf(t, mariadb.Config{Socket: f[2], User: "root", Protocol: mariadb.ProtocolSocket}, f[1], f[0])
	req.Job.MaxIO = 10
	_, err := remote.Send(context.Background(), req)
	t.Fatalf("the send to be stopped ended: %v", err)
}

// startSender runs the test binary again, a process of its own, as the
// sender of src's backup to addr slowed down to be stopped on the way
// (what `send --to addr --token-file tok --max-io 10` runs): the test
// calls sendUntilStopped first. The process is killed when the test ends.
func startSender(t *testing.T, addr, tok string, src *sandbox.Server) *exec.Cmd {
	t.Helper()
	top, _, _ := strings.Cut(t.Name(), "/")
	var out testkit.SyncBuffer
	cmd := exec.Command(os.Args[0], "-test.run=^"+top+"$")
	cmd.Env = append(os.Environ(), senderEnv+"="+addr+" "+tok+" "+src.Socket)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Wait()
		if t.Failed() {
			t.Logf("the sender said:\n%s", out.String())
		}
	})
	return cmd
}

// waitArriving waits, a minute at most, until a megabyte of the backup
// has arrived in target.
func waitArriving(target string) {
	for deadline := time.Now().Add(time.Minute); usecasetest.DirBytes(target) < 1<<20 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
}

// Bad input on the wire: a wrong token and a plain-text client are refused
// with clear errors and leave the target untouched; the receiver then still
// takes a proper transfer.
func TestReceiveRefusesBadPeers(t *testing.T) {
	t.Parallel()
	src := sandboxtest.Start(t, sandbox.Options{})
	tok := usecasetest.TokenFile(t)
	wrong := usecasetest.TokenFile(t)
	target := filepath.Join(t.TempDir(), "target")
	recv := usecasetest.StartStore(t, usecasetest.StoreInDir(t, tok, target))

	// A plain-text client.
	c, err := net.Dial("tcp", recv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
	reply := make([]byte, 200)
	n, _ := c.Read(reply)
	c.Close()
	if !strings.Contains(string(reply[:n]), "TLS") {
		t.Errorf("a plain-text client got %q, want a line saying the port speaks TLS", reply[:n])
	}

	// A sender with the wrong token.
	if _, err := remote.Send(context.Background(), usecasetest.SendOf(t, usecasetest.Conn(src), wrong, recv.Addr)); err == nil || !strings.Contains(err.Error(), "wrong token") {
		t.Errorf("send with a wrong token: %v; want a wrong-token error", err)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Errorf("the target exists after refused transfers (%v)", err)
	}
	// The receiver is still there for the right sender.
	usecasetest.Send(t, usecasetest.SendOf(t, usecasetest.Conn(src), tok, recv.Addr))
	if got := recv.Wait(t, "receiver"); got.Err != nil {
		t.Fatalf("receiver: %v", got.Err)
	}
	if _, err := os.Stat(filepath.Join(target, "ibdata1")); err != nil {
		t.Errorf("nothing restored: %v", err)
	}
}

// A sender killed mid-transfer (SIGKILL: the sender is a process of its
// own), and a byte flipped on the wire: the receiver fails with a clear
// error and leaves no target behind.
func TestReceiveFailsOnBrokenTransfers(t *testing.T) {
	sendUntilStopped(t)
	// Serial: which error reaches the sender first depends on timing, which the parallel tests' load would distort.
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1, BigTableMB: 60}); err != nil {
		t.Fatal(err)
	}
	tok := usecasetest.TokenFile(t)

	t.Run("sender killed", func(t *testing.T) {
		target := filepath.Join(t.TempDir(), "target")
		recv := usecasetest.StartStore(t, usecasetest.StoreInDir(t, tok, target))
		sender := startSender(t, recv.Addr, tok, src)
		waitArriving(target)
		sender.Process.Kill()
		sender.Wait()
		if got := recv.Wait(t, "receiver"); got.Err == nil || !strings.Contains(got.Err.Error(), "connection") {
			t.Errorf("receiver after the sender died: %v", got.Err)
		}
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Errorf("target left behind after a failed transfer (%v)", err)
		}
	})

	t.Run("byte flipped in flight", func(t *testing.T) {
		target := filepath.Join(t.TempDir(), "target")
		recv := usecasetest.StartStore(t, usecasetest.StoreInDir(t, tok, target))
		proxy := flippingProxy(t, recv.Addr, 5<<20)
		_, sendErr := remote.Send(context.Background(), usecasetest.SendOf(t, usecasetest.Conn(src), tok, proxy))
		got := recv.Wait(t, "receiver")
		if sendErr == nil || got.Err == nil {
			t.Fatalf("a corrupted transfer succeeded: send %v, receive %v", sendErr, got.Err)
		}
		t.Logf("sender: %v\nreceiver: %v", sendErr, got.Err)
		// Both ends say what happened: the receiver found the record
		// tampered with (whichever of its bytes the flip hit: the
		// record's body or its header), and the sender relays the
		// receiver's reason.
		for who, err := range map[string]error{"sender": sendErr, "receiver": got.Err} {
			if !strings.Contains(err.Error(), "data altered on the wire") {
				t.Errorf("%s's error does not say the data was altered: %v", who, err)
			}
		}
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Errorf("target left behind after a corrupted transfer (%v)", err)
		}
	})
}

// A sender that stops (SIGSTOP: its kernel still answers TCP
// keepalives) sends no heartbeat either: the receiver gives up after
// its idle timeout (--idle-timeout 30s), naming the sender, and removes
// the partial target. Apart from TestReceiveFailsOnBrokenTransfers, and
// parallel: it waits out a 30-second timeout, and either timeout it may
// meet passes.
func TestReceiverGivesUpOnStoppedSender(t *testing.T) {
	sendUntilStopped(t)
	t.Parallel()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1, BigTableMB: 60}); err != nil {
		t.Fatal(err)
	}
	tok := usecasetest.TokenFile(t)
	target := filepath.Join(t.TempDir(), "target")
	req := usecasetest.StoreInDir(t, tok, target)
	if err := req.Transport.Settle(30*time.Second, tok); err != nil {
		t.Fatal(err)
	}
	recv := usecasetest.StartStore(t, req)
	sender := startSender(t, recv.Addr, tok, src)
	waitArriving(target)
	if err := sender.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	got := recv.Wait(t, "the receiver of a sender stopped")
	t.Logf("receiver gave up after %s: %v", time.Since(stopped).Round(time.Second), got.Err)
	// Between messages the idle timeout ends the wait; a sender
	// stopped inside a message meets the stall timeout (60s) first.
	if err := got.Err; err == nil || !strings.Contains(err.Error(), "from 127.0.0.1:") ||
		!strings.Contains(err.Error(), "no message for 30s (idle timeout)") && !strings.Contains(err.Error(), "peer stalled") {
		t.Errorf("receiver after its sender stopped: %v", err)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Errorf("target left behind after the sender stopped (%v)", err)
	}
}

// flippingProxy forwards TCP connections to addr and flips one bit in the
// client-to-server bytes of each connection after skip bytes.
func flippingProxy(t *testing.T, addr string, skip int) string {
	t.Helper()
	return testkit.ServeTCP(t, func(c net.Conn) {
		u, err := net.Dial("tcp", addr)
		if err != nil {
			return
		}
		defer u.Close()
		go func() {
			buf := make([]byte, 64<<10)
			seen := 0
			for {
				n, err := c.Read(buf)
				if n > 0 {
					if seen <= skip && seen+n > skip {
						buf[skip-seen] ^= 0x10
					}
					seen += n
					if _, werr := u.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					u.(*net.TCPConn).CloseWrite()
					return
				}
			}
		}()
		buf := make([]byte, 64<<10)
		for {
			n, err := u.Read(buf)
			if n > 0 {
				c.Write(buf[:n])
			}
			if err != nil {
				return
			}
		}
	})
}

// sampleSource starts a sandbox with a little data.
func sampleSource(t *testing.T) *sandbox.Server {
	t.Helper()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 2, BigTableMB: 8}); err != nil {
		t.Fatal(err)
	}
	return src
}

// storing is req with what it stores recorded in *stored, for the test to
// read once the receiver ended.
func storing(req remote.StoreRequest, stored *[]remote.Stored) remote.StoreRequest {
	req.Stored = func(s remote.Stored) error {
		*stored = append(*stored, s)
		return nil
	}
	return req
}

// Into a repository (receive --repo): a pushed backup is stored in a
// repository on the receiving host, committed, and verifies and restores
// from there.
func TestReceiveIntoRepository(t *testing.T) {
	t.Parallel()
	src := sampleSource(t)
	tok := usecasetest.TokenFile(t)
	repo := usecasetest.NewLocalRepo(t)
	var stored []remote.Stored
	recv := usecasetest.StartStore(t, storing(usecasetest.StoreInRepo(t, tok, repo.Access()), &stored))
	req := usecasetest.SendOf(t, usecasetest.Conn(src), tok, recv.Addr)
	req.Job.Parallel = 3
	sent := usecasetest.Send(t, req)
	if got := recv.Wait(t, "receiver"); got.Err != nil {
		t.Fatalf("receiver: %v", got.Err)
	}
	entries := usecasetest.List(t, repo)
	if len(entries) != 1 || entries[0].Streams != 3 || entries[0].Positions.GTID == "" {
		t.Fatalf("central repository lists %+v", entries)
	}
	// What send and receive print: the backup, sent to the one receiver
	// in 3 streams, and received into the repository.
	id := entries[0].ID
	if m := sent.Manifest; m.ID != id || len(m.Streams) != 3 || !slices.Equal(sent.Sent.Addresses(true), []string{recv.Addr}) ||
		len(stored) != 1 || stored[0] != (remote.Stored{Backup: id, Into: remote.IntoRepository, Where: repo.Location}) {
		t.Errorf("sent backup %s to %v in %d streams, received %+v; want both to name backup %s, stored into %s",
			m.ID, sent.Sent.Addresses(true), len(m.Streams), stored, id, repo.Location)
	}
	// The table guard ran on the sender: the received manifest lists the
	// tables, and verify checks the stored files against them.
	if m := usecasetest.ReadManifest(t, repo.Location, id); !slices.ContainsFunc(m.Tables, func(tb archive.Table) bool { return tb.Name == "mysql.global_priv" }) {
		t.Errorf("the received backup lists tables %v, want mysql.global_priv among them", m.Tables)
	}
	if err := usecasetest.Verify(t, repo, "latest"); err != nil {
		t.Fatalf("verify: %v", err)
	}
	target := filepath.Join(t.TempDir(), "datadir")
	r := usecasetest.RestoreOf(repo, "")
	r.Restore.TargetDir, r.Restore.Options.Prepare = target, true
	usecasetest.Restore(t, r)
	compareServer(t, src, target)
}

// Into an encrypted repository (receive --repo --encrypt): the backup
// travels over TLS and is stored encrypted at rest; it restores with the
// key only.
func TestReceiveIntoEncryptedRepository(t *testing.T) {
	t.Parallel()
	src := sampleSource(t)
	tok := usecasetest.TokenFile(t)
	pub, key := usecasetest.AgeKeys(t)
	repo := usecasetest.NewLocalRepo(t)
	o := repo.AccessWith(repoaccess.KeyFiles{RecipientFile: pub})
	o.Encrypt = true
	recv := usecasetest.StartStore(t, usecasetest.StoreInRepo(t, tok, o))
	req := usecasetest.SendOf(t, usecasetest.Conn(src), tok, recv.Addr)
	req.Job.Parallel = 2
	usecasetest.Send(t, req)
	if got := recv.Wait(t, "receiver"); got.Err != nil {
		t.Fatalf("receiver: %v", got.Err)
	}
	id := usecasetest.List(t, repo)[0].ID
	objects, _ := filepath.Glob(filepath.Join(repo.Location, "backups", id, "streams", "*"))
	for _, o := range objects {
		if !strings.HasSuffix(o, ".age") {
			t.Errorf("stored plainly: %s", o)
		}
	}
	if len(objects) != 4 { // two stream objects, two indexes
		t.Errorf("objects %v", objects)
	}
	if err := usecasetest.Verify(t, repo, "latest"); err == nil || !strings.Contains(err.Error(), "no key was given") {
		t.Fatalf("verify without the key: %v", err)
	}
	target := filepath.Join(t.TempDir(), "datadir")
	r := usecasetest.RestoreOf(repo, "")
	r.Deferred.Open = repo.AccessWith(repoaccess.KeyFiles{IdentityFile: key}).Open
	r.Restore.TargetDir, r.Restore.Options.Prepare = target, true
	usecasetest.Restore(t, r)
	compareServer(t, src, target)
}

// compareServer starts a server on datadir and compares its tables'
// checksums with src's.
func compareServer(t *testing.T, src *sandbox.Server, target string) {
	t.Helper()
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, usecasetest.ServerOn(t, target)), usecasetest.Checksums(t, src))
}

// One transfer after another (receive --repo --keep-listening), each
// stored and said as it arrives, until the receiver is cancelled.
func TestReceiveKeepListening(t *testing.T) {
	t.Parallel()
	src := sandboxtest.Start(t, sandbox.Options{})
	tok := usecasetest.TokenFile(t)
	repo := usecasetest.NewLocalRepo(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var received []remote.Stored // appended by the receiver until done, read after
	req := storing(usecasetest.StoreInRepo(t, tok, repo.Access()), &received)
	req.Keep = true
	addrs := make(chan string, 1)
	req.Listening = func(a net.Addr) { addrs <- a.String() }
	done := make(chan error, 1)
	go func() { done <- remote.Store(ctx, req) }()
	var addr string
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatalf("the receiver ended before it listened: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the receiver did not listen within a minute")
	}
	var sent []string
	for range 2 {
		s := usecasetest.Send(t, usecasetest.SendOf(t, usecasetest.Conn(src), tok, addr))
		if rs := s.Sent.Receivers; s.Manifest.ID == "" || len(rs) != 1 || rs[0].Address != addr || !rs[0].OK {
			t.Errorf("sent %s to %+v, want the backup and %s ok", s.Manifest.ID, rs, addr)
		}
		sent = append(sent, s.Manifest.ID)
		time.Sleep(1100 * time.Millisecond) // backup ids have a one-second resolution plus a random suffix
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the receiver that keeps listening did not stop when cancelled")
	}
	if n := len(usecasetest.List(t, repo)); n != 2 {
		t.Fatalf("the central repository lists %d backups, want 2", n)
	}
	// Each backup said once it is stored, in turn.
	if len(received) != len(sent) {
		t.Fatalf("the receiver said %d backups stored (%+v), want one per backup (%d)", len(received), received, len(sent))
	}
	for i, got := range received {
		if got.Backup != sent[i] || got.Into != remote.IntoRepository || got.Where != repo.Location {
			t.Errorf("stored backup %d: %+v, want backup %s into the repository %s", i, got, sent[i], repo.Location)
		}
	}
}

// Issue 13 item 9: a flood of connections that never authenticate (500
// that connect and say nothing, 500 that stop half-way through TLS: some
// after part of a ClientHello, some after the whole TLS handshake, before
// the token proof) runs while a real send goes through; the backup
// arrives and verifies. The flood comes from sixteen other loopback
// addresses, as an attacker's would, so it also exceeds the global budget
// (8 a address x 16 = 128 > 64), not only the per-address one.
func TestReceiveSurvivesConnectionFlood(t *testing.T) {
	t.Parallel()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1}); err != nil {
		t.Fatal(err)
	}
	tok := usecasetest.TokenFile(t)
	repo := usecasetest.NewLocalRepo(t)
	req := usecasetest.StoreInRepo(t, tok, repo.Access())
	var refusedMu sync.Mutex
	var refused []error // connections the receiver refused before a transfer
	req.Rejected = func(err error) {
		refusedMu.Lock()
		refused = append(refused, err)
		refusedMu.Unlock()
	}
	recv := usecasetest.StartStore(t, req)
	addr := recv.Addr

	const floodConns, floodWorkers = 1000, 4
	stop := make(chan struct{})
	opened := make(chan struct{}, floodConns)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var held []net.Conn
	for w := range floodWorkers {
		wg.Go(func() {
			for i := w; i < floodConns; i += floodWorkers {
				select {
				case <-stop:
					return
				default:
				}
				d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(10+i%16))}}
				c, err := d.Dial("tcp", addr)
				if err != nil {
					continue // the backlog may be full for a moment: the flood goes on
				}
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
				switch {
				case i%2 == 0: // idle: connect, send nothing
				case i%4 == 1: // half a ClientHello: a record header claiming 512 bytes, 40 of them
					_, _ = c.Write(append([]byte{0x16, 0x03, 0x01, 0x02, 0x00}, make([]byte, 40)...))
				default: // TLS completed, then silence instead of the token proof
					tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13})
					ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
					_ = tc.HandshakeContext(ctx)
					cancel()
				}
				opened <- struct{}{}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	defer func() {
		close(stop)
		wg.Wait()
		for _, c := range held {
			c.Close()
		}
	}()
	// The send starts once the flood is well under way, and the flood
	// goes on while it connects.
	for range 300 {
		select {
		case <-opened:
		case <-time.After(time.Minute):
			t.Fatal("the flood never got going")
		}
	}
	send := usecasetest.SendOf(t, usecasetest.Conn(src), tok, addr)
	send.Job.Parallel = 2
	usecasetest.Send(t, send)
	got := recv.Wait(t, "receiver")
	refusedMu.Lock()
	said := slices.Clone(refused)
	refusedMu.Unlock()
	if got.Err != nil {
		t.Fatalf("receiver: %v (having refused %d connections)", got.Err, len(said))
	}
	t.Logf("flood connections opened by the end of the send: %d", len(opened)+300)
	// The flood reached the limits: the receiver dropped connections to
	// make room, and said so.
	if !slices.ContainsFunc(said, func(err error) bool { return strings.Contains(err.Error(), "dropped before authenticating") }) {
		t.Errorf("the receiver never dropped a flood connection; it refused %d:\n%v", len(said), said)
	}
	if err := usecasetest.Verify(t, repo, "latest"); err != nil {
		t.Fatalf("verify: %v", err)
	}
	if n := len(usecasetest.List(t, repo)); n != 1 {
		t.Fatalf("the repository lists %d backups, want 1", n)
	}
}

// A backup whose mariabackup crashed is not taken again into receivers
// that were told it failed: the send fails with the crash, after one
// attempt, and the receiving repository holds nothing. (Into a
// repository the same crash is taken again: internal/physical's
// TestCrashedMariabackupIsTakenAgain.)
func TestSendOfACrashedBackupFailsWithTheCrash(t *testing.T) {
	t.Parallel()
	src := sampleSource(t)
	tok := usecasetest.TokenFile(t)
	repo := usecasetest.NewLocalRepo(t)
	recv := usecasetest.StartStore(t, usecasetest.StoreInRepo(t, tok, repo.Access()))
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "mariabackup")
	script := `#!/bin/sh
case " $* " in *" --backup "*) ;; *) exec mariabackup "$@";; esac
echo >>` + dir + `/attempts
[ -e ` + dir + `/crashed ] && exec mariabackup "$@"
: >` + dir + `/crashed
mariabackup "$@" | head -c 1000000
kill -SEGV $$
`
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	req := usecasetest.SendOf(t, usecasetest.Conn(src), tok, recv.Addr)
	req.Job.Mariabackup = wrapper
	_, err := remote.Send(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), "mariabackup crashed (segmentation fault)") {
		t.Fatalf("send: %v, want mariabackup's crash", err)
	}
	if got := recv.Wait(t, "receiver"); got.Err == nil {
		t.Errorf("the receiver took a backup whose sender failed")
	}
	if attempts, err := os.ReadFile(filepath.Join(dir, "attempts")); err != nil || len(attempts) != 1 {
		t.Errorf("mariabackup --backup ran %d times (%v), want once", len(attempts), err)
	}
	if entries := usecasetest.List(t, repo); len(entries) != 0 {
		t.Errorf("the receiving repository holds %+v, want nothing", entries)
	}
}
