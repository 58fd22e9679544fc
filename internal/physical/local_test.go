package physical

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// CheckLocal passes for a server on this host that works in the datadir
// it names, reached through its socket or over TCP, also when the path
// given is a symbolic link to it; it refuses the datadir of another
// server (the layout of a replica's host that a server elsewhere would
// name), an address that is not this host's, and a port nothing serves.
func TestCheckLocal(t *testing.T) {
	t.Parallel()
	a := sharedServer(t)
	b := sandboxtest.Start(t, sandbox.Options{})
	socket := mariadb.Config{Socket: a.Socket, Protocol: mariadb.ProtocolSocket}
	tcp := mariadb.Config{Host: "127.0.0.1", Port: a.Port, Protocol: mariadb.ProtocolTCP}
	link := filepath.Join(t.TempDir(), "datadir-link")
	if err := os.Symlink(a.Datadir, link); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		cfg     mariadb.Config
		datadir string
		want    string // "" to pass
	}{
		"socket":                 {socket, a.Datadir, ""},
		"tcp":                    {tcp, a.Datadir, ""},
		"through a link":         {socket, link, ""},
		"another server's files": {socket, b.Datadir, "does not work in " + b.Datadir},
		"over tcp, another's":    {tcp, b.Datadir, "does not work in " + b.Datadir},
		"not this host":          {mariadb.Config{Host: "192.0.2.7", Port: 3306, Protocol: mariadb.ProtocolTCP}, a.Datadir, "is not on this host"},
		"no datadir here":        {socket, filepath.Join(t.TempDir(), "gone"), "is not here"},
		"a port nothing serves":  {mariadb.Config{Host: "127.0.0.1", Port: freePort(t), Protocol: mariadb.ProtocolTCP}, a.Datadir, "no process on this host could be found listening"},
	} {
		err := CheckLocal(tc.cfg, tc.datadir, "/proc")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want it to pass", name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error saying %q", name, err, tc.want)
		}
	}
}

// Where only root may look at a server's working directory (a server that
// changed its user at start), the locks it holds on files at the top of
// its datadir say which directory it serves.
func TestLocksIn(t *testing.T) {
	t.Parallel()
	a := sharedServer(t)
	b := sandboxtest.Start(t, sandbox.Options{})
	pidText, err := os.ReadFile(a.PidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(pidText)))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := locksIn("/proc", pid, a.Datadir); !ok || err != nil {
		t.Errorf("locksIn(server %d, its datadir %s) = %v, %v; want true (InnoDB and Aria lock files there)", pid, a.Datadir, ok, err)
	}
	if ok, err := locksIn("/proc", pid, b.Datadir); ok || err != nil {
		t.Errorf("locksIn(server %d, another server's datadir %s) = %v, %v; want false", pid, b.Datadir, ok, err)
	}
}

// freePort returns a loopback TCP port that nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
