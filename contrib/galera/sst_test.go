package galera

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/testkit"
)

// TestGaleraSSTThroughBackstream runs a cluster whose nodes join with
// wsrep_sst_method=backstream: a second node joins by a snapshot, a third
// while the first takes writes, and holds the same rows (CHECKSUM TABLE);
// a node with the wrong token is refused with the reason in both error
// logs; a donor killed mid-transfer leaves the joiner's datadir without
// data, the cluster Primary, and the joiner's next start succeeds; so does
// a joiner whose own backstream sst is killed mid-transfer (the donor's
// gives up and its server is Synced again); a donor with tls-ca refuses a
// joiner without a certificate from that CA, saying so in its error log,
// the cluster staying Primary; a joiner whose undo tablespaces are outside
// its datadir refuses before any snapshot is sent, saying why in its
// error log; a node restarted after a short absence catches up by IST.
func TestGaleraSSTThroughBackstream(t *testing.T) {
	dir := t.TempDir()
	// A slow transfer (max-rate) leaves time to kill its donor.
	opt, cnf, token := installSST(t, dir, "max-rate=2MiB/s\n")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	c, third := joinUnderLoad(t, ctx, opt, dir)
	first := c.Nodes[0]
	if !strings.Contains(readFile(t, third.ErrorLog), "backstream: snapshot") {
		t.Errorf("the third node's error log does not tell of backstream's snapshot")
	}
	sameTables(t, ctx, first, third)
	if size, _ := first.WsrepStatus(ctx, "cluster_size"); size != "3" {
		t.Errorf("cluster size %s, want 3", size)
	}

	t.Run("WrongToken", func(t *testing.T) {
		other := writeFile(t, dir, "other-token", testkit.RandomHex(32))
		bad := writeFile(t, dir, "bad.cnf", strings.Replace(readFile(t, cnf), token, other, 1))
		donorLogs := logSizes(c.Nodes)
		n, err := c.Join(t, sandbox.Options{Dir: filepath.Join(dir, "wrong-token"), OptionFile: bad})
		if err == nil {
			t.Fatal("a node with another token joined")
		}
		if n != nil {
			c.Remove(n)
		}
		joinerLog := readFile(t, filepath.Join(dir, "wrong-token", "error.log"))
		if !strings.Contains(joinerLog, "refused") || !strings.Contains(joinerLog, "wrong token") {
			t.Errorf("the joiner's error log does not say it refused the wrong token:\n%s", joinerLog)
		}
		if !strings.Contains(newLog(c.Nodes, donorLogs), "wrong token") {
			t.Errorf("no donor's error log says the token was wrong")
		}
		checkPrimary(t, ctx, first, 3)
	})

	t.Run("DonorKilled", func(t *testing.T) {
		jdir := filepath.Join(dir, "retry")
		killed := make(chan error, 1)
		go func() { killed <- killDonorMidTransfer(filepath.Join(jdir, "data"), c.Nodes) }()
		n, err := c.Join(t, sandbox.Options{Dir: jdir})
		if kerr := <-killed; kerr != nil {
			t.Fatal(kerr)
		}
		if err == nil {
			t.Fatal("the node joined although its donor was killed")
		}
		if n != nil {
			c.Remove(n)
		}
		checkPrimary(t, ctx, first, 3)
		// No data where the server starts: the staging (which the next
		// try removes) at most.
		for _, name := range []string{"ibdata1", "mysql", "app"} {
			if _, err := os.Stat(filepath.Join(jdir, "data", name)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("after the failed transfer the joiner's datadir holds %s (%v)", name, err)
			}
		}
		donorLogs := logSizes(c.Nodes)
		n, err = c.Join(t, sandbox.Options{Dir: jdir})
		if err != nil {
			t.Fatalf("retry: %v\nwhat the donors logged of the transfer meanwhile:\n%s", err, sstLines(newLog(c.Nodes, donorLogs)))
		}
		if _, err := os.Stat(filepath.Join(jdir, "data", ".backstream-sst")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the staging is left after a successful transfer (%v)", err)
		}
		sameTables(t, ctx, first, n)
	})

	t.Run("JoinerKilled", func(t *testing.T) {
		jdir := filepath.Join(dir, "joiner-killed")
		killed := make(chan error, 1)
		go func() { killed <- killMidTransfer(filepath.Join(jdir, "data"), "joiner", filepath.Join(jdir, "data")) }()
		n, err := c.Join(t, sandbox.Options{Dir: jdir})
		if kerr := <-killed; kerr != nil {
			t.Fatal(kerr)
		}
		if err == nil {
			t.Fatal("the node joined although its backstream sst was killed")
		}
		if n != nil {
			c.Remove(n)
		}
		checkPrimary(t, ctx, first, len(c.Nodes))
		// The donor gives up: its backstream sst ends and its server is
		// Synced again.
		for _, node := range c.Nodes {
			waitSynced(t, ctx, node)
			if pids := processes("sst", "donor", node.Datadir); len(pids) > 0 {
				t.Errorf("the donor's backstream sst (pids %v) still runs after its joiner was killed", pids)
			}
		}
		for _, name := range []string{"ibdata1", "mysql", "app"} {
			if _, err := os.Stat(filepath.Join(jdir, "data", name)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("after its backstream sst was killed the joiner's datadir holds %s (%v)", name, err)
			}
		}
		donorLogs := logSizes(c.Nodes)
		n, err = c.Join(t, sandbox.Options{Dir: jdir})
		if err != nil {
			t.Fatalf("retry: %v\nwhat the donors logged of the transfer meanwhile:\n%s", err, sstLines(newLog(c.Nodes, donorLogs)))
		}
		if _, err := os.Stat(filepath.Join(jdir, "data", ".backstream-sst")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the killed transfer's staging is left after a successful one (%v)", err)
		}
		sameTables(t, ctx, first, n)
		if err := n.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		c.Remove(n)
		checkPrimary(t, ctx, first, len(c.Nodes))
	})

	t.Run("UntrustedJoiner", func(t *testing.T) {
		// The donors verify the joiner's certificate against a CA; the
		// joiner has none (an ephemeral one).
		original := readFile(t, cnf)
		ca := writeCA(t, dir)
		if err := os.WriteFile(cnf, []byte(original+"tls-ca="+ca+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.WriteFile(cnf, []byte(original), 0o600)
		plain := writeFile(t, dir, "plain.cnf", original)
		donorLogs := logSizes(c.Nodes)
		n, err := c.Join(t, sandbox.Options{Dir: filepath.Join(dir, "untrusted"), OptionFile: plain})
		if err == nil {
			t.Fatal("a joiner without a certificate from the donor's CA joined")
		}
		if n != nil {
			c.Remove(n)
		}
		if log := newLog(c.Nodes, donorLogs); !strings.Contains(log, "donor: reaching the joiner at") || !strings.Contains(log, "certificate") {
			t.Errorf("no donor's error log says the joiner's certificate was refused (the join: %v):\n%s\nthe joiner's error log of the transfer:\n%s",
				err, log, sstLines(readFileOrEmpty(filepath.Join(dir, "untrusted", "error.log"))))
		}
		checkPrimary(t, ctx, first, len(c.Nodes))
		for _, node := range c.Nodes {
			waitSynced(t, ctx, node)
		}
	})

	t.Run("InnoDBOutsideDatadir", func(t *testing.T) {
		jdir := filepath.Join(dir, "outside")
		undo := filepath.Join(jdir, "undo")
		if err := os.MkdirAll(undo, 0o750); err != nil {
			t.Fatal(err)
		}
		donorLogs := logSizes(c.Nodes)
		n, err := c.Join(t, sandbox.Options{Dir: jdir, Args: []string{"--innodb-undo-directory=" + undo}})
		if err == nil {
			t.Fatal("a joiner whose undo tablespaces are outside its datadir joined")
		}
		if n != nil {
			c.Remove(n)
		}
		if log := readFile(t, filepath.Join(jdir, "error.log")); !strings.Contains(log, "innodb_undo_directory = "+undo) || !strings.Contains(log, "is outside the datadir") {
			t.Errorf("the joiner's error log does not say why it refused:\n%s", log)
		}
		if strings.Contains(newLog(c.Nodes, donorLogs), "sending a snapshot") {
			t.Errorf("a donor sent a snapshot to a joiner that refuses it")
		}
		checkPrimary(t, ctx, first, len(c.Nodes))
	})

	t.Run("IST", func(t *testing.T) {
		ports := third.GaleraPorts
		if err := third.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		c.Remove(third)
		mustExec(t, first.DB(), "INSERT INTO app.u VALUES (1000001, 1), (1000002, 2)")
		before := logSizes(c.Nodes)
		back, err := c.Join(t, sandbox.Options{Dir: third.Dir, Galera: &sandbox.Galera{Ports: ports}})
		if err != nil {
			t.Fatalf("restart: %v", err)
		}
		if log := readFile(t, back.ErrorLog); !strings.Contains(log, "by IST") {
			t.Errorf("the restarted node did not catch up by IST")
		}
		if strings.Contains(newLog(c.Nodes[:len(c.Nodes)-1], before), "sending a snapshot") {
			t.Errorf("a donor sent a snapshot to a node that IST could catch up")
		}
		sameTables(t, ctx, first, back)
	})
}

// joinUnderLoad starts a cluster of two nodes with opt (the second joins
// by a state transfer), fills the first with app.t, app.u and sample
// tables, and joins a third node (in dir/third) while the first takes
// writes.
func joinUnderLoad(t *testing.T, ctx context.Context, opt sandbox.Options, dir string) (*sandboxtest.Cluster, *sandbox.Server) {
	t.Helper()
	c := sandboxtest.StartCluster(t, 2, opt)
	first := c.Nodes[0]
	mustExec(t, first.DB(), "CREATE DATABASE app; CREATE TABLE app.t (id INT AUTO_INCREMENT PRIMARY KEY, n INT, s VARCHAR(200)); CREATE TABLE app.u (id INT PRIMARY KEY, n INT)")
	if err := sandbox.LoadSample(ctx, first.DB(), sandbox.SampleOptions{Tables: 2}); err != nil {
		t.Fatal(err)
	}
	stop := startLoad(t, first.DB())
	third, err := c.Join(t, sandbox.Options{Dir: filepath.Join(dir, "third")})
	if err != nil {
		t.Fatalf("third node: %v", err)
	}
	if n := stop(); n == 0 {
		t.Fatal("the load wrote nothing while the third node joined")
	}
	return c, third
}

// installSST builds backstream into dir beside wsrep_sst_backstream and
// returns the options of a node whose state transfers run through them:
// its option file (cnf) names a token file (token) and sets [sst]
// parallel 2, zstd and the lines of sstExtra.
func installSST(t *testing.T, dir, sstExtra string) (opt sandbox.Options, cnf, token string) {
	t.Helper()
	sandboxtest.RequireGalera(t)
	bin := filepath.Join(dir, "backstream")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/backstream/backstream/cmd/backstream").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	script, err := os.ReadFile("wsrep_sst_backstream")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "wsrep_sst_backstream"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	token = writeFile(t, dir, "token", testkit.RandomHex(32))
	cnf = writeFile(t, dir, "node.cnf", fmt.Sprintf("[mysqld]\nwsrep_sst_auth=root:\n\n[sst]\ntoken-file=%s\nparallel=2\ncompress=zstd\n%s", token, sstExtra))
	opt = sandbox.Options{OptionFile: cnf, Galera: &sandbox.Galera{SSTMethod: "backstream"},
		Env: []string{"PATH=" + dir + ":" + os.Getenv("PATH")}}
	return opt, cnf, token
}

// startLoad inserts and updates rows on db until the returned function is
// called, which returns how many statements ran.
func startLoad(t *testing.T, db *sql.DB) func() int {
	var wg sync.WaitGroup
	done := make(chan struct{})
	var n int
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			q := "INSERT INTO app.t (n, s) VALUES (?, REPEAT('x', 150))"
			if i%3 == 2 {
				q = "UPDATE app.t SET n = n + 1 WHERE id = ?"
			}
			if _, err := db.Exec(q, i); err != nil {
				t.Errorf("load: %v", err)
				return
			}
			if _, err := db.Exec("REPLACE INTO app.u VALUES (?, ?)", i%500, i); err != nil {
				t.Errorf("load: %v", err)
				return
			}
			n++
		}
	})
	return func() int { close(done); wg.Wait(); return n }
}

// sameTables compares the CHECKSUM TABLE of every user table on two nodes,
// the second read once it has applied everything the cluster committed.
func sameTables(t *testing.T, ctx context.Context, a, b *sandbox.Server) {
	t.Helper()
	want, err := sandbox.ChecksumTables(ctx, a.DB())
	if err != nil {
		t.Fatal(err)
	}
	cfg := b.Config("")
	cfg.Params = map[string]string{"wsrep_sync_wait": "1"}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	got, err := sandbox.ChecksumTables(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 3 || !maps.Equal(got, want) {
		t.Errorf("checksums differ:\n donor  %v\n joiner %v", want, got)
	}
}

// checkPrimary checks that s's cluster stays Primary until it is back to
// size nodes (a node that gave up is evicted after evs.suspect_timeout).
func checkPrimary(t *testing.T, ctx context.Context, s *sandbox.Server, size int) {
	t.Helper()
	var status, n string
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		status, err = s.WsrepStatus(ctx, "cluster_status")
		if err != nil || status != "Primary" {
			break
		}
		if n, err = s.WsrepStatus(ctx, "cluster_size"); err == nil && n == fmt.Sprint(size) {
			return
		}
	}
	t.Errorf("cluster %s of %s nodes (%v), want Primary of %d", status, n, err, size)
}

// killDonorMidTransfer waits until the joiner's staging in datadir has
// files, then kills (SIGKILL) the backstream sst donor of one of the
// nodes' servers.
func killDonorMidTransfer(datadir string, nodes []*sandbox.Server) error {
	var dirs []string
	for _, n := range nodes {
		dirs = append(dirs, n.Datadir)
	}
	return killMidTransfer(datadir, "donor", dirs...)
}

// killMidTransfer waits until the joiner's staging in datadir has files,
// then kills (SIGKILL) the backstream sst of role running for one of
// the servers of datadirs.
func killMidTransfer(datadir, role string, datadirs ...string) error {
	staging := filepath.Join(datadir, ".backstream-sst")
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if entries, _ := os.ReadDir(staging); len(entries) == 0 {
			continue
		}
		for _, d := range datadirs {
			for _, pid := range processes("sst", role, d) {
				return syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	return fmt.Errorf("no %s's backstream sst found during the transfer", role)
}

// waitSynced waits until node s is Synced again (a donor after its
// transfer ended).
func waitSynced(t *testing.T, ctx context.Context, s *sandbox.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := s.WaitSynced(ctx); err != nil {
		t.Error(err)
	}
}

// writeCA writes the certificate of a new CA into dir and returns its
// path.
func writeCA(t *testing.T, dir string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sst test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, "ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
}

// processes returns the pids whose command line has every one of words.
func processes(words ...string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) < 2 || filepath.Base(args[0]) != "backstream" {
			continue
		}
		all := true
		for _, w := range words {
			all = all && strings.Contains(string(b), w)
		}
		if all {
			pids = append(pids, pid)
		}
	}
	return pids
}

func logSizes(nodes []*sandbox.Server) map[string]int {
	m := map[string]int{}
	for _, n := range nodes {
		m[n.ErrorLog] = len(readFileOrEmpty(n.ErrorLog))
	}
	return m
}

// newLog is what the nodes' error logs gained since sizes.
func newLog(nodes []*sandbox.Server, sizes map[string]int) string {
	var b strings.Builder
	for _, n := range nodes {
		s := readFileOrEmpty(n.ErrorLog)
		if off := sizes[n.ErrorLog]; off <= len(s) {
			b.WriteString(s[off:])
		}
	}
	return b.String()
}

// sstLines is the lines of an error log that tell of a state transfer:
// the SST script's, backstream's and the errors.
func sstLines(log string) string {
	var b strings.Builder
	for line := range strings.Lines(log) {
		if strings.Contains(line, "WSREP_SST") || strings.Contains(line, "backstream") || strings.Contains(line, "[ERROR]") {
			b.WriteString(line)
		}
	}
	return b.String()
}

func readFileOrEmpty(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustExec(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}
