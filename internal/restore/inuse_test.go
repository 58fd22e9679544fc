package restore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A process table notInUse cannot read fails closed, naming what it could
// not read; an entry that vanished (its process exited) is passed over.
func TestNotInUseFailsClosed(t *testing.T) {
	dir := t.TempDir()
	proc := t.TempDir()
	mk := func(pid string, files map[string]string, links map[string]string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(proc, pid), 0o700); err != nil {
			t.Fatal(err)
		}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(proc, pid, name), []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		for name, to := range links {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(proc, pid, name)), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(to, filepath.Join(proc, pid, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk("self", map[string]string{"status": "Name:\tbackstream\nCapPrm:\t00000000000000ff\n"}, nil)
	// A process elsewhere, and one that exited while it was read (its
	// directory is there, its entries are not).
	mk("10", map[string]string{"comm": "bash\n"}, map[string]string{"cwd": "/", "fd/0": "/dev/null"})
	mk("11", nil, nil)
	if err := notInUseProc(proc, dir); err != nil {
		t.Fatalf("nobody uses %s: %v", dir, err)
	}

	// No process table at all.
	err := notInUseProc(filepath.Join(proc, "missing"), dir)
	if err == nil || !strings.Contains(err.Error(), "cannot tell whether a running process uses it") || !strings.Contains(err.Error(), dir) {
		t.Errorf("without a process table: %v, want an error saying so", err)
	}
	// Entries that exist but cannot be read: descriptors that are no
	// directory, a working directory that is no link.
	mk("12", map[string]string{"comm": "mariadbd\n", "fd": "not a directory"}, map[string]string{"cwd": "/"})
	err = notInUseProc(proc, dir)
	var re *RefusedError
	if err == nil || errors.As(err, &re) || !strings.Contains(err.Error(), "cannot tell whether a running process uses it: pid 12 (mariadbd)") {
		t.Errorf("with a process whose descriptors cannot be read: %v, want an error naming it", err)
	}
	os.RemoveAll(filepath.Join(proc, "12"))
	mk("13", map[string]string{"comm": "mariadbd\n", "cwd": "not a link"}, nil)
	if err := os.Mkdir(filepath.Join(proc, "13", "fd"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := notInUseProc(proc, dir); err == nil || !strings.Contains(err.Error(), "pid 13 (mariadbd)") {
		t.Errorf("with a process whose working directory cannot be read: %v, want an error naming it", err)
	}
	// A directory that does not exist is in use by nobody, whatever the
	// process table says.
	if err := notInUseProc(proc, filepath.Join(dir, "absent")); err != nil {
		t.Errorf("an absent directory: %v", err)
	}
	os.RemoveAll(filepath.Join(proc, "13"))
	// A lock on a file of the directory, held by a process whose entries
	// show nothing (or that /proc does not list).
	lib := filepath.Join(dir, "ibdata1")
	if err := os.WriteFile(lib, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(lib)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	dev := uint64(st.Dev)
	major, minor := (dev>>8)&0xfff|(dev>>32)&^0xfff, dev&0xff|(dev>>12)&^0xff
	locks := fmt.Sprintf("1: POSIX  ADVISORY  WRITE 3807 fe:00:778327 0 EOF\n2: -> FLOCK  ADVISORY  WRITE 77 %02x:%02x:%d 0 EOF\n", major, minor, st.Ino)
	if err := os.WriteFile(filepath.Join(proc, "locks"), []byte(locks), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := notInUseProc(proc, dir); !errors.As(err, &re) || !strings.Contains(err.Error(), "pid 77 holds a lock on "+lib) {
		t.Errorf("with a lock on a file of it: %v, want refused naming the process and the file", err)
	}
	os.Remove(filepath.Join(proc, "locks"))
	mk("14", map[string]string{"comm": "mariadbd\n"}, map[string]string{"cwd": "/", "fd/5": filepath.Join(dir, "ibdata1")})
	if err := notInUseProc(proc, dir); !errors.As(err, &re) || !strings.Contains(err.Error(), "pid 14, mariadbd") {
		t.Errorf("with a process holding a file of it open: %v, want refused naming it", err)
	}
}

// An entry that cannot be read for want of permission is passed over only
// for a process holding capabilities this one lacks.
func TestPassOver(t *testing.T) {
	proc := t.TempDir()
	for pid, caps := range map[string]string{"20": "0000000000000100", "21": "0000000000000001"} {
		if err := os.MkdirAll(filepath.Join(proc, pid), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proc, pid, "status"), []byte("Name:\tx\nCapPrm:\t"+caps+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	denied := &fs.PathError{Op: "readlink", Path: "cwd", Err: syscall.EACCES}
	for _, c := range []struct {
		pid  string
		root bool
		err  error
		want bool
	}{
		{"20", true, denied, true},   // holds a capability root here lacks
		{"20", false, denied, false}, // not root: it might be a server of another user
		{"21", true, denied, false},  // no more privileged than we are
		{"22", true, denied, true},   // gone meanwhile (no status either)
		{"21", false, &fs.PathError{Op: "readlink", Path: "cwd", Err: syscall.ENOENT}, true},
		{"21", false, &fs.PathError{Op: "readlink", Path: "cwd", Err: syscall.ESRCH}, true},
		{"21", true, &fs.PathError{Op: "readlink", Path: "cwd", Err: syscall.EINVAL}, false},
	} {
		if got := passOver(filepath.Join(proc, c.pid), 0xff, c.root, c.err); got != c.want {
			t.Errorf("passOver(pid %s, root %v, %v) = %v, want %v", c.pid, c.root, c.err, got, c.want)
		}
	}
}

// Run as another user than the one of a process working in the directory,
// notInUse cannot read that process's entries: it refuses, where it used to
// take the directory for unused.
func TestNotInUseUnreadableProcess(t *testing.T) {
	if os.Getenv("BACKSTREAM_NOTINUSE_CHILD") != "" {
		// The child, as nobody: report what notInUse says.
		if err := notInUse(os.Getenv("BACKSTREAM_NOTINUSE_CHILD")); err != nil {
			os.Stdout.WriteString("ERROR " + err.Error())
		} else {
			os.Stdout.WriteString("UNUSED")
		}
		return
	}
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("running a check as another user needs root, which CI has")
		}
		t.Log("not root: cannot run notInUse as another user")
		return
	}
	// A world-readable directory, and a copy of the test binary that
	// nobody can run.
	top, err := os.MkdirTemp("", "notinuse-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(top)
	if err := os.Chmod(top, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(top, "restore.test")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(top, "datadir")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sleep := exec.Command("sleep", "60")
	sleep.Dir = dir
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleep.Process.Kill(); sleep.Wait() }()
	child := exec.Command(bin, "-test.run=^TestNotInUseUnreadableProcess$")
	child.Dir = top
	child.Env = append(os.Environ(), "BACKSTREAM_NOTINUSE_CHILD="+dir)
	child.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := child.Output()
	if err != nil {
		t.Fatalf("the check as nobody: %v: %s", err, out)
	}
	if !strings.Contains(string(out), "ERROR data directory "+dir+": cannot tell whether a running process uses it: pid ") {
		t.Errorf("notInUse as another user than the process in the directory said %q, want a refusal naming a process it cannot read", out)
	}
}

// Processes that start and exit while notInUse reads the process table do
// not make it fail: their entries vanish, which is not an obstacle.
func TestNotInUseRacesExitingProcesses(t *testing.T) {
	dir := t.TempDir()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			exec.Command("true").Run()
		}
	}()
	deadline := time.Now().Add(2 * time.Second)
	for n := 0; time.Now().Before(deadline); n++ {
		if err := notInUse(dir); err != nil {
			close(stop)
			<-done
			t.Fatalf("check %d, with processes exiting meanwhile: %v", n, err)
		}
	}
	close(stop)
	<-done
}
