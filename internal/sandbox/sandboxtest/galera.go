package sandboxtest

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/sandbox"
)

// syncTimeout bounds a node's start and state transfer on a loaded test
// machine.
const syncTimeout = 5 * time.Minute

// RequireGalera fails the test on a host without the Galera provider:
// scripts/deps.sh installs it, and a missing component is never a skip.
func RequireGalera(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(sandbox.DefaultGaleraProvider); err != nil {
		t.Fatalf("no Galera provider (%v): scripts/deps.sh installs it (galera-4)", err)
	}
}

// Cluster is a Galera cluster of sandbox nodes on loopback.
type Cluster struct {
	Nodes []*sandbox.Server
	opt   sandbox.Options
}

// StartCluster starts a cluster of n nodes for a test: the first
// bootstraps it, every other one joins the nodes before it by a state
// transfer (opt.Galera.SSTMethod), and each is Synced before the next
// starts. opt is every node's template (Galera, OptionFile, Env, Args);
// each node gets a directory of its own. The nodes are stopped and their
// directories removed when the test ends, also when it fails; t.Fatal if
// a node does not start or sync.
func StartCluster(t testing.TB, n int, opt sandbox.Options) *Cluster {
	t.Helper()
	RequireGalera(t)
	if opt.Galera == nil {
		opt.Galera = &sandbox.Galera{}
	}
	if opt.Galera.ClusterName == "" {
		opt.Galera.ClusterName = "sandbox"
	}
	c := &Cluster{opt: opt}
	t.Cleanup(func() { c.stop(t) })
	for range n {
		if _, err := c.Join(t, sandbox.Options{}); err != nil {
			t.Fatalf("start Galera node %d of %d: %v", len(c.Nodes)+1, n, err)
		}
	}
	return c
}

// Join starts one more node that joins the cluster and waits until it is
// Synced. extra's Dir, Datadir and Galera.Ports, if set, place the node
// (a node restarted on its own datadir), its OptionFile replaces the
// cluster's, and its Args come after the cluster's. A node that started is stopped with the cluster, also when
// it never synced; the error says why it did not join.
func (c *Cluster) Join(t testing.TB, extra sandbox.Options) (*sandbox.Server, error) {
	t.Helper()
	opt := c.opt
	g := *opt.Galera
	g.Peers = nil
	for _, n := range c.Nodes {
		g.Peers = append(g.Peers, n.GcommAddr())
	}
	if extra.Galera != nil {
		g.Ports = extra.Galera.Ports
	}
	opt.Galera = &g
	opt.Dir, opt.Datadir = extra.Dir, extra.Datadir
	if extra.OptionFile != "" {
		opt.OptionFile = extra.OptionFile
	}
	opt.Args = append(slices.Clone(opt.Args), extra.Args...)
	if opt.StartTimeout == 0 {
		opt.StartTimeout = syncTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), syncTimeout)
	defer cancel()
	s, err := sandbox.Start(ctx, opt)
	if err != nil {
		return nil, err
	}
	c.Nodes = append(c.Nodes, s)
	if err := s.WaitSynced(ctx); err != nil {
		return s, err
	}
	return s, nil
}

// Remove takes a node out of the list the cluster stops at the end (one
// the test stopped or killed itself and closes on its own).
func (c *Cluster) Remove(s *sandbox.Server) {
	c.Nodes = slices.DeleteFunc(c.Nodes, func(n *sandbox.Server) bool { return n == s })
}

// stop stops the nodes, the newest first, logging the error log tails of a
// failed test.
func (c *Cluster) stop(t testing.TB) {
	for i := len(c.Nodes) - 1; i >= 0; i-- {
		s := c.Nodes[i]
		if t.Failed() {
			t.Logf("Galera node %d error log %s (tail):\n%s", i+1, s.ErrorLog, s.ErrorLogTail(60))
		}
		if err := s.Close(); err != nil && !t.Failed() {
			t.Logf("close Galera node %d: %v", i+1, err)
		}
	}
}
