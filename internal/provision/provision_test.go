package provision

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/remote"
	"github.com/backstream/backstream/internal/replica"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/transport"
)

// rewritten is every one of the receiver's sentences reworded: none keeps
// a word of backstream's.
func rewritten(t *testing.T) *Messages {
	m := DefaultMessages
	v := reflect.ValueOf(&m).Elem()
	for i := range v.NumField() {
		if v.Field(i).Kind() != reflect.String {
			t.Fatalf("Messages.%s is not a string: the test cannot reword it", v.Type().Field(i).Name)
		}
		v.Field(i).SetString(fmt.Sprintf("«reworded %d»", i))
	}
	return &m
}

// received is what Receive returned.
type received struct {
	res *Result
	err error
}

// receive runs Receive with req in the background, and returns where it
// listens.
func receive(t *testing.T, ctx context.Context, req Request) (string, <-chan received) {
	addrs := make(chan string, 1)
	req.Listen = "127.0.0.1:0"
	req.Listening = func(a net.Addr) { addrs <- a.String() }
	done := make(chan received, 1)
	go func() {
		res, err := Receive(ctx, req)
		done <- received{res, err}
	}()
	select {
	case a := <-addrs:
		return a, done
	case r := <-done:
		t.Fatalf("Receive returned before it listened: %v", r.err)
	}
	return "", nil
}

// The must-show of issue 29: with every sentence of the receivers
// reworded, provisioning still succeeds where a replica came up and fails
// where its server did not start, and the sender tells them apart from
// the outcome's fields alone. On the code before it, the sender looked
// for "replicating from " in the receiver's text, which no reworded
// receiver says.
func TestProvisionDecidesFromFieldsWhateverTheWords(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	src := sandboxtest.Start(t, sandbox.Options{})
	for _, q := range []string{
		"CREATE DATABASE shop", "CREATE TABLE shop.orders (id INT PRIMARY KEY, v VARCHAR(40))",
		"INSERT INTO shop.orders SELECT seq, MD5(seq) FROM shop.seq_1_to_5000",
		"CREATE USER repl@'%' IDENTIFIED BY 'repl-Pa55'", "GRANT REPLICATION SLAVE ON *.* TO repl@'%'",
	} {
		if _, err := src.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	msgs := rewritten(t)
	tok := []byte(transport.GenerateToken())
	base := t.TempDir()
	replicaReq, sock := startingReplica(t, base, src.Port)
	replicaReq.Transport, replicaReq.Messages = transport.Options{Token: tok}, msgs
	failing := Request{Transport: transport.Options{Token: tok}, Messages: msgs, Datadir: filepath.Join(base, "failing"),
		Restore: restore.Request{Options: restore.Options{Workers: 2}},
		Start:   &Start{How: "echo no server here >&2; exit 3", Conn: mariadb.Config{Socket: filepath.Join(base, "none.sock"), User: "root"}, Timeout: time.Minute}}
	addrOK, doneOK := receive(t, ctx, replicaReq)
	addrFailing, doneFailing := receive(t, ctx, failing)

	reports := send(t, ctx, src, tok, addrOK, addrFailing)
	ok, bad := reports[0], reports[1]
	if o := ok.Outcome; ok.Err != nil || o == nil || !o.Replicating() || o.Server.Datadir != replicaReq.Datadir || o.Server.Address != sock ||
		o.Replication.Primary != fmt.Sprintf("127.0.0.1:%d", src.Port) || !o.Replication.UsingGTID || o.Replication.GTID == "" || !o.Replication.CaughtUp {
		t.Errorf("the replica's outcome: %+v, %v; want it replicating, its server and coordinates", o, ok.Err)
	}
	var failed *remote.FailedError
	if o := bad.Outcome; !errors.As(bad.Err, &failed) || o == nil || o.Status != remote.StatusFailed || o.Step != remote.StepStart ||
		o.Running() || !strings.Contains(o.Error, "no server here") {
		t.Errorf("the failing receiver's outcome: %+v, %v; want failed at the start, with the command's output", o, bad.Err)
	}
	for _, r := range reports {
		if r.Outcome == nil || !strings.Contains(r.Outcome.Text, "«reworded") ||
			strings.Contains(r.Outcome.Text, "replicating from") || strings.Contains(r.Outcome.Text, " runs on ") {
			t.Errorf("receiver %s told %+v, want only reworded sentences", r.Addr, r.Outcome)
		}
	}
	checkReceived(t, <-doneOK, <-doneFailing)
}

// startingReplica is a Request that starts a server on a datadir in base
// and has it replicate from the primary on port, and the server's socket.
func startingReplica(t *testing.T, base string, port int) (Request, string) {
	datadir, sock, pidFile := filepath.Join(base, "replica"), testkit.SocketPath(t, "replica.sock"), filepath.Join(base, "replica.pid")
	t.Cleanup(func() { sandboxtest.KillByPidFile(t, pidFile) })
	start := fmt.Sprintf("mariadbd --no-defaults --datadir=%s --socket=%s --skip-networking --user=root --server-id=12 --pid-file=%s --log-error=%s --tmpdir=%s --innodb-buffer-pool-size=64M >/dev/null 2>&1 &",
		datadir, sock, pidFile, filepath.Join(base, "replica.err"), os.TempDir())
	return Request{Datadir: datadir,
		Restore: restore.Request{Options: restore.Options{Workers: 2}},
		Start:   &Start{How: start, Conn: mariadb.Config{Socket: sock, User: "root", Protocol: mariadb.ProtocolSocket}, Timeout: 2 * time.Minute},
		Replicate: &Replicate{Primary: replica.Primary{Host: "127.0.0.1", Port: port, User: "repl", Password: "repl-Pa55"},
			CatchUp: true, WaitTimeout: time.Minute}}, sock
}

// send takes a physical backup of src and sends it to the receivers at
// addrs; it returns what each reported.
func send(t *testing.T, ctx context.Context, src *sandbox.Server, tok []byte, addrs ...string) []remote.Report {
	s, err := remote.Dial(ctx, addrs, transport.Options{Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := codec.Parse("zstd")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := physical.RunBackup(ctx, physical.BackupJob{Dest: s, Conn: mariadb.Config{Socket: src.Socket, User: "root"}, Parallel: 2, Codec: c}); err != nil {
		t.Fatalf("sending: %v", err)
	}
	return s.Reports()
}

// checkReceived checks what Receive returned to the replica's receiver
// and to the one whose server did not start.
func checkReceived(t *testing.T, ok, failing received) {
	t.Helper()
	if r := ok.res; ok.err != nil || r == nil || r.Backup == "" || r.Started == nil || r.Started.SystemTables == 0 ||
		r.Replication == nil || r.Replication.Status == nil || !r.Replication.Status.IORunning || r.Step != "" {
		t.Errorf("the replica's Receive: %+v, %v", r, ok.err)
	}
	if r := failing.res; failing.err == nil || r == nil || r.Backup == "" || r.Started != nil || r.Step != remote.StepStart ||
		!strings.Contains(failing.err.Error(), "arrived and verified, then: ") {
		t.Errorf("the failing Receive: %+v, %v; want the start named as what failed", r, failing.err)
	}
}
