package usecasetest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/provision"
	"github.com/backstream/backstream/internal/remote"
	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/transport"
)

// SendOf is the request `send --to to... --token-file tokenFile` makes of
// the server conn reaches, with the defaults a user gets (--parallel's
// streams, zstd, BLAKE3, the idle timeout), asking of each receiver only
// that it takes the backup whole; the test sets what else it asks for
// (Job.Parallel, Job.MaxIO, From, Want, ...).
func SendOf(t testing.TB, conn mariadb.Config, tokenFile string, to ...string) remote.SendRequest {
	t.Helper()
	c, err := codec.Parse(codec.Default)
	if err != nil {
		t.Fatal(err)
	}
	b := backup.Request{Conn: conn, Parallel: options.DefaultParallel(), Codec: c, Hash: archive.DefaultHash, Version: "test"}
	if err := b.Check(); err != nil {
		t.Fatal(err)
	}
	return remote.SendRequest{Job: backup.PhysicalJob(b), To: to, TokenFile: tokenFile, Idle: transport.DefaultIdleTimeout, Want: remote.WantTaken}
}

// Send sends as req asks (remote.Send), failing the test if it fails.
func Send(t testing.TB, req remote.SendRequest) *remote.Sending {
	t.Helper()
	res, err := remote.Send(context.Background(), req)
	if err != nil {
		t.Fatalf("send to %v: %v", req.To, err)
	}
	t.Logf("backup %s sent to %v: %d streams", res.Manifest.ID, res.Sent.Addresses(true), len(res.Manifest.Streams))
	return res
}

// ReceiveOf is the request `receive --listen 127.0.0.1:0 --token-file
// tokenFile` makes with the defaults a user gets (--parallel's workers,
// the idle, start and check timeouts), for provision.Run; the test says
// where the backups go (Restore.TargetDir, Datadir with Start, Repos with
// RepoGiven) and sets what else it asks for.
func ReceiveOf(tokenFile string) provision.ReceiveRequest {
	req := provision.ReceiveRequest{Listen: "127.0.0.1:0", TokenFile: tokenFile, Idle: transport.DefaultIdleTimeout,
		StartTimeout: optionDefault[time.Duration]("receive", "start-timeout"), CheckTimeout: optionDefault[time.Duration]("receive", "check-timeout")}
	req.Restore.Options.Workers = options.DefaultParallel()
	return req
}

// StoreOf is the request `receive --listen 127.0.0.1:0 --token-file
// tokenFile` makes for remote.Store, as provision.Run passes it on with
// the defaults a user gets (--parallel's workers, the idle timeout); the
// test sets where the backups go (see StoreInDir and StoreInRepo).
func StoreOf(t testing.TB, tokenFile string) remote.StoreRequest {
	t.Helper()
	req := remote.StoreRequest{Listen: "127.0.0.1:0", Workers: options.DefaultParallel()}
	if err := req.Transport.Settle(transport.DefaultIdleTimeout, tokenFile); err != nil {
		t.Fatal(err)
	}
	return req
}

// StoreInDir is StoreOf for `receive --target-dir dir`: each backup
// restored into dir as it arrives, with restore's defaults (--parallel's
// workers, synced, not prepared); the test sets what else it asks for
// (TargetDir.Options.Prepare, ...).
func StoreInDir(t testing.TB, tokenFile, dir string) remote.StoreRequest {
	t.Helper()
	req := StoreOf(t, tokenFile)
	req.TargetDir = &restore.Request{TargetDir: dir, Options: restore.Options{Workers: options.DefaultParallel()}}
	return req
}

// StoreInRepo is StoreOf for `receive --repo` with the repository access
// o (its location, its keys, --encrypt): the repository opened, its
// encryption recorded in the manifests of the backups stored, and locked
// for each transfer, as provision.Run has it.
func StoreInRepo(t testing.TB, tokenFile string, o repoaccess.Options) remote.StoreRequest {
	t.Helper()
	req := StoreOf(t, tokenFile)
	var err error
	if req.Repo, err = o.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	if req.Encryption, err = o.Encryption(context.Background(), req.Repo); err != nil {
		t.Fatal(err)
	}
	r := req.Repo
	req.LockRepo = func(ctx context.Context) (context.Context, func(), error) {
		return o.Acquire(ctx, r, repoaccess.OpReceive, true)
	}
	return req
}

// Receiving is a receiver running in the background: the address it
// listens on and, once it ended, what it returned.
type Receiving struct {
	Addr string
	done chan Received
}

// Received is what a receiver returned: provision.Run's result (nil for a
// backup stored into a target directory or a repository) and its error.
type Received struct {
	Result *provision.Result
	Err    error
}

// StartReceive runs provision.Run with req in the background, as `receive`
// runs it, and returns once it listens (see startReceiving).
func StartReceive(t testing.TB, req provision.ReceiveRequest) *Receiving {
	t.Helper()
	return startReceiving(t, func(ctx context.Context, listening func(net.Addr)) (*provision.Result, error) {
		req.Listening = listening
		return provision.Run(ctx, req)
	})
}

// StartStore runs remote.Store with req in the background and returns
// once it listens (see startReceiving).
func StartStore(t testing.TB, req remote.StoreRequest) *Receiving {
	t.Helper()
	return startReceiving(t, func(ctx context.Context, listening func(net.Addr)) (*provision.Result, error) {
		req.Listening = listening
		return nil, remote.Store(ctx, req)
	})
}

// startReceiving runs receive in the background, under a context that
// ends with the test, with the callback that hears the address it listens
// on; it returns once the receiver listens. A receiver that ends first, or
// does not listen within a minute, fails the test.
func startReceiving(t testing.TB, receive func(ctx context.Context, listening func(net.Addr)) (*provision.Result, error)) *Receiving {
	t.Helper()
	addrs := make(chan string, 1)
	r := &Receiving{done: make(chan Received, 1)}
	go func() {
		res, err := receive(t.Context(), func(a net.Addr) { addrs <- a.String() })
		r.done <- Received{res, err}
	}()
	select {
	case r.Addr = <-addrs:
	case got := <-r.done:
		t.Fatalf("the receiver ended before it listened: %v", got.Err)
	case <-time.After(time.Minute):
		t.Fatal("the receiver did not listen within a minute")
	}
	return r
}

// Wait waits, three minutes at most, for what the receiver returned; what
// names it in the test's log.
func (r *Receiving) Wait(t testing.TB, what string) Received {
	t.Helper()
	select {
	case got := <-r.done:
		t.Logf("%s -> %v", what, got.Err)
		return got
	case <-time.After(3 * time.Minute):
		t.Fatalf("%s did not finish", what)
	}
	return Received{}
}

// DirBytes sums the sizes of the regular files below dir (0 if it does
// not exist): how far a restore or a transfer into it has got.
func DirBytes(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n
}
