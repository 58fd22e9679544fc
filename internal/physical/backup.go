package physical

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/backstream/backstream/internal/childenv"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/scratch"
)

// waitDelay bounds how long Wait waits for the child's pipes to close after
// the child itself is gone (a grandchild may hold them).
const waitDelay = 10 * time.Second

// BackupOptions configures one mariabackup --backup run.
type BackupOptions struct {
	Binary *Binary
	// Conn is how mariabackup connects; it goes to mariabackup through a
	// 0600 option file, never on its command line.
	Conn mariadb.Config
	// Datadir is the server's datadir (from the server itself), passed as
	// --datadir so that an option file cannot point mariabackup elsewhere.
	Datadir string
	// Parallel is mariabackup's --parallel (copy threads); 0 means 1.
	Parallel int
	// Throttle, if positive, is mariabackup's --throttle: at most this many
	// I/O operations (a read and a write of its copy buffer) per second.
	Throttle int
	// ExtraArgs are appended to mariabackup's arguments as given (e.g.
	// --use-memory=1G). They must not carry credentials: argv is public.
	ExtraArgs []string
	// Log receives every line mariabackup writes to stderr, as it is written.
	Log io.Writer
	// Withhold are secrets mariabackup prints (it logs the encryption
	// plugin's options, the key file's password among them): they are
	// replaced in every line before Log, progress or an error sees it.
	Withhold []string
	// OnProgress, if set, is called for each Event parsed from stderr, from
	// a single goroutine; it must not block for long, or mariabackup stalls
	// on its stderr pipe.
	OnProgress func(Event)
	// AtBlockCommit, if set, runs while mariabackup holds BACKUP STAGE
	// BLOCK_COMMIT (see holder): mariabackup is stopped from the moment it
	// reports the lock until the function returns. Held says whether it
	// ran.
	AtBlockCommit func() error
}

// Backup is a running mariabackup --backup.
type Backup struct {
	// Stdout is the xbstream. Read it to EOF, then call Wait; if you stop
	// reading early, cancel the context given to StartBackup, or mariabackup
	// blocks on the full pipe and Wait does not return.
	Stdout io.Reader

	ctx    context.Context
	cmd    *exec.Cmd
	sink   *stderrSink
	errs   *stderrPump
	hold   *holder // nil without AtBlockCommit
	stdout *os.File
	tmp    string
	lsnDir string

	once sync.Once
	res  *Result
	err  error
}

// Result is what a finished backup reports about itself, read from
// mariabackup's --extra-lsndir.
type Result struct {
	Checkpoints Checkpoints
	Info        map[string]string
	// RawCheckpoints and RawInfo are the files as mariabackup wrote them,
	// kept as metadata copies; CheckpointsName and InfoName are their names
	// (xtrabackup_* before 11.1, mariadb_backup_* after).
	RawCheckpoints  []byte
	RawInfo         []byte
	CheckpointsName string
	InfoName        string
	// DDLBlocked and CommitsBlocked are how long mariabackup kept the
	// server from running DDL and from committing (see lockClock).
	DDLBlocked, CommitsBlocked time.Duration
}

// StartBackup starts
//
//	mariabackup --defaults-extra-file=F --backup --stream=xbstream --parallel=N
//	  --extra-lsndir=D --target-dir=T [--datadir=...] [--throttle=...] [ExtraArgs...]
//
// with the credentials in F, a 0600 file in a private 0700 temporary
// directory that Wait removes. --defaults-extra-file must come first or
// mariabackup ignores it. The child runs in its own process group, so a
// terminal's Ctrl-C reaches only us, and cancelling ctx kills the whole group.
func StartBackup(ctx context.Context, opt BackupOptions) (*Backup, error) {
	if opt.Binary == nil || opt.Binary.Path == "" {
		return nil, errors.New("start backup: no mariabackup binary (use FindBinary)")
	}
	parallel := opt.Parallel
	if parallel < 1 {
		parallel = 1
	}
	tmp, err := scratch.MkdirTemp("mariabackup-")
	if err != nil {
		return nil, fmt.Errorf("start backup: temporary directory: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	// MkdirTemp already uses 0700; this guards against odd umask handling.
	if err := os.Chmod(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("start backup: %s: %w", tmp, err)
	}
	cnf := filepath.Join(tmp, "client.cnf")
	if err := mariadb.WriteDefaultsFile(cnf, opt.Conn); err != nil {
		return nil, fmt.Errorf("start backup: %w", err)
	}
	lsnDir := filepath.Join(tmp, "lsndir")
	target := filepath.Join(tmp, "target")
	for _, d := range []string{lsnDir, target} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, fmt.Errorf("start backup: %w", err)
		}
	}

	args := []string{
		"--defaults-extra-file=" + cnf,
		"--backup",
		"--stream=xbstream",
		"--parallel=" + strconv.Itoa(parallel),
		"--extra-lsndir=" + lsnDir,
		"--target-dir=" + target,
	}
	if opt.Datadir != "" {
		args = append(args, "--datadir="+opt.Datadir)
	}
	if opt.Throttle > 0 {
		args = append(args, "--throttle="+strconv.Itoa(opt.Throttle))
	}
	args = append(args, opt.ExtraArgs...)

	sink := &stderrSink{log: opt.Log, onProgress: opt.OnProgress, withhold: opt.Withhold}
	cmd := newCommand(ctx, opt.Binary.Path, args)
	// A relative path in mariabackup's defaults would land in our private
	// directory rather than wherever backstream was started.
	cmd.Dir = tmp
	// mariabackup reads ~/.my.cnf after --defaults-extra-file, and its
	// [client] user or password would override the credentials we resolved
	// (from that same file among others). An empty private HOME stops it.
	cmd.Env = append(cmd.Env, "HOME="+tmp)
	// Our own stderr pipe, read by our own goroutine, so that a hold can
	// tell when everything mariabackup printed has been read.
	er, ew, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start backup: pipe: %w", err)
	}
	cmd.Stderr = ew

	// Our own pipe rather than StdoutPipe: exec's Wait closes a StdoutPipe,
	// which would lose data still buffered when a caller waits and reads
	// concurrently.
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start backup: pipe: %w", err)
	}
	// A 1 MiB pipe instead of the default 64 KiB: fewer wake-ups and
	// context switches on both sides of the busiest pipe of the backup.
	// Best effort: a kernel that refuses keeps the default.
	_, _ = unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, 1<<20)
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		er.Close()
		ew.Close()
		return nil, fmt.Errorf("start backup: %s: %w", opt.Binary.Path, err)
	}
	w.Close()
	ew.Close()
	ok = true
	b := &Backup{
		Stdout: &pipeReader{f: r},
		ctx:    ctx,
		cmd:    cmd,
		sink:   sink,
		errs:   newStderrPump(er, sink),
		stdout: r,
		tmp:    tmp,
		lsnDir: lsnDir,
	}
	if opt.AtBlockCommit != nil {
		b.hold = &holder{fn: opt.AtBlockCommit, pump: b.errs, pid: cmd.Process.Pid}
		sink.hook = b.hold.line
	}
	go b.errs.run()
	return b, nil
}

// Held says whether the AtBlockCommit function ran while mariabackup
// held BLOCK_COMMIT (false when mariabackup let go of it before it could
// be stopped, or never took it), how long mariabackup was stopped, and
// the error of the function or of the hold. Call it after Wait.
func (b *Backup) Held() (ran bool, held time.Duration, err error) {
	if b.hold == nil {
		return false, 0, nil
	}
	return b.hold.outcome()
}

// Pid is the process id of the mariabackup child.
func (b *Backup) Pid() int { return b.cmd.Process.Pid }

// Wait waits for mariabackup to exit and succeeds only if it exited 0 and
// said "completed OK!"; the error otherwise names the likely cause and
// quotes the last lines of stderr. It then reads checkpoints and info from the
// extra-lsndir and removes the temporary directory. Wait may be called more
// than once; it returns the same outcome.
func (b *Backup) Wait() (*Result, error) {
	b.once.Do(func() { b.res, b.err = b.wait() })
	return b.res, b.err
}

func (b *Backup) wait() (*Result, error) {
	defer os.RemoveAll(b.tmp)
	err := b.cmd.Wait()
	exited := time.Now()
	b.errs.wait(waitDelay)
	b.sink.flush()
	if ctxErr := b.ctx.Err(); ctxErr != nil {
		b.stdout.Close()
		return nil, fmt.Errorf("mariabackup --backup (pid %d) stopped: %w", b.cmd.Process.Pid, ctxErr)
	}
	if err != nil {
		b.stdout.Close()
		if vanished := b.sink.vanishedTables(); len(vanished) > 0 {
			// DDL dropped or converted a table while mariabackup copied
			// its files (11.8 then fails the backup): a race of DDL
			// with the copy, which another attempt can miss.
			return nil, &DDLRaceError{Tables: vanished}
		}
		failed := b.sink.failure("mariabackup --backup failed", err)
		if sig, ok := crashSignal(err); ok {
			return nil, &CrashError{Signal: sig, Failed: failed}
		}
		return nil, failed
	}
	if !b.sink.completedOK() {
		b.stdout.Close()
		return nil, b.sink.failure(`mariabackup --backup exited 0 but never said "completed OK!"`, nil)
	}
	res := &Result{}
	res.DDLBlocked, res.CommitsBlocked = b.sink.blocked(exited)
	res.RawCheckpoints, res.CheckpointsName, err = readFirst(b.lsnDir, metadataCandidates("checkpoints"))
	if err != nil {
		return nil, fmt.Errorf("mariabackup --backup: %w", err)
	}
	if res.Checkpoints, err = ParseCheckpoints(res.RawCheckpoints); err != nil {
		return nil, fmt.Errorf("mariabackup --backup: %s: %w", res.CheckpointsName, err)
	}
	res.RawInfo, res.InfoName, err = readFirst(b.lsnDir, metadataCandidates("info"))
	if err != nil {
		return nil, fmt.Errorf("mariabackup --backup: %w", err)
	}
	if res.Info, err = ParseInfo(res.RawInfo); err != nil {
		return nil, fmt.Errorf("mariabackup --backup: %s: %w", res.InfoName, err)
	}
	return res, nil
}

// readFirst reads the first of names that exists in dir.
func readFirst(dir string, names []string) ([]byte, string, error) {
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err == nil {
			return b, n, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, "", fmt.Errorf("extra-lsndir: %w", err)
		}
	}
	return nil, "", fmt.Errorf("extra-lsndir %s has none of %v", dir, names)
}

// stdoutEnded reports whether the stream was read to the end of the pipe:
// mariabackup closed its stdout, as it does when it exits.
func (b *Backup) stdoutEnded() bool {
	p, ok := b.Stdout.(*pipeReader)
	return ok && p.eof
}

// pipeReader closes the pipe at EOF so that a caller who reads to the end
// leaves no descriptor behind, and keeps returning io.EOF afterwards.
type pipeReader struct {
	f   *os.File
	eof bool
}

// Read reads the child's stdout.
func (p *pipeReader) Read(b []byte) (int, error) {
	if p.eof {
		return 0, io.EOF
	}
	n, err := p.f.Read(b)
	if err == io.EOF {
		p.eof = true
		p.f.Close()
	}
	return n, err
}

// newCommand prepares a mariabackup child in its own process group, killed
// as a group when ctx is done. Pdeathsig kills it should backstream itself
// die without cleaning up, so no orphan keeps the server's backup locks.
func newCommand(ctx context.Context, path string, args []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, path, args...)
	// mariabackup has no use for the object store's credentials or the
	// encryption passphrase; it gets the server's from its option file.
	cmd.Env = childenv.Env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error {
		// The negative pid addresses the group: mariabackup may have
		// children of its own.
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
	cmd.WaitDelay = waitDelay
	return cmd
}

func (s *stderrSink) completedOK() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.completed
}

// syncFreeLibraries are where libeatmydata is installed (Debian's
// eatmydata package, and other systems' usual places): preloaded, it makes
// a process's fsync, fdatasync, sync and O_SYNC opens do nothing.
var syncFreeLibraries = []string{"/usr/lib/*-linux-gnu/libeatmydata.so*", "/usr/lib64/libeatmydata.so*", "/usr/lib/libeatmydata.so*", "/usr/local/lib/libeatmydata.so*"}

// SyncFreeLibrary returns the path of libeatmydata, or "" when it is not
// installed. Prepare runs mariabackup with it preloaded: every prepare
// writes into a restore's own directory, which the restore syncs whole
// before it says it is done (or a scratch directory, thrown away after),
// so mariabackup's own syncs only made each link of a chain wait for the
// disk (its delta apply syncs every tablespace it touches, the base's
// whole writeback included). A crash before the end leaves a restore
// that says it was interrupted, whatever was on disk.
func SyncFreeLibrary() string {
	for _, pattern := range syncFreeLibraries {
		if m, _ := filepath.Glob(pattern); len(m) > 0 {
			return m[0]
		}
	}
	return ""
}

// syncFreeLoads remembers, per mariabackup path, whether it runs with
// libeatmydata preloaded.
var syncFreeLoads sync.Map // path -> bool

// syncFreeFor returns libeatmydata if bin runs with it preloaded, else "".
// The library is the host's, built for the host's C library: a
// mariabackup of another installation (--mariadb-path) may run on an
// older one, whose loader refuses it ("version `GLIBC_2.34' not found")
// and so every run; such a mariabackup prepares with its syncs.
func syncFreeFor(ctx context.Context, bin *Binary) string {
	lib := SyncFreeLibrary()
	if lib == "" {
		return ""
	}
	if ok, known := syncFreeLoads.Load(bin.Path); known {
		if ok.(bool) {
			return lib
		}
		return ""
	}
	cmd := exec.CommandContext(ctx, bin.Path, "--version")
	cmd.Env = preload(childenv.Env(), lib)
	cmd.WaitDelay = waitDelay
	err := cmd.Run()
	if ctx.Err() != nil {
		return "" // not known: the prepare fails on the context anyway
	}
	syncFreeLoads.Store(bin.Path, err == nil)
	if err != nil {
		return ""
	}
	return lib
}

// preload adds lib to LD_PRELOAD in env.
func preload(env []string, lib string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "LD_PRELOAD="); ok && v != "" {
			lib += ":" + v
			continue
		}
		out = append(out, kv)
	}
	return append(out, "LD_PRELOAD="+lib)
}

// PrepareError is mariabackup --prepare failing on a backup's files, as
// opposed to not starting at all: a restore test counts it against the
// backup.
type PrepareError struct{ Err error }

func (e *PrepareError) Error() string { return e.Err.Error() }
func (e *PrepareError) Unwrap() error { return e.Err }

// Prepare runs mariabackup --prepare --target-dir=dir [--use-memory=X],
// which applies the copied redo log so the files form a consistent datadir;
// with incDir it applies that extracted incremental backup to dir instead
// (--incremental-dir), after dropSuperseded. Output goes to log line by line. Success needs exit
// 0 and "completed OK!".
//
// fileKey, if not "", is the password of the encryption plugin's key file,
// which the backup withheld from its backup-my.cnf (see WithholdBackupMyCnf):
// mariabackup gets it through private files (prepareDefaults), never on
// its command line.
func Prepare(ctx context.Context, bin *Binary, dir, incDir, useMemory, fileKey string, log io.Writer) error {
	if bin == nil || bin.Path == "" {
		return errors.New("prepare: no mariabackup binary (use FindBinary)")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("prepare %s: %w", dir, err)
	}
	var args []string
	if fileKey != "" {
		cnf, remove, err := prepareDefaults(abs, fileKey)
		if err != nil {
			return err
		}
		defer remove()
		// mariabackup reads --defaults-file only as its first argument.
		args = append(args, "--defaults-file="+cnf)
	}
	args = append(args, "--prepare", "--target-dir="+abs)
	if incDir != "" {
		inc, err := filepath.Abs(incDir)
		if err != nil {
			return fmt.Errorf("prepare %s: %w", incDir, err)
		}
		if err := dropSuperseded(abs, inc, log); err != nil {
			return fmt.Errorf("prepare %s: %w", incDir, err)
		}
		args = append(args, "--incremental-dir="+inc)
	}
	if useMemory != "" {
		args = append(args, "--use-memory="+useMemory)
	}
	sink := &stderrSink{log: log, withhold: []string{fileKey}}
	cmd := newCommand(ctx, bin.Path, args)
	if lib := syncFreeFor(ctx, bin); lib != "" {
		cmd.Env = preload(cmd.Env, lib)
	}
	cmd.Dir = abs
	cmd.Stdout = sink
	cmd.Stderr = sink
	err = cmd.Run()
	sink.flush()
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("mariabackup --prepare of %s stopped: %w", abs, ctxErr)
	}
	if err != nil {
		return &PrepareError{sink.failure(fmt.Sprintf("mariabackup --prepare of %s failed", abs), err)}
	}
	if !sink.completedOK() {
		return &PrepareError{sink.failure(fmt.Sprintf(`mariabackup --prepare of %s exited 0 but never said "completed OK!"`, abs), nil)}
	}
	return nil
}
