package physical

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// blockCommitHeld is what mariabackup (10.6 and later) prints once it
// holds BACKUP STAGE BLOCK_COMMIT: from then on no DDL runs, nothing
// commits and no non-transactional table is written until it prints one
// of blockCommitLeft.
const blockCommitHeld = "Acquired locks for BACKUP STAGE BLOCK_COMMIT"

// blockCommitLeft are the lines mariabackup prints as it lets go of
// BLOCK_COMMIT.
var blockCommitLeft = []string{"Finishing BACKUP STAGE BLOCK_COMMIT", "BACKUP STAGE END", "All tables unlocked"}

// holdTimeout bounds the waits of a hold: for mariabackup to stop, and
// for what it printed before it stopped to be read.
const holdTimeout = 10 * time.Second

// stderrPump copies a child's stderr pipe into its sink and counts what
// it read and what the sink has handled, so that a hold can tell when
// everything the child printed before it stopped has been seen.
type stderrPump struct {
	r       *os.File
	sink    *stderrSink
	read    atomic.Int64
	handled atomic.Int64
	done    chan struct{}
}

func newStderrPump(r *os.File, sink *stderrSink) *stderrPump {
	return &stderrPump{r: r, sink: sink, done: make(chan struct{})}
}

func (p *stderrPump) run() {
	defer close(p.done)
	defer p.r.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := p.r.Read(buf)
		p.read.Add(int64(n))
		if n > 0 {
			p.sink.Write(buf[:n])
		}
		p.handled.Add(int64(n))
		if err != nil {
			return
		}
	}
}

// ended reports whether the pipe reached its end and the sink handled
// everything it held: the child is gone.
func (p *stderrPump) ended() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// drained reports whether the sink has handled every byte the pipe held.
func (p *stderrPump) drained() bool {
	// Through the raw descriptor, not Fd, which would put the pipe in
	// blocking mode and keep Close from ending a Read.
	rc, err := p.r.SyscallConn()
	if err != nil {
		return false
	}
	pending := -1
	if cerr := rc.Control(func(fd uintptr) {
		if n, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ); err == nil {
			pending = n
		}
	}); cerr != nil {
		return false
	}
	return pending == 0 && p.read.Load() == p.handled.Load()
}

// wait waits for the pipe's end, at most d; then it closes the pipe,
// which ends the read of a pipe a grandchild still holds open.
func (p *stderrPump) wait(d time.Duration) {
	select {
	case <-p.done:
	case <-time.After(d):
		p.r.Close()
		<-p.done
	}
}

// errMissedBlockCommit is a hold that came too late: mariabackup had let
// go of BLOCK_COMMIT before it stopped.
var errMissedBlockCommit = errors.New("mariabackup let go of BACKUP STAGE BLOCK_COMMIT before backstream could stop it")

// holder runs a function while mariabackup holds BLOCK_COMMIT: when the
// sink sees blockCommitHeld it stops mariabackup (SIGSTOP), waits until
// every thread stopped and everything printed before is read, checks
// that mariabackup did not let go of the lock meanwhile, runs the
// function and lets mariabackup go on (SIGCONT).
type holder struct {
	fn   func() error
	pump *stderrPump
	pid  int

	mu     sync.Mutex
	left   bool // mariabackup printed a line of blockCommitLeft since the hold began
	active bool
	ran    bool
	err    error
	wg     sync.WaitGroup
	held   time.Duration
}

// line is the sink's hook, called for each line in its goroutine.
func (h *holder) line(raw string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.active {
		for _, l := range blockCommitLeft {
			if strings.Contains(raw, l) {
				h.left = true
			}
		}
		return
	}
	if !strings.Contains(raw, blockCommitHeld) || h.ran {
		return
	}
	h.active, h.ran = true, true
	if err := syscall.Kill(h.pid, syscall.SIGSTOP); err != nil {
		h.err = fmt.Errorf("stopping mariabackup (pid %d): %w", h.pid, err)
		if errors.Is(err, syscall.ESRCH) {
			// It ended already, and with it its lock.
			h.err = errMissedBlockCommit
		}
		h.active = false
		return
	}
	h.wg.Add(1)
	go h.hold()
}

// hold is the stopped mariabackup's side of line.
func (h *holder) hold() {
	defer h.wg.Done()
	start := time.Now()
	err := h.whileStopped()
	if cerr := syscall.Kill(h.pid, syscall.SIGCONT); cerr != nil && !errors.Is(cerr, syscall.ESRCH) {
		err = errors.Join(err, fmt.Errorf("resuming mariabackup (pid %d): %w", h.pid, cerr))
	}
	h.mu.Lock()
	h.active, h.err, h.held = false, err, time.Since(start)
	h.mu.Unlock()
}

func (h *holder) whileStopped() error {
	deadline := time.Now().Add(holdTimeout)
	for {
		// Stopped and drained are read before left: the sink counts a
		// write as handled only after its lines went through line, so
		// once drained, left has seen every line printed before the stop
		// (read the other way round, a "let go" line handled in between
		// went unseen, and the function ran without the lock).
		ended := h.pump.ended()
		stopped := allStopped(h.pid) && h.pump.drained()
		h.mu.Lock()
		left := h.left
		h.mu.Unlock()
		switch {
		case left:
			return errMissedBlockCommit
		case ended:
			// Everything it printed was read, and none of it said it let
			// go: it died holding the lock.
			return fmt.Errorf("mariabackup (pid %d) ended while backstream stopped it", h.pid)
		case stopped:
			return h.fn()
		case time.Now().After(deadline):
			return fmt.Errorf("mariabackup (pid %d) did not stop within %v", h.pid, holdTimeout)
		}
		select {
		case <-h.pump.done:
		case <-time.After(time.Millisecond):
		}
	}
}

// outcome waits for a hold to end and says whether the function ran
// under the lock, with its error or the hold's own; held is how long
// mariabackup was stopped.
func (h *holder) outcome() (ran bool, held time.Duration, err error) {
	h.wg.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	if errors.Is(h.err, errMissedBlockCommit) {
		return false, h.held, nil
	}
	return h.ran && h.err == nil, h.held, h.err
}

// allStopped reports whether every thread of process pid is stopped.
func allStopped(pid int) bool {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			return false
		}
		// "pid (comm) S ...": the state follows the last ')'. A process
		// that ended (Z, X) is not stopped: its output is read to the
		// end instead (see whileStopped).
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't') {
			return false
		}
	}
	return true
}
