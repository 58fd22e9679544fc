package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// DefaultGaleraProvider is where Debian's galera-4 package puts the
// provider library.
const DefaultGaleraProvider = "/usr/lib/galera/libgalera_smm.so"

// Galera makes a sandbox server a node of a Galera cluster on loopback.
// Every address the node listens on (group communication, incremental
// state transfer, state snapshot transfer) is a free port on 127.0.0.1,
// chosen at Start and kept in the Server.
type Galera struct {
	// Provider is the wsrep provider library; empty: DefaultGaleraProvider.
	Provider string
	// ClusterName names the cluster; nodes of one cluster share it.
	ClusterName string
	// Peers are the group communication addresses (Server.GcommAddr) of
	// nodes already running. None: this node bootstraps a new cluster
	// (--wsrep-new-cluster) on a datadir the sandbox installs. Some: it
	// joins them, and a node that has no datadir yet starts on an empty
	// one, which the state snapshot transfer fills (so the template cache
	// is not used: its datadir would be a history of its own, which the
	// cluster would refuse or overwrite).
	Peers []string
	// SSTMethod is wsrep_sst_method; empty: the server's default (rsync).
	// The server runs wsrep_sst_<method> from its PATH (see Options.Env).
	SSTMethod string
	// Ports reuses the ports of an earlier start of this node (a restart
	// on the same datadir keeps its place in the cluster); zero ones are
	// chosen anew.
	Ports GaleraPorts
}

// GaleraPorts are a node's ports on 127.0.0.1.
type GaleraPorts struct {
	Gcomm int // group communication (gmcast.listen_addr)
	IST   int // incremental state transfer receiver (ist.recv_addr)
	SST   int // state snapshot transfer receiver (wsrep_sst_receive_address)
}

// GcommAddr is the node's group communication address, host:port, for
// the Peers of nodes that join it.
func (s *Server) GcommAddr() string {
	return "127.0.0.1:" + strconv.Itoa(s.GaleraPorts.Gcomm)
}

// SSTAddr is where the node receives a state snapshot transfer.
func (s *Server) SSTAddr() string {
	return "127.0.0.1:" + strconv.Itoa(s.GaleraPorts.SST)
}

// choosePorts fills the zero ports of g with free ones.
func (g *GaleraPorts) choosePorts() error {
	for _, p := range []*int{&g.Gcomm, &g.IST, &g.SST} {
		if *p != 0 {
			continue
		}
		port, err := pickPort()
		if err != nil {
			return err
		}
		*p = port
	}
	return nil
}

// joining says whether the server joins an existing cluster.
func (o *Options) joining() bool { return o.Galera != nil && len(o.Galera.Peers) > 0 }

// galeraArgs are mariadbd's options for a Galera node: the provider and
// its addresses, and what Galera needs of the server (row-based binary
// logging, interleaved auto-increment locks, every node's binary log
// holding every transaction).
func (s *Server) galeraArgs() []string {
	g := s.opt.Galera
	provider := g.Provider
	if provider == "" {
		provider = DefaultGaleraProvider
	}
	p := s.GaleraPorts
	args := []string{
		"--wsrep-on=ON",
		"--wsrep-provider=" + provider,
		"--wsrep-cluster-name=" + g.ClusterName,
		"--wsrep-cluster-address=gcomm://" + strings.Join(g.Peers, ","),
		"--wsrep-node-address=127.0.0.1",
		"--wsrep-node-name=" + strconv.Itoa(p.Gcomm),
		// A small gcache keeps a sandbox small; a node that falls further
		// behind than it holds joins by a snapshot instead.
		fmt.Sprintf("--wsrep-provider-options=gmcast.listen_addr=tcp://127.0.0.1:%d;ist.recv_addr=127.0.0.1:%d;gcache.size=64M;evs.suspect_timeout=PT5S;evs.inactive_timeout=PT10S", p.Gcomm, p.IST),
		"--wsrep-sst-receive-address=" + s.SSTAddr(),
		"--binlog-format=ROW",
		"--innodb-autoinc-lock-mode=2",
		"--log-slave-updates=ON",
		"--wsrep-slave-threads=2",
	}
	if g.SSTMethod != "" {
		args = append(args, "--wsrep-sst-method="+g.SSTMethod)
	}
	if len(g.Peers) == 0 {
		args = append(args, "--wsrep-new-cluster")
	}
	return args
}

// prepareJoinerDatadir creates the empty datadir a joining node starts on.
func (s *Server) prepareJoinerDatadir() error {
	if err := os.MkdirAll(s.Datadir, 0o750); err != nil {
		return fmt.Errorf("sandbox: create datadir %s: %w", s.Datadir, err)
	}
	return nil
}

// WsrepStatus returns the node's wsrep status variable name (without
// its wsrep_ prefix), e.g. "local_state_comment".
func (s *Server) WsrepStatus(ctx context.Context, name string) (string, error) {
	var v string
	// SHOW STATUS takes no placeholder; the name is the caller's constant.
	err := s.DB().QueryRowContext(ctx, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = ?", "WSREP_"+strings.ToUpper(name)).Scan(&v)
	if err != nil {
		return "", fmt.Errorf("sandbox: wsrep_%s of the node on %s: %w", name, s.Socket, err)
	}
	return v, nil
}

// WaitSynced waits until the node reports wsrep_local_state_comment
// Synced (it has its state and applies the cluster's writes), the server
// exits, or ctx ends.
func (s *Server) WaitSynced(ctx context.Context) error {
	last := ""
	for {
		state, err := s.WsrepStatus(ctx, "local_state_comment")
		if err == nil && state == "Synced" {
			return nil
		}
		last = state
		if err != nil {
			last = err.Error()
		}
		select {
		case <-s.exited:
			return fmt.Errorf("sandbox: the node on %s exited while %s: %v\n%s", s.Datadir, last, s.waitErr, s.logTailSince(0))
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("sandbox: the node on %s is %q, not Synced", s.Datadir, last), ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Exited is closed once the server process has ended.
func (s *Server) Exited() <-chan struct{} { return s.exited }
