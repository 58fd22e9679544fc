package physical

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// crashWrapper is a mariabackup that streams half of a real backup and
// then dies of signal sig, as a crash mid-copy does: the first time
// only, or always.
func crashWrapper(t *testing.T, sig string, always bool) string {
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "mariabackup")
	once := `[ -e ` + dir + `/crashed ] && exec ` + testBinary(t).Path + ` "$@"
: >` + dir + `/crashed
`
	if always {
		once = ""
	}
	script := `#!/bin/sh
case " $* " in *" --backup "*) ;; *) exec ` + testBinary(t).Path + ` "$@";; esac
` + once + `x=$(mktemp ` + dir + `/x.XXXX)
` + testBinary(t).Path + ` "$@" >$x || exit $?
head -c $(( $(stat -c %s $x) / 2 )) $x
kill -` + sig + ` $$
`
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return wrapper
}

// A mariabackup that crashes (dies of SIGSEGV mid-stream) is run again,
// the crash is logged with the attempt that follows, and only the
// attempt that completed is committed.
func TestCrashedMariabackupIsTakenAgain(t *testing.T) {
	srv := sharedServer(t)
	b := backupThrough(t, srv, crashWrapper(t, "SEGV", false))
	if b.err != nil {
		t.Fatalf("RunBackup: %v", b.err)
	}
	if again := retries(b.rec.logs); len(again) != 1 || !strings.Contains(again[0], "mariabackup crashed (segmentation fault)") || !strings.Contains(again[0], "attempt 2 of 3") {
		t.Errorf("logged %q, want one retry, saying mariabackup crashed of SIGSEGV, and attempt 2 of 3", b.rec.logs)
	}
	b.holds(t, b.m.ID)
}

// A mariabackup killed from outside (SIGKILL, as the OOM killer sends) did
// not crash: the backup fails at once, and nothing is committed.
func TestKilledMariabackupIsNotTakenAgain(t *testing.T) {
	srv := sharedServer(t)
	b := backupThrough(t, srv, crashWrapper(t, "KILL", true))
	var crash *CrashError
	if b.err == nil || errors.As(b.err, &crash) || !strings.Contains(b.err.Error(), "signal: killed") {
		t.Fatalf("RunBackup: %v, want mariabackup's death by SIGKILL, not a crash", b.err)
	}
	if again := retries(b.rec.logs); len(again) != 0 {
		t.Errorf("logged %q, want no retry", again)
	}
	b.holds(t)
}

// crashSignal knows a crash from the child's own death and from a wrapper
// shell's exit status, and nothing else for one.
func TestCrashSignal(t *testing.T) {
	for _, c := range []struct {
		script string
		sig    syscall.Signal
		crash  bool
	}{
		{`kill -SEGV $$`, syscall.SIGSEGV, true},
		{`kill -ABRT $$`, syscall.SIGABRT, true},
		{`sh -c 'kill -BUS $$'; exit $?`, syscall.SIGBUS, true},
		{`kill -KILL $$`, syscall.SIGKILL, false},
		{`kill -TERM $$`, syscall.SIGTERM, false},
		{`sh -c 'kill -KILL $$'; exit $?`, syscall.SIGKILL, false},
		{`exit 1`, 0, false},
		{`exit 0`, 0, false},
	} {
		err := exec.Command("sh", "-c", c.script).Run()
		sig, crash := crashSignal(err)
		if crash != c.crash || (c.sig != 0 && sig != c.sig) {
			t.Errorf("%s: %v: signal %v, crash %v; want %v, %v", c.script, err, sig, crash, c.sig, c.crash)
		}
	}
}
