package sandboxtest

import (
	"context"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/sandbox"
)

// TestGaleraClusterBootstraps: a one-node cluster on loopback is Primary
// and Synced, and takes writes. (Nodes that join by a state transfer are
// tested with backstream's transfer, in internal/cli.)
func TestGaleraClusterBootstraps(t *testing.T) {
	c := StartCluster(t, 1, sandbox.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	n := c.Nodes[0]
	for name, want := range map[string]string{"cluster_size": "1", "cluster_status": "Primary", "ready": "ON"} {
		if got, err := n.WsrepStatus(ctx, name); err != nil || got != want {
			t.Errorf("wsrep_%s = %q (%v), want %s", name, got, err, want)
		}
	}
	if _, err := n.DB().ExecContext(ctx, "CREATE DATABASE g; CREATE TABLE g.t (id INT PRIMARY KEY); INSERT INTO g.t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
}
