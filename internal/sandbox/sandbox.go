// Package sandbox starts throwaway mariadbd servers: the runtime behind
// verify --restore-test, point-in-time replay and the demo, and what tests
// start their servers with. It knows how to run a server, fill it with
// sample data and checksum its tables; it knows nothing of backups, and
// nothing of tests: helpers that take a testing.TB live in sandboxtest,
// because this package is linked into the binary.
//
// A sandbox server never reads the system's option files (--no-defaults, or
// --defaults-file naming Options.OptionFile, comes first on its argv), listens only on loopback and on its own unix socket, and dies
// with the process that started it, so it can never disturb the system server
// or outlive a killed test binary.
//
// "Dies with" relies on Pdeathsig, which Linux ties to the OS thread that
// forked the server: do not call Start from a goroutine that has locked its
// thread and will exit with it.
package sandbox

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/backstream/backstream/internal/childenv"
)

// Defaults chosen for a 2-core test machine; Options.Args overrides them
// because mariadbd lets the last occurrence of an option win.
const (
	defaultBufferPool = "--innodb-buffer-pool-size=128M"
	defaultMaxPacket  = "--max-allowed-packet=64M"
	// MyISAM's key cache and Aria's page cache (128 MiB each by default)
	// are cleared when the server starts: a suite starts hundreds of
	// servers whose tables are InnoDB but for a few system tables, and
	// clearing the two took a third of the CPU of a start and shutdown.
	defaultKeyBuffer     = "--key-buffer-size=8M"
	defaultAriaPagecache = "--aria-pagecache-buffer-size=8M"
	// Compiled-in default is latin1; distributions ship utf8mb4 in their
	// my.cnf, which --no-defaults skips, so set it like a real server.
	defaultCharset      = "--character-set-server=utf8mb4"
	defaultCollation    = "--collation-server=utf8mb4_general_ci"
	startTimeout        = 60 * time.Second
	stopTimeout         = 2 * time.Minute
	bindAttempts        = 4
	maxSocketPath       = 100 // sun_path is 108 bytes including the NUL; keep a margin
	errorLogTailLines   = 30
	readyPollInterval   = 50 * time.Millisecond
	logFollowerInterval = 100 * time.Millisecond
)

// Options describes a sandbox server. The zero value starts a fresh server in
// a new temporary directory with binary logging enabled.
type Options struct {
	// Dir is the working directory (error log, pid file, socket if short
	// enough). Empty: a new temporary directory, removed by Close.
	Dir string
	// Datadir is an existing datadir to start on, e.g. a restored backup.
	// Empty: <Dir>/data, initialised with mariadb-install-db unless it
	// already holds a datadir.
	Datadir string
	// Args are extra mariadbd options, e.g. "--innodb-buffer-pool-size=256M".
	// They come last on the command line and so override the defaults.
	// InnoDB format options (page size, log file size, ...) are also passed
	// to mariadb-install-db, because they must match from the first start.
	Args []string
	// OptionFile is an option file the server reads instead of none
	// (--defaults-file): options that must stay off argv, such as a key
	// file's password, go there. The sandbox's defaults and Args come
	// after it on the command line and so override it; mariadb-install-db
	// reads it only with InstallDatadir.
	OptionFile string
	// InstallDatadir lets Start create the system tables in Datadir when
	// it holds no datadir yet: a point-in-time restore from a logical
	// backup builds its server there. mariadb-install-db runs for it,
	// reading OptionFile (the user's format and encryption options must
	// hold from the first start), never from the template cache, whose
	// datadirs know only the sandbox's options.
	InstallDatadir bool
	// BufferPool sizes the InnoDB buffer pool, e.g. "2G"; empty means 128M.
	BufferPool string
	// NoBinlog turns off the default log-bin (files mariadb-bin.* in the
	// datadir), server-id (the port) and binlog-format=ROW, which exist so
	// that backups have binlog positions and GTIDs.
	NoBinlog bool
	// Basedir is another MariaDB installation than the host's, laid out
	// as a basedir: the server in sbin/mariadbd, mariadb-install-db and
	// the tools in bin, its messages and plugins under share and lib
	// (scripts/versions.sh installs others so). The server and
	// mariadb-install-db are found there and get --basedir, so that they
	// read its messages and plugins, not the host's. Empty: the host's.
	Basedir string
	// Mariadbd is the server binary. Empty: Basedir's, else found in PATH
	// or /usr/sbin.
	Mariadbd string
	// InstallDB is the mariadb-install-db script. Empty: Basedir's, else
	// found in PATH or /usr/bin, or beside Mariadbd.
	InstallDB string
	// NoTemplate runs mariadb-install-db for this server instead of copying
	// a datadir installed once into the user's cache directory
	// (backstream-sandbox/<key>, keyed by the binaries and format options).
	NoTemplate bool
	// Stderr, if set, receives a copy of the server's error log as it grows.
	Stderr io.Writer
	// User and Password are what Open connects with. Empty User: root, which
	// mariadb-install-db creates without a password. A restored datadir may
	// need the source's credentials.
	User     string
	Password string
	// Galera, if set, makes the server a node of a Galera cluster.
	Galera *Galera
	// Env are extra variables ("NAME=value") of the server's environment,
	// which the programs it starts inherit: a Galera node runs its state
	// transfer script from its PATH.
	Env []string
	// StartTimeout bounds the start; zero: one minute. A Galera node that
	// joins is ready only once its state transfer is done.
	StartTimeout time.Duration
}

// Server is a running (or stopped) sandbox mariadbd.
type Server struct {
	Dir      string // working directory
	Datadir  string // the server's datadir
	Socket   string // unix socket path
	Port     int    // TCP port on 127.0.0.1
	ErrorLog string // path of the error log
	PidFile  string // path of the pid file
	// GaleraPorts are a Galera node's ports (see Options.Galera).
	GaleraPorts GaleraPorts

	opt        Options
	removeDir  bool   // Start created Dir, so Close removes it
	socketDir  string // separate short directory holding Socket, removed by Close
	cmd        *exec.Cmd
	exited     chan struct{} // closed when the process has been reaped
	waitErr    error         // cmd.Wait result, valid once exited is closed
	followStop chan struct{}
	followDone chan struct{}

	mu       sync.Mutex
	db       *sql.DB
	stopped  bool
	stopErr  error
	closed   bool
	closeErr error
}

// Start initialises a datadir if needed, starts mariadbd on it and waits until
// it accepts connections over its socket. The server keeps running after ctx
// ends; ctx bounds only the start. On failure no process is left behind and
// the error carries the tail of the error log.
func Start(ctx context.Context, opt Options) (_ *Server, err error) {
	if opt.Basedir != "" {
		if opt.Mariadbd == "" {
			opt.Mariadbd = filepath.Join(opt.Basedir, "sbin", "mariadbd")
		}
		if opt.InstallDB == "" {
			opt.InstallDB = filepath.Join(opt.Basedir, "bin", "mariadb-install-db")
		}
	}
	mariadbd, err := findBinary(opt.Mariadbd, "mariadbd", "/usr/sbin")
	if err != nil {
		return nil, err
	}
	s := &Server{opt: opt, Dir: opt.Dir}
	if s.Dir == "" {
		s.Dir, err = os.MkdirTemp("", "sandbox-")
		if err != nil {
			return nil, fmt.Errorf("sandbox: create working dir: %w", err)
		}
		s.removeDir = true
	} else if err := os.MkdirAll(s.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("sandbox: create working dir %s: %w", s.Dir, err)
	}
	if s.Dir, err = filepath.Abs(s.Dir); err != nil {
		return nil, fmt.Errorf("sandbox: working dir %s: %w", opt.Dir, err)
	}
	defer func() {
		if err != nil {
			// Nothing runs at this point; drop what Start created.
			_ = s.cleanupDirs()
		}
	}()

	s.Datadir = opt.Datadir
	if s.Datadir == "" {
		s.Datadir = filepath.Join(s.Dir, "data")
	}
	if s.Datadir, err = filepath.Abs(s.Datadir); err != nil {
		return nil, fmt.Errorf("sandbox: datadir %s: %w", opt.Datadir, err)
	}
	s.ErrorLog = filepath.Join(s.Dir, "error.log")
	s.PidFile = filepath.Join(s.Dir, "mariadbd.pid")
	if err := s.chooseSocket(); err != nil {
		return nil, err
	}

	initialised, err := isDatadir(s.Datadir)
	if err != nil {
		return nil, err
	}
	switch {
	case !initialised && opt.joining():
		if err := s.prepareJoinerDatadir(); err != nil {
			return nil, err
		}
	case !initialised:
		if opt.Datadir != "" && !opt.InstallDatadir {
			return nil, fmt.Errorf("sandbox: datadir %s: not a MariaDB datadir (no mysql/ and no ibdata1)", s.Datadir)
		}
		if err := s.installDB(ctx, mariadbd); err != nil {
			return nil, err
		}
	}

	timeout := startTimeout
	if opt.StartTimeout > 0 {
		timeout = opt.StartTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		port, err := pickPort()
		if err != nil {
			return nil, err
		}
		if opt.Galera != nil {
			// Those the options name stay; the others are picked
			// anew, as the server's port is.
			s.GaleraPorts = opt.Galera.Ports
			if err := s.GaleraPorts.choosePorts(); err != nil {
				return nil, err
			}
		}
		err = s.launch(ctx, mariadbd, port)
		if err == nil {
			return s, nil
		}
		var be *bindError
		if !errors.As(err, &be) || attempt >= bindAttempts {
			return nil, err
		}
		// Another process took the port between our probe and the
		// server's bind; a fresh port almost always works.
	}
}

// bindError marks a start that failed only because the TCP port was taken.
type bindError struct{ err error }

func (e *bindError) Error() string { return e.err.Error() }
func (e *bindError) Unwrap() error { return e.err }

// pickPort is a variable so that tests can force a port collision.
var pickPort = freePort

// freePort asks the kernel for an unused loopback port. The port is free only
// at the moment of the probe, hence the retry in Start.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("sandbox: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// chooseSocket keeps the socket path under the unix limit: in Dir when short
// enough, else in a new short directory under /tmp.
func (s *Server) chooseSocket() error {
	s.Socket = filepath.Join(s.Dir, "mysqld.sock")
	if len(s.Socket) <= maxSocketPath {
		return nil
	}
	dir, err := os.MkdirTemp("/tmp", "sbx")
	if err != nil {
		return fmt.Errorf("sandbox: create socket dir: %w", err)
	}
	s.socketDir = dir
	s.Socket = filepath.Join(dir, "s")
	return nil
}

// isDatadir reports whether dir already holds an initialised datadir.
func isDatadir(dir string) (bool, error) {
	for _, name := range []string{"mysql", "ibdata1"} {
		_, err := os.Stat(filepath.Join(dir, name))
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return false, fmt.Errorf("sandbox: datadir %s: %w", dir, err)
		}
	}
	return false, nil
}

// installFormatOptions are mariadbd options fixed when a datadir is created;
// they must reach mariadb-install-db as well as every later start.
var installFormatOptions = []string{
	"innodb-page-size", "innodb-log-file-size", "innodb-data-file-path",
	"innodb-undo-tablespaces", "innodb-checksum-algorithm",
	"innodb-default-row-format", "lower-case-table-names",
	"character-set-server", "collation-server",
}

func isFormatOption(arg string) bool {
	name, _, _ := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
	name = strings.ReplaceAll(name, "_", "-")
	name = strings.TrimPrefix(name, "loose-")
	for _, o := range installFormatOptions {
		if name == o {
			return true
		}
	}
	return false
}

// installDB creates the system tables with root@localhost allowed in over the
// socket without a password (authentication "normal": the default "socket"
// method needs the unix_socket plugin, which go-sql-driver cannot speak).
func (s *Server) installDB(ctx context.Context, mariadbd string) error {
	script, err := findBinary(s.opt.InstallDB, "mariadb-install-db", "/usr/bin", filepath.Dir(mariadbd))
	if err != nil {
		return err
	}
	var format []string
	for _, a := range s.opt.Args {
		if isFormatOption(a) {
			format = append(format, a)
		}
	}
	defaults := "--no-defaults"
	if s.opt.InstallDatadir && s.opt.OptionFile != "" {
		defaults = "--defaults-file=" + s.opt.OptionFile
	}
	install := func(datadir, tmpdir string) error {
		return runInstallDB(ctx, script, mariadbd, s.opt.Basedir, datadir, tmpdir, defaults, format)
	}
	if s.opt.NoTemplate || s.opt.InstallDatadir {
		if err := os.MkdirAll(s.tmpdir(), 0o750); err != nil {
			return fmt.Errorf("sandbox: create tmpdir: %w", err)
		}
		return install(s.Datadir, s.tmpdir())
	}
	key, err := templateKey(mariadbd, script, format)
	if err != nil {
		return err
	}
	tpl, err := ensureTemplate(key, install)
	if err != nil {
		return err
	}
	// Copy beside the datadir and rename, so a failed copy never leaves
	// something that looks like a datadir.
	staging := s.Datadir + ".copy"
	if err := os.RemoveAll(staging); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if err := copyDatadir(tpl, staging); err != nil {
		_ = os.RemoveAll(staging)
		return err
	}
	if err := os.Rename(staging, s.Datadir); err != nil {
		_ = os.RemoveAll(staging)
		return fmt.Errorf("sandbox: datadir %s: %w", s.Datadir, err)
	}
	return nil
}

// runInstallDB creates a datadir with mariadb-install-db, which reads the
// option file defaults names ("--defaults-file=...") or none
// ("--no-defaults"), from basedir when it is not empty.
func runInstallDB(ctx context.Context, script, mariadbd, basedir, datadir, tmpdir, defaults string, format []string) error {
	if err := os.MkdirAll(datadir, 0o750); err != nil {
		return fmt.Errorf("sandbox: create datadir %s: %w", datadir, err)
	}
	args := []string{
		defaults,
		"--datadir=" + datadir,
		"--tmpdir=" + tmpdir,
		"--auth-root-authentication-method=normal",
		"--skip-test-db",
		"--skip-name-resolve",
	}
	if basedir != "" {
		args = append(args, "--basedir="+basedir)
	}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	args = append(args, format...)
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, args...)
	cmd.Dir = tmpdir
	// mariadb-install-db runs mariadbd --bootstrap from the script's
	// basedir; tell it which server to use when ours is not the default.
	cmd.Env = childenv.Env("MYSQLD_BOOTSTRAP=" + mariadbd)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	if err != nil {
		// The server's own messages come first; the script's advice after
		// them is the same every time.
		return fmt.Errorf("sandbox: %s --datadir=%s: %w\n%s", script, datadir, err, head(out, errorLogTailLines))
	}
	return nil
}

// tmpdir is the server's own temporary directory. Sharing /tmp between
// servers is not safe: two concurrent mariadb-install-db runs with the same
// tmpdir crash now and then (signal 11 in ha_maria::drop_table while creating
// the sys schema views, seen on 10.11.19).
func (s *Server) tmpdir() string { return filepath.Join(s.Dir, "tmp") }

// serverArgs builds mariadbd's argv (without the program name).
func (s *Server) serverArgs(port int) []string {
	// Must be first: never read /etc/mysql.
	defaults := "--no-defaults"
	if s.opt.OptionFile != "" {
		defaults = "--defaults-file=" + s.opt.OptionFile
	}
	args := []string{
		defaults,
		"--datadir=" + s.Datadir,
		"--socket=" + s.Socket,
		"--port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1",
		"--pid-file=" + s.PidFile,
		"--log-error=" + s.ErrorLog,
		"--tmpdir=" + s.tmpdir(),
		"--skip-name-resolve",
		"--skip-networking=0",
		defaultBufferPool,
		defaultMaxPacket,
		defaultKeyBuffer,
		defaultAriaPagecache,
		defaultCharset,
		defaultCollation,
	}
	if s.opt.Basedir != "" {
		args = append(args, "--basedir="+s.opt.Basedir)
	}
	if s.opt.BufferPool != "" {
		args = append(args, "--innodb-buffer-pool-size="+s.opt.BufferPool)
	}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	if !s.opt.NoBinlog {
		// The port is unique among running sandboxes, so two of them can
		// replicate from each other without ignoring each other's events.
		args = append(args, "--log-bin=mariadb-bin", "--server-id="+strconv.Itoa(port), "--binlog-format=ROW")
	}
	if s.opt.Galera != nil {
		args = append(args, s.galeraArgs()...)
	}
	return append(args, s.opt.Args...)
}

// launch starts one mariadbd and waits until it answers a ping.
func (s *Server) launch(ctx context.Context, mariadbd string, port int) error {
	logOffset := fileSize(s.ErrorLog)
	logFile, err := os.OpenFile(s.ErrorLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("sandbox: open error log: %w", err)
	}
	if err := os.MkdirAll(s.tmpdir(), 0o750); err != nil {
		return fmt.Errorf("sandbox: create tmpdir: %w", err)
	}
	// A stale socket from a killed run would make the server refuse to start.
	_ = os.Remove(s.Socket)

	cmd := exec.Command(mariadbd, s.serverArgs(port)...)
	cmd.Dir = s.Dir
	// A point-in-time restore starts a server from a process that holds
	// the repository's credentials and keys; the server needs none of them.
	cmd.Env = childenv.Env(s.opt.Env...)
	// Whatever mariadbd writes before it opens --log-error lands in the same file.
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("sandbox: start %s: %w", mariadbd, err)
	}
	logFile.Close()

	s.cmd = cmd
	s.Port = port
	s.exited = make(chan struct{})
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	if s.opt.Stderr != nil {
		s.followStop = make(chan struct{})
		s.followDone = make(chan struct{})
		go followLog(s.ErrorLog, logOffset, s.opt.Stderr, s.followStop, s.followDone)
	}

	err = s.waitReady(ctx)
	if err == nil {
		return nil
	}
	s.kill()
	logTail := s.logTailSince(logOffset)
	err = fmt.Errorf("sandbox: mariadbd on %s (port %d): %w\nerror log %s:\n%s", s.Datadir, port, err, s.ErrorLog, logTail)
	// The last: a Galera node's own listener (group communication, the
	// IST receiver) found its port taken; a joiner then fails its join.
	if strings.Contains(logTail, "Bind on TCP/IP port") || strings.Contains(logTail, "another mysqld server running on port") ||
		strings.Contains(logTail, "Failed to listen: bind: Address already in use") {
		return &bindError{err}
	}
	return err
}

// waitReady polls the socket until the server answers, the process exits, or
// ctx ends.
func (s *Server) waitReady(ctx context.Context) error {
	db, err := s.Open("")
	if err != nil {
		return err
	}
	defer db.Close()
	ticker := time.NewTicker(readyPollInterval)
	defer ticker.Stop()
	for {
		// Dial first: it fails quietly while the socket does not exist,
		// whereas the driver may log failed handshakes.
		if c, derr := net.Dial("unix", s.Socket); derr == nil {
			c.Close()
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := db.PingContext(pctx)
			cancel()
			if err == nil {
				return nil
			}
			var me *mysql.MySQLError
			if errors.As(err, &me) {
				// The server is up but refuses us (e.g. a restored datadir
				// with other credentials): waiting will not help.
				return fmt.Errorf("connect as %q: %w", s.user(), err)
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("exited during start: %v", s.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w", ctx.Err())
		case <-ticker.C:
		}
	}
}

// kill ends the process group at once and reaps it.
func (s *Server) kill() {
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.exited
	s.stopFollower()
}

func (s *Server) stopFollower() {
	if s.followStop == nil {
		return
	}
	close(s.followStop)
	<-s.followDone
	s.followStop, s.followDone = nil, nil
}

func (s *Server) user() string {
	if s.opt.User == "" {
		return "root"
	}
	return s.opt.User
}

// Config returns the driver configuration Open uses, for callers that need
// to adjust it (e.g. timeouts) before connecting.
func (s *Server) Config(database string) *mysql.Config {
	cfg := mysql.NewConfig()
	cfg.User = s.user()
	cfg.Passwd = s.opt.Password
	cfg.Net = "unix"
	cfg.Addr = s.Socket
	cfg.DBName = database
	cfg.MultiStatements = true
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	return cfg
}

// Open returns a new pool connected over the socket as Options.User (root by
// default), with
// multiStatements and parseTime. The caller closes it.
func (s *Server) Open(database string) (*sql.DB, error) {
	conn, err := mysql.NewConnector(s.Config(database))
	if err != nil {
		return nil, fmt.Errorf("sandbox: connector for %s: %w", s.Socket, err)
	}
	return sql.OpenDB(conn), nil
}

// DB returns a pool for the default database shared by all callers, opened on
// first use and closed by Stop; after Stop its methods fail with
// sql.ErrConnDone-like "database is closed" errors.
func (s *Server) DB() *sql.DB {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		// NewConnector fails only on an invalid config, which Config never
		// builds, so there is no error to return here.
		conn, _ := mysql.NewConnector(s.Config(""))
		s.db = sql.OpenDB(conn)
		if s.stopped {
			s.db.Close()
		}
	}
	return s.db
}

// Version returns the server's VERSION(), e.g.
// "10.11.19-MariaDB-0+deb12u1-log" (the suffix -log means binary logging).
func (s *Server) Version(ctx context.Context) (string, error) {
	var v string
	if err := s.DB().QueryRowContext(ctx, "SELECT VERSION()").Scan(&v); err != nil {
		return "", fmt.Errorf("sandbox: version of server on %s: %w", s.Socket, err)
	}
	return v, nil
}

// Pid returns the server's process id, or 0 if it was never started.
func (s *Server) Pid() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Stop shuts the server down cleanly (SIGTERM, which mariadbd handles like
// SHUTDOWN: InnoDB flushes and the datadir is consistent) and waits for it.
// If it is not gone by ctx's deadline (at most two minutes) it is killed and
// Stop reports that. Later calls return the first call's result.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return s.stopErr
	}
	s.stopped = true
	s.stopErr = s.stop(ctx)
	return s.stopErr
}

func (s *Server) stop(ctx context.Context) error {
	var errs []error
	if s.db != nil {
		// Closed but kept: later DB() callers get "database is closed"
		// errors instead of a nil pointer.
		if err := s.db.Close(); err != nil {
			errs = append(errs, fmt.Errorf("sandbox: close pool: %w", err))
		}
	}
	if s.cmd == nil {
		return errors.Join(errs...)
	}
	defer s.stopFollower()
	select {
	case <-s.exited:
		errs = append(errs, fmt.Errorf("sandbox: mariadbd on %s had already exited: %v\n%s", s.Datadir, s.waitErr, s.logTailSince(0)))
		return errors.Join(errs...)
	default:
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		errs = append(errs, fmt.Errorf("sandbox: signal mariadbd on %s: %w", s.Datadir, err))
	}
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-s.exited:
		if s.waitErr != nil {
			errs = append(errs, fmt.Errorf("sandbox: mariadbd on %s: shutdown: %w\n%s", s.Datadir, s.waitErr, s.logTailSince(0)))
		}
	case <-timer.C:
		s.kill()
		errs = append(errs, fmt.Errorf("sandbox: mariadbd on %s: no clean shutdown within %v, killed; the datadir needs crash recovery", s.Datadir, stopTimeout))
	case <-ctx.Done():
		s.kill()
		errs = append(errs, fmt.Errorf("sandbox: mariadbd on %s: shutdown interrupted, killed; the datadir needs crash recovery: %w", s.Datadir, ctx.Err()))
	}
	return errors.Join(errs...)
}

// Kill ends the server as a crash would: SIGKILL to its process group,
// nothing flushed, so the next start runs crash recovery. Start with
// Options{Dir: s.Dir} starts a new server on the same datadir; Close of
// this one still removes Dir if Start created it, so close the new server
// first. Later Stop calls return nil: the server is gone on purpose.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.stopped = true
	if s.db != nil {
		s.db.Close()
	}
	s.kill()
}

// Close stops the server and removes Dir if Start created it. A Datadir given
// in Options is never removed.
func (s *Server) Close() error {
	err := s.Stop(context.Background())
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.closeErr
	}
	s.closed = true
	s.closeErr = errors.Join(err, s.cleanupDirs())
	return s.closeErr
}

func (s *Server) cleanupDirs() error {
	var errs []error
	if s.socketDir != "" {
		if err := os.RemoveAll(s.socketDir); err != nil {
			errs = append(errs, fmt.Errorf("sandbox: remove socket dir: %w", err))
		}
	}
	if s.removeDir {
		if err := os.RemoveAll(s.Dir); err != nil {
			errs = append(errs, fmt.Errorf("sandbox: remove working dir: %w", err))
		}
	}
	return errors.Join(errs...)
}

// ErrorLogTail returns the last n lines of the error log.
func (s *Server) ErrorLogTail(n int) string {
	b, err := os.ReadFile(s.ErrorLog)
	if err != nil {
		return fmt.Sprintf("(cannot read error log: %v)", err)
	}
	return tail(b, n)
}

func (s *Server) logTailSince(offset int64) string {
	b, err := os.ReadFile(s.ErrorLog)
	if err != nil {
		return fmt.Sprintf("(cannot read error log: %v)", err)
	}
	if offset > 0 && offset <= int64(len(b)) {
		b = b[offset:]
	}
	b = bytes.TrimRight(b, "\n")
	last := tail(b, errorLogTailLines)
	// The lines that say why a start failed often come long before the
	// tail (a Galera node's shutdown alone fills it): errors and
	// warnings since the start that the tail does not show come first,
	// with the lines the server did not write itself (they start with
	// neither its timestamp nor a continuation's indent): its children's,
	// such as a Galera SST script's last words.
	var earlier []string
	for _, line := range strings.Split(string(b[:len(b)-len(last)]), "\n") {
		foreign := line != "" && !strings.ContainsRune("0123456789 \t", rune(line[0]))
		if foreign || strings.Contains(line, "[ERROR]") || strings.Contains(line, "[Warning]") || strings.Contains(line, "Assertion") {
			earlier = append(earlier, line)
		}
	}
	if n := len(earlier); n > errorLogTailLines {
		earlier = earlier[n-errorLogTailLines:]
	}
	if len(earlier) == 0 {
		return last
	}
	return "errors and warnings before the last lines:\n" + strings.Join(earlier, "\n") + "\nlast lines:\n" + last
}

// findBinary resolves an explicit path, else name in PATH, else in dirs.
func findBinary(explicit, name string, dirs ...string) (string, error) {
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return "", fmt.Errorf("sandbox: %s: %w (%w)", name, err, ErrNotInstalled)
		}
		return explicit, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("sandbox: %s not found in PATH or %s: %w", name, strings.Join(dirs, ", "), ErrNotInstalled)
}

// ErrNotInstalled is what Start fails with when this host lacks the
// server's programs (the package mariadb-server-core installs them).
var ErrNotInstalled = errors.New("the MariaDB server is not installed on this host")

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// tail returns the last n lines of b, without a trailing newline.
func tail(b []byte, n int) string {
	b = bytes.TrimRight(b, "\n")
	if n <= 0 {
		return ""
	}
	i := len(b)
	for ; n > 0; n-- {
		j := bytes.LastIndexByte(b[:i], '\n')
		if j < 0 {
			return string(b)
		}
		i = j
	}
	return string(b[i+1:])
}

// head returns the first n lines of b.
func head(b []byte, n int) string {
	lines := bytes.SplitAfterN(b, []byte("\n"), n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.TrimRight(string(bytes.Join(lines, nil)), "\n")
}

// followLog copies what is appended to path from offset on to w until stop is
// closed, then copies the rest and closes done.
func followLog(path string, offset int64, w io.Writer, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	ticker := time.NewTicker(logFollowerInterval)
	defer ticker.Stop()
	copyNew := func() {
		f, err := os.Open(path)
		if err != nil {
			return
		}
		defer f.Close()
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			return
		}
		n, _ := io.Copy(w, f)
		offset += n
	}
	for {
		select {
		case <-stop:
			copyNew()
			return
		case <-ticker.C:
			copyNew()
		}
	}
}
