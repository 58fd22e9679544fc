package provision_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/provision"
	"github.com/backstream/backstream/internal/remote"
	"github.com/backstream/backstream/internal/replica"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/usecasetest"
)

// mariadbdStart is a --start command: a server on datadir listening on
// socket only, with serverID, its pid and error log in pidFile and
// errLog, started in the background.
func mariadbdStart(datadir, socket string, serverID int, pidFile, errLog string) string {
	return fmt.Sprintf("mariadbd --no-defaults --datadir=%s --socket=%s --skip-networking --user=root --server-id=%d --pid-file=%s --log-error=%s --tmpdir=%s --innodb-buffer-pool-size=64M >/dev/null 2>&1 &",
		datadir, socket, serverID, pidFile, errLog, os.TempDir())
}

// intoPlace is req with `--datadir datadir --start start --socket socket
// --user root --no-defaults`: the backup restored into place, and the
// server start starts there reached, and checked, on socket.
func intoPlace(req provision.ReceiveRequest, datadir, start, socket string) provision.ReceiveRequest {
	req.Datadir, req.Start, req.Given.Place, req.Given.Conn = datadir, start, "start", "socket"
	req.Conn = func() (mariadb.Config, error) {
		return mariadb.Config{Socket: socket, User: "root", Protocol: mariadb.ProtocolSocket}, nil
	}
	return req
}

// replicating is req with `--replicate --catch-up` and the primary named
// as primary's flags name it: the started server replicates from it, and
// has caught up when the receiver ends.
func replicating(req provision.ReceiveRequest, primary replica.Named) provision.ReceiveRequest {
	req.Replicate, req.CatchUp, req.Primary, req.Given.Replicate = true, true, primary, "primary-host"
	return req
}

// primaryNamed is the primary as `--primary-defaults-file cnf
// --primary-host 127.0.0.1 --primary-port port --primary-user repl` name
// it.
func primaryNamed(cnf string, port int) replica.Named {
	return replica.Named{File: cnf, Given: replica.Primary{Host: "127.0.0.1", Port: port, User: "repl"}, HostGiven: true, PortGiven: true, UserGiven: true}
}

// replicateOf is the request `replicate --no-defaults` with the
// connection conn and the primary makes: the positions read from the
// server's datadir, with replicate's defaults; the test sets what else it
// asks for (Options.Force, FromBackup, ...).
func replicateOf(t *testing.T, conn mariadb.Config, primary replica.Named) provision.ReplicaRequest {
	t.Helper()
	req := provision.ReplicaRequest{Conn: conn, Options: replica.Options{WaitTimeout: replica.DefaultWaitTimeout}}
	var err error
	if req.Primary, err = primary.Resolve(replica.Primary{}); err != nil {
		t.Fatal(err)
	}
	return req
}

// replicate sets up replication as req asks, after its Check, as
// `replicate` runs it (provision.SetupReplica).
func replicate(ctx context.Context, req provision.ReplicaRequest) (*replica.Summary, error) {
	if err := req.Check(); err != nil {
		return nil, err
	}
	return provision.SetupReplica(ctx, req)
}

// Issue 3: a source under a write load is sent to three receivers at
// once. The second provisions its replica by itself (receive --datadir
// --start --replicate), which provision reports. The first restores into
// place but the server it starts does not come up, and the third only
// stores the backup in a repository: provision names each for what it
// is. A server started on the first's datadir is then pointed at the
// source (replicate); both replicas end with the source's CHECKSUM TABLE
// once the load stops.
func TestSendToTwoReceiversThenReplicate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	db := src.DB()
	usecasetest.CreateBank(t, db, 1000, 1000, 100000, "REPEAT(MD5(seq), 6)",
		"CREATE USER repl@'%' IDENTIFIED BY 'repl-Pa55 word'",
		"GRANT REPLICATION SLAVE ON *.* TO repl@'%'")
	load := usecasetest.StartLoad(1, func(rng *rand.Rand) error {
		return usecasetest.Transfer(ctx, db, "bank.accounts", "bank.accounts", rng.IntN(1000)+1, rng.IntN(1000)+1, rng.IntN(9)+1)
	})
	load.More(t, 20)

	// The primary's password in an option file, as a DBA would keep it
	// (the environment's BACKSTREAM_PRIMARY_PASSWORD is replica's unit
	// tests' business; setting it here would keep this test serial).
	primaryCnf := filepath.Join(t.TempDir(), "primary.cnf")
	if err := os.WriteFile(primaryCnf, []byte("[backstream-primary]\npassword=\"repl-Pa55 word\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tok := usecasetest.TokenFile(t)
	// The first receiver restores into place, but the server it starts
	// does not come up (receive --datadir --start='exit 3'); the second
	// restores into place, starts the server and points it at the primary
	// itself (receive --datadir --start --replicate), as a new replica's
	// host would; the third only stores the backup in a repository.
	base := t.TempDir()
	sock1 := testkit.SocketPath(t, "replica1.sock")
	pidFile := filepath.Join(base, "replica1.pid")
	t.Cleanup(func() { sandboxtest.KillByPidFile(t, pidFile) })
	serverCnf := filepath.Join(base, "server.cnf")
	if err := os.WriteFile(serverCnf, []byte("[mysqld]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	repo := usecasetest.NewLocalRepo(t)
	targets := []string{filepath.Join(base, "replica0"), filepath.Join(base, "replica1"), repo.Location}
	var stored []remote.Stored // the third receiver's, read once it ended
	var receivers []*usecasetest.Receiving
	var to []string
	for i, target := range targets {
		req := usecasetest.ReceiveOf(tok)
		switch i {
		case 0:
			req.Datadir, req.Start, req.Given.Place = target, "echo no server here >&2; exit 3", "start"
			req.Restore.ServerDefaults = serverCnf
			req.Conn = func() (mariadb.Config, error) { return mariadb.Resolve(mariadb.Flags{}) }
		case 1:
			req = replicating(intoPlace(req, target, mariadbdStart(target, sock1, 12, pidFile, filepath.Join(base, "replica1.err")), sock1),
				primaryNamed(primaryCnf, src.Port))
		case 2:
			req.Repos, req.RepoGiven = repo.Access(), true
			req.Stored = func(s remote.Stored) error {
				stored = append(stored, s)
				return nil
			}
		}
		r := usecasetest.StartReceive(t, req)
		receivers, to = append(receivers, r), append(to, r.Addr)
	}
	// provision: like send, but every receiver must report a replica. The
	// receiver whose server did not start and the one that only stores
	// are named, each for what it is; the replica is not, and its report
	// is given. The source is named as the issue spells it, --from
	// HOST:PORT with --user root --no-defaults (over TCP: the check that
	// the server works in the datadir mariabackup reads here finds it by
	// its listening socket), and --replicate says what provision insists
	// on anyway.
	conn, err := mariadb.Resolve(mariadb.Flags{User: "root", NoDefaults: true})
	if err != nil {
		t.Fatal(err)
	}
	req := usecasetest.SendOf(t, conn, tok, to...)
	req.Job.Parallel, req.From, req.Want = 2, fmt.Sprintf("127.0.0.1:%d", src.Port), remote.WantOf(true, true)
	if err := req.Check(); err != nil {
		t.Fatal(err)
	}
	sending, sendErr := remote.Send(ctx, req)
	if sending == nil {
		t.Fatalf("provision reached no receiver: %v", sendErr)
	}
	id, gtid := sending.Manifest.ID, sending.Manifest.Positions.GTID
	for i, recv := range receivers {
		got := recv.Wait(t, fmt.Sprintf("receiver %d", i))
		switch {
		case i == 0:
			if got.Err == nil || !strings.Contains(got.Err.Error(), "arrived and verified, then: starting the server") {
				t.Errorf("receive --datadir --start='exit 3': %v, want the start named as what failed", got.Err)
			}
		case got.Err != nil:
			t.Fatalf("receiver %d: %v", i, got.Err)
		}
		// What became of the backup (what receive --json prints), also
		// when the server did not start.
		if i == 2 {
			if want := (remote.Stored{Backup: id, Into: remote.IntoRepository, Where: targets[i]}); got.Result != nil || len(stored) != 1 || stored[0] != want {
				t.Errorf("receive --repo: result %+v, stored %+v; want only %+v", got.Result, stored, want)
			}
			continue
		}
		if got.Result == nil {
			t.Fatalf("receiver %d said nothing of the backup it received", i)
		}
		rep := got.Result.Report(got.Err)
		if rep.Backup != id || rep.Into != remote.IntoDatadir || rep.Where != targets[i] || !rep.Prepared {
			t.Errorf("receiver %d: %+v; want backup %s prepared into the datadir %s", i, rep, id, targets[i])
		}
		switch s := rep.Replicating; i {
		case 0:
			if rep.Started != nil || s != nil || !strings.Contains(rep.Error, "starting the server") {
				t.Errorf("receive --datadir --start='exit 3': %+v, want not started, the error", rep)
			}
		case 1:
			if rep.Started == nil || rep.Started.Version == "" || rep.Started.SystemTables == 0 || s == nil ||
				s.Primary != "127.0.0.1:"+strconv.Itoa(src.Port) || s.GTID == "" || !s.CaughtUp || s.Status == nil || !s.Status.IORunning || !s.Status.SQLRunning || rep.Error != "" {
				t.Errorf("receive --datadir --start --replicate: %+v (started %+v, replicating %+v), want the started server checked and replicating", rep, rep.Started, s)
			}
		}
	}
	msg := fmt.Sprint(sendErr)
	for _, want := range []string{"did not reach receiver " + to[0] + " (see above); it reached " + to[1] + ", " + to[2],
		"receiver " + to[2] + " took the backup but reports no replication"} {
		if !usecasetest.Failed(sendErr) || !strings.Contains(msg, want) {
			t.Errorf("provision to a receiver that fails, one that replicates and one that only stores: %v; want a failure saying %q", sendErr, want)
		}
	}
	if strings.Contains(strings.ReplaceAll(msg, "it reached "+to[1], ""), to[1]) {
		t.Errorf("provision names the receiver that replicates as failed: %v", sendErr)
	}
	// The sender says what each receiver did: into place, started,
	// replicating; or why it failed (the failed receiver's error, with
	// the start command's output).
	made, rs := sending.JSON(), sending.Sent.Receivers
	if made.Kind != "physical" || made.StoredBytes == 0 || made.Positions.GTID == "" || len(rs) != 3 {
		t.Fatalf("provision sent %+v to %+v, want the backup and three receivers", made, rs)
	}
	for i, r := range rs {
		if r.Address != to[i] {
			t.Errorf("provision: receiver %d is %s, want %s", i, r.Address, to[i])
		}
	}
	if r := rs[0]; r.OK || r.Replicating || !strings.HasPrefix(r.Error, "from "+to[0]+": peer says: backup ") || !strings.Contains(r.Error, "no server here") {
		t.Errorf("provision: the receiver whose server did not start: %+v", r)
	}
	if r := rs[1]; !r.OK || !r.Replicating || r.Error != "" || !strings.Contains(r.Report, "runs on "+targets[1]) || !strings.Contains(r.Report, "\nreplicating from") {
		t.Errorf("provision: the receiver that replicates: %+v", r)
	}
	if r := rs[2]; !r.OK || r.Replicating || r.Error != "" || r.Report != "" {
		t.Errorf("provision: the receiver that stores: %+v", r)
	}

	var replicas []*sql.DB
	for i, target := range targets[:2] {
		conn := mariadb.Config{Socket: sock1, User: "root", Protocol: mariadb.ProtocolSocket}
		if i == 0 {
			conn = usecasetest.Conn(usecasetest.ServerOn(t, target))
		}
		db, err := mariadb.Open(ctx, conn, "")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		replicas = append(replicas, db)
		if i == 0 {
			sum, err := replicate(ctx, replicateOf(t, conn, primaryNamed(primaryCnf, src.Port)))
			if err != nil {
				t.Fatalf("replicate: %v", err)
			}
			if st := sum.Status; sum.Primary != "127.0.0.1:"+strconv.Itoa(src.Port) || sum.PrimaryUser != "repl" || sum.ConnectionName != "" ||
				!sum.UsingGTID || sum.GTID != gtid || sum.BinlogFile == "" || sum.BinlogPosition == 0 ||
				!strings.HasPrefix(sum.PositionFrom, target) || st == nil || !st.IORunning || !st.SQLRunning || st.MasterPort != src.Port {
				t.Errorf("replicate: %+v (status %+v), want it replicating from the source at the backup's GTID %s read from %s", sum, st, gtid, target)
			}
		}
		t.Logf("replica %d replicating", i)
	}
	// More writes after replication started, then stop and compare.
	load.More(t, 50)
	load.Finish(t)
	want, err := sandbox.ChecksumTables(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range replicas {
		deadline := time.Now().Add(time.Minute)
		for {
			got, err := sandbox.ChecksumTables(ctx, r)
			if err == nil && fmt.Sprint(got) == fmt.Sprint(want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d never caught up: %v vs %v (%v)", i, got, want, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}
