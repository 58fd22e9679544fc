// Package sst is backstream as a Galera state snapshot transfer method
// (wsrep_sst_method=backstream): it speaks the protocol the server keeps
// with its wsrep_sst_<method> scripts (their arguments, the joiner's
// "ready" line, the donor's "done" line, the position the joiner reports
// last) and moves the snapshot with backstream's own send and receive:
// mariabackup --galera-info on the donor, N TLS streams with a shared
// token, restored, verified and prepared on the joiner as it arrives.
//
// It knows the protocol and the joiner's datadir; how a physical backup
// is taken, sent, received and prepared it leaves to physical, remote and
// restore, and it knows no flag names.
package sst

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/backstream/backstream/internal/archive"
)

// Role is the part a node plays in a transfer.
type Role string

// The roles the server runs its script in.
const (
	Joiner Role = "joiner"
	Donor  Role = "donor"
)

// Method is the name the joiner puts in its address: a donor reached by a
// joiner of another method refuses to send (each side runs the method
// its own server is configured with).
const Method = "backstream"

// protocolVersion is the version of the conversation between a donor and
// a joiner of this method, the last part of the joiner's address.
const protocolVersion = "1"

// DefaultPort is the port a joiner listens on when its address names none
// (the stock scripts' default).
const DefaultPort = 4444

// Request is what the server asked, from its arguments to the script.
type Request struct {
	Role Role
	// Address is, for a joiner, where to listen (wsrep_sst_receive_address,
	// or the node's address), host with an optional port; for a donor, the
	// address the joiner printed in its ready line.
	Address string
	Datadir string
	// The option files the server reads; its [sst] group holds this
	// method's settings.
	DefaultsFile, DefaultsExtraFile, GroupSuffix string
	// Parent is the joiner's server process: the joiner stops when it is
	// gone.
	Parent int
	// Socket is the donor server's socket, which mariabackup connects to.
	Socket string
	// GTID is the donor's position ("uuid:seqno") and DomainID its
	// wsrep_gtid_domain_id; Bypass says the joiner gets the rest by IST.
	GTID, DomainID string
	Bypass         bool
	// Binlog is the server's --log-bin base name and BinlogIndex its
	// index, when it writes a binary log.
	Binlog, BinlogIndex string
	// MysqldArgs is the server's own command line, after --mysqld-args.
	MysqldArgs []string
}

// ParseArgs reads the arguments the server runs its SST script with:
// "--name value" pairs (also "--name=value"), --bypass alone, and
// everything after --mysqld-args, which is the server's own command line.
// Options this method has no use for (--progress, --local-port, --host,
// ...) are skipped with their values, so that a newer server's additions
// do not break it.
func ParseArgs(args []string) (Request, error) {
	var r Request
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(a, "=")
		if !strings.HasPrefix(name, "--") {
			return r, fmt.Errorf("unexpected argument %q: the server passes --name value pairs", a)
		}
		switch name {
		case "--mysqld-args":
			r.MysqldArgs = append([]string(nil), args[i+1:]...)
			i = len(args)
			continue
		case "--bypass":
			r.Bypass = true
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return r, fmt.Errorf("%s without a value", name)
			}
			i++
			value = args[i]
		}
		switch name {
		case "--role":
			r.Role = Role(value)
		case "--address":
			r.Address = strings.TrimSpace(value)
		case "--datadir":
			r.Datadir = strings.TrimRight(value, "/")
			if r.Datadir == "" && value != "" {
				r.Datadir = "/"
			}
		case "--defaults-file":
			r.DefaultsFile = value
		case "--defaults-extra-file":
			r.DefaultsExtraFile = value
		case "--defaults-group-suffix":
			r.GroupSuffix = value
		case "--parent":
			p, err := strconv.Atoi(value)
			if err != nil || p <= 0 {
				return r, fmt.Errorf("--parent %q is not a process id", value)
			}
			r.Parent = p
		case "--socket":
			r.Socket = value
		case "--gtid":
			r.GTID = value
		case "--gtid-domain-id":
			r.DomainID = value
		case "--binlog", "--log-bin":
			r.Binlog = value
		case "--binlog-index", "--log-bin-index":
			r.BinlogIndex = value
		}
	}
	switch {
	case r.Role != Joiner && r.Role != Donor:
		return r, fmt.Errorf("--role %q: the server runs the script as joiner or donor", r.Role)
	case r.Address == "":
		return r, errors.New("no --address: the server names where the joiner listens")
	case r.Datadir == "":
		return r, errors.New("no --datadir: the server names its datadir")
	case r.Role == Donor && r.GTID == "":
		return r, errors.New("no --gtid: the donor's server names its position")
	}
	if r.Role == Donor {
		if _, err := archive.ParseGaleraPosition(r.GTID); err != nil {
			return r, fmt.Errorf("--gtid %q: %w", r.GTID, err)
		}
	}
	return r, nil
}

// listenAddr is where a joiner listens: its address with the default
// port if it names none.
func listenAddr(address string) (string, error) {
	host, rest := address, ""
	if strings.HasPrefix(host, "[") {
		end := strings.Index(host, "]")
		if end < 0 {
			return "", fmt.Errorf("address %q: unclosed [", address)
		}
		host, rest = host[1:end], host[end+1:]
	} else if i := strings.IndexAny(host, ":/"); i >= 0 {
		host, rest = host[:i], host[i:]
	}
	port := strconv.Itoa(DefaultPort)
	if p, ok := strings.CutPrefix(rest, ":"); ok {
		p, _, _ = strings.Cut(p, "/")
		if n, err := strconv.Atoi(p); err != nil || n <= 0 || n > 65535 {
			return "", fmt.Errorf("address %q: bad port %q", address, p)
		}
		port = p
	}
	if host == "" {
		return "", fmt.Errorf("address %q names no host", address)
	}
	return net.JoinHostPort(host, port), nil
}

// readyAddress is what the joiner announces, and what the server hands
// the donor as its --address: host:port/backstream/<version>. (The server
// lets only letters, digits and -_.:/[] through.)
func readyAddress(listen string) string {
	return listen + "/" + Method + "/" + protocolVersion
}

// dialAddr reads the address a donor is given: the joiner's host:port, if
// the joiner speaks this method's protocol.
func dialAddr(address string) (string, error) {
	hostPort, path, _ := strings.Cut(address, "/")
	method, version, _ := strings.Cut(path, "/")
	if method != Method {
		return "", fmt.Errorf("the joiner's address %q is not a backstream joiner's (wsrep_sst_method differs between the nodes?)", address)
	}
	if version != protocolVersion {
		return "", fmt.Errorf("the joiner speaks version %q of backstream's transfer, this donor %s: run the same backstream on both", version, protocolVersion)
	}
	if _, _, err := net.SplitHostPort(hostPort); err != nil {
		return "", fmt.Errorf("the joiner's address %q: %w", address, err)
	}
	return hostPort, nil
}
