package serverup

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// An old server still answering on the datadir and the connection is not
// taken for the one just started: its uptime gives it away, and nothing
// is checked. A server the command started is.
func TestStartRefusesAnOldServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	old := sandboxtest.Start(t, sandbox.Options{})
	// Up for longer than the slack the check allows.
	time.Sleep(3 * time.Second)
	_, err := Start(ctx, Options{How: "true", Conn: mariadb.Config{Socket: old.Socket, User: "root"}, Datadir: old.Datadir, Timeout: time.Minute, Biggest: 5})
	if err == nil || !strings.Contains(err.Error(), "it is not the server just started") {
		t.Fatalf("Start with an old server answering: %v, want it refused as not the one started", err)
	}

	if err := old.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sock, pidFile := filepath.Join(dir, "s.sock"), filepath.Join(dir, "mariadbd.pid")
	t.Cleanup(func() { kill(t, pidFile) })
	start := fmt.Sprintf("mariadbd --no-defaults --datadir=%s --socket=%s --skip-networking --user=root --pid-file=%s --log-error=%s --tmpdir=%s --innodb-buffer-pool-size=64M >/dev/null 2>&1 &",
		old.Datadir, sock, pidFile, filepath.Join(dir, "error.log"), dir)
	rep, err := Start(ctx, Options{How: start, Conn: mariadb.Config{Socket: sock, User: "root"}, Datadir: old.Datadir, Timeout: time.Minute, Biggest: 5})
	if err != nil || rep.SystemTables == 0 {
		t.Fatalf("Start with the server just started: %+v, %v", rep, err)
	}
}

// kill ends the server whose pid the file holds and waits until it is gone.
func kill(t *testing.T, pidFile string) {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return
	}
	syscall.Kill(pid, syscall.SIGKILL)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			return
		}
	}
	t.Errorf("mariadbd %d did not end", pid)
}
