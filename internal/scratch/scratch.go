// Package scratch is this process's private place for temporary files that
// may hold secrets or plain data: the option files handed to children,
// mariabackup's log and work directories, plaintext binary logs. It is one
// directory per process, $TMPDIR/backstream-<pid>-<start>-<random>, mode
// 0700, made on first use. The command removes it on every exit path
// (Cleanup) and, at its next start, sweeps the ones that a killed process
// left (Sweep). It knows nothing of what the files are or of flags.
package scratch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// prefix starts the name of every scratch directory.
const prefix = "backstream-"

var (
	mu  sync.Mutex
	dir string
)

// Dir returns this process's scratch directory, made on first use.
func Dir() (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		return dir, nil
	}
	d, err := os.MkdirTemp("", fmt.Sprintf("%s%d-%d-*", prefix, os.Getpid(), startTime(os.Getpid())))
	if err != nil {
		return "", fmt.Errorf("temporary directory: %w", err)
	}
	// MkdirTemp makes it 0700; the chmod guards against an odd umask handling.
	if err := os.Chmod(d, 0o700); err != nil {
		os.RemoveAll(d)
		return "", fmt.Errorf("temporary directory %s: %w", d, err)
	}
	dir = d
	return dir, nil
}

// MkdirTemp is os.MkdirTemp inside the scratch directory.
func MkdirTemp(pattern string) (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	return os.MkdirTemp(d, pattern)
}

// CreateTemp is os.CreateTemp inside the scratch directory.
func CreateTemp(pattern string) (*os.File, error) {
	d, err := Dir()
	if err != nil {
		return nil, err
	}
	return os.CreateTemp(d, pattern)
}

// Cleanup removes the scratch directory and everything in it, if it was
// made. Call it when the process is about to exit.
func Cleanup() error {
	mu.Lock()
	defer mu.Unlock()
	if dir == "" {
		return nil
	}
	err := os.RemoveAll(dir)
	dir = ""
	return err
}

// Sweep removes the scratch directories in $TMPDIR that belong to this
// user and whose process no longer runs (a SIGKILL gives no chance to
// clean up), and returns their paths. Directories of running processes,
// of other users, and anything not named like a scratch directory are left
// alone.
func Sweep() ([]string, error) {
	tmp := os.TempDir()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		pid, start, ok := parseName(e.Name())
		if !ok || !e.IsDir() || pid == os.Getpid() || running(pid, start) {
			continue
		}
		p := filepath.Join(tmp, e.Name())
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, p)
	}
	return removed, errors.Join(errs...)
}

// parseName reads the pid and start time from a scratch directory's name.
func parseName(name string) (pid int, start uint64, ok bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, 0, false
	}
	f := strings.SplitN(rest, "-", 3)
	if len(f) != 3 || f[2] == "" {
		return 0, 0, false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return 0, 0, false
	}
	start, err = strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return pid, start, true
}

// running reports whether the process that made a scratch directory still
// runs: its pid exists and, where the start time is known, started then (a
// pid can be reused).
func running(pid int, start uint64) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	if now := startTime(pid); start != 0 && now != 0 && now != start {
		return false
	}
	return true
}

// startTime is the start time of a process in clock ticks since boot, from
// /proc/<pid>/stat, or 0 where it cannot be read.
func startTime(pid int) uint64 {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses;
	// starttime is the 22nd field, the 20th after comm.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 {
		return 0
	}
	t, _ := strconv.ParseUint(f[19], 10, 64)
	return t
}
