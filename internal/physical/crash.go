package physical

import (
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"syscall"
)

// attempts is how many times a backup is taken while each attempt meets
// a failure the next may not (transient).
const attempts = 3

// transient reports whether err is a failure another attempt may not
// meet: the copy raced the server (DDL ran on tables copied as files, a
// *DDLRaceError; the redo log's copy stopped short of the backup's end, a
// *RedoShortError), or mariabackup crashed (a *CrashError).
func transient(err error) bool {
	var ddl *DDLRaceError
	var redo *RedoShortError
	var crash *CrashError
	return errors.As(err, &ddl) || errors.As(err, &redo) || errors.As(err, &crash)
}

// CrashError is a mariabackup that died of a signal only a fault of its
// own raises (SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE), as 10.11.19 did
// once after "Finished BACKUP STAGE FLUSH" in this project's CI. Nothing
// of such a copy is committed; the backup is taken again, since a crash
// that a race inside mariabackup caused need not recur. A signal sent
// from outside (SIGKILL from the OOM killer, SIGTERM) is not one: it is
// reported as the failure it is.
type CrashError struct {
	Signal syscall.Signal
	Failed error // the failure as reported, with mariabackup's last lines
}

func (e *CrashError) Error() string {
	return fmt.Sprintf("mariabackup crashed (%v): %v", e.Signal, e.Failed)
}

func (e *CrashError) Unwrap() error { return e.Failed }

// crashSignals are the signals a process raises on itself when it
// faults.
var crashSignals = []syscall.Signal{syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGABRT, syscall.SIGILL, syscall.SIGFPE}

// crashSignal says whether err, a child's exit, is a crash, and which
// signal it died of: the child's own death, or a wrapper shell's report
// of its child's (exit status 128 + the signal, as sh gives it), since
// --mariabackup may name a script.
func crashSignal(err error) (syscall.Signal, bool) {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return 0, false
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	if !ok {
		return 0, false
	}
	sig := syscall.Signal(ws.ExitStatus() - 128)
	if ws.Signaled() {
		sig = ws.Signal()
	}
	return sig, slices.Contains(crashSignals, sig)
}
