package physical

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/backstream/backstream/internal/filelocks"
	"github.com/backstream/backstream/internal/mariadb"
)

// CheckLocal fails unless the server that cfg reaches runs on this host
// and works in datadir: the same directory, by device and inode, whatever
// path each side calls it (a container's server sees its own). mariabackup
// asks the server for its locks and positions but copies the files it
// finds at the server's datadir path on this host. Pointed at a server
// elsewhere whose datadir path exists here too (a replica's host, where
// the same layout holds another server's files), it would store these
// files under the other server's name and binary log position, and
// nothing would fail.
//
// The server's process is found through the connection: the peer of its
// Unix socket, or the process listening on its TCP port (which must be an
// address of this host); its working directory is its datadir (the server
// changes into it at start). A server that changed its user at start is
// not dumpable, and only root may look at its working directory: then the
// locks it holds (/proc/locks, which anyone may read) must include one on
// a file at the top of datadir (InnoDB locks its system tablespace, Aria
// its control file). proc is where the process table is ("/proc").
func CheckLocal(cfg mariadb.Config, datadir, proc string) error {
	pid, how, err := serverProcess(cfg, proc)
	if err != nil {
		return fmt.Errorf("a physical backup reads the server's files on this host, and %w", err)
	}
	var want, got unix.Stat_t
	if err := unix.Stat(datadir, &want); err != nil {
		return fmt.Errorf("a physical backup reads the server's files on this host, but its datadir %s is not here: %w; back up a server on this host, or take a logical backup (--logical) of one elsewhere", datadir, err)
	}
	cwd := filepath.Join(proc, strconv.Itoa(pid), "cwd")
	err = unix.Stat(cwd, &got)
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		locked, lerr := locksIn(proc, pid, datadir)
		if lerr != nil || !locked {
			return fmt.Errorf("cannot tell whether the server (pid %d, %s) works in %s: %w, and it holds no lock on a file there (%v); run backstream as root", pid, how, datadir, err, lerr)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot tell whether the server (pid %d, %s) works in %s: %w; run backstream as root or as the user who runs the server", pid, how, datadir, err)
	}
	if want.Dev != got.Dev || want.Ino != got.Ino {
		return fmt.Errorf("the server backstream reaches (pid %d, %s) does not work in %s, the directory its @@datadir names on this host: that is another server's datadir, and mariabackup would copy its files under this server's name and positions; back up the server on the host that holds its files (or connect to it through its own socket)", pid, how, datadir)
	}
	return nil
}

// locksIn reports whether process pid holds a lock (as /proc/locks lists
// them: device major:minor in hex, and inode) on a regular file at the top
// of dir.
func locksIn(proc string, pid int, dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	held, err := filelocks.Holders(filepath.Join(proc, "locks"))
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		fi, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if f, ok := filelocks.Of(fi); ok && held[f] == strconv.Itoa(pid) {
			return true, nil
		}
	}
	return false, nil
}

// serverProcess returns the pid (in this host's view) of the process that
// serves cfg's connections, and how it was found, for messages.
func serverProcess(cfg mariadb.Config, proc string) (int, string, error) {
	if cfg.UsesSocket() {
		path := cfg.SocketPath()
		pid, err := socketPeer(path)
		if err != nil {
			return 0, "", fmt.Errorf("the server's socket %s cannot say which process serves it: %w", path, err)
		}
		return pid, "serving socket " + path, nil
	}
	host, port := cfg.Host, cfg.Port
	if port == 0 {
		port = mariadb.DefaultPort
	}
	local, err := isLocalHost(host)
	if err != nil {
		return 0, "", err
	}
	if !local {
		return 0, "", fmt.Errorf("the server at %s is not on this host: run the backup on the server's host (over its socket), or take a logical backup (--logical)", cfg.Addr())
	}
	pid, err := tcpListener(proc, port)
	if err != nil {
		return 0, "", fmt.Errorf("no process on this host could be found listening on TCP port %d (%s): %w; connect through the server's socket instead", port, cfg.Addr(), err)
	}
	return pid, fmt.Sprintf("listening on TCP port %d", port), nil
}

// socketPeer connects to the Unix socket at path and returns the pid of
// the process that accepted, from the kernel's credentials of the peer.
// The server sees a connection that closes before it authenticates.
func socketPeer(path string) (int, error) {
	c, err := net.DialTimeout("unix", path, 10*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	raw, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if serr != nil {
		return 0, serr
	}
	if cred.Pid <= 0 {
		return 0, errors.New("the kernel gave no process for the peer (a server in a PID namespace this one cannot see)")
	}
	return int(cred.Pid), nil
}

// isLocalHost reports whether host names this host: a loopback address or
// one of its interfaces' addresses. Every address it resolves to must be.
func isLocalHost(host string) (bool, error) {
	ips, err := net.LookupIP(host)
	if err != nil {
		return false, fmt.Errorf("the server's host %s does not resolve: %w", host, err)
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false, fmt.Errorf("cannot list this host's addresses: %w", err)
	}
	for _, ip := range ips {
		if ip.IsLoopback() {
			continue
		}
		own := false
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				own = true
				break
			}
		}
		if !own {
			return false, nil
		}
	}
	return len(ips) > 0, nil
}

// tcpListener returns the pid of a process that holds a socket listening
// on TCP port in this network namespace, from proc's net/tcp and net/tcp6
// and its processes' file descriptors.
func tcpListener(proc string, port int) (int, error) {
	inodes := map[string]bool{}
	for _, name := range []string{"net/tcp", "net/tcp6"} {
		f, err := os.Open(filepath.Join(proc, name))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // no IPv6
			}
			return 0, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, ok := strings.Cut(fields[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); !ok || err != nil || int(p) != port {
				continue
			}
			inodes["socket:["+fields[9]+"]"] = true
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return 0, err
		}
	}
	if len(inodes) == 0 {
		return 0, errors.New("nothing listens on it in this network namespace")
	}
	procs, err := os.ReadDir(proc)
	if err != nil {
		return 0, err
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fds, err := os.ReadDir(filepath.Join(proc, p.Name(), "fd"))
		if err != nil {
			continue // exited, or not ours to read: another process may hold it
		}
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join(proc, p.Name(), "fd", fd.Name())); err == nil && inodes[l] {
				return pid, nil
			}
		}
	}
	return 0, errors.New("no process whose file descriptors this user may read holds the listening socket (run backstream as root or as the server's user)")
}
