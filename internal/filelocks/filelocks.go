// Package filelocks reads the kernel's list of file locks (/proc/locks,
// which anyone may read) and names files the way it does, by device and
// inode: how backstream tells that a process holds a datadir (a MariaDB
// server locks ibdata1 and aria_log_control) even when that process's own
// entries in /proc cannot be read. It knows nothing of servers or backups.
package filelocks

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// File is a file as /proc/locks names it: its device's major and minor
// numbers and its inode.
type File struct{ Major, Minor, Inode uint64 }

// Of names the file fi describes (an os.FileInfo of a stat, not of a
// DirEntry without one); ok is false where the system gives no device
// and inode.
func Of(fi fs.FileInfo) (f File, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return File{}, false
	}
	dev := uint64(st.Dev)
	return File{Major: (dev>>8)&0xfff | (dev>>32)&^0xfff, Minor: dev&0xff | (dev>>12)&^0xff, Inode: st.Ino}, true
}

// Holders maps each locked file to the pid (as the kernel of the reader's
// PID namespace writes it) of a process holding or waiting for a lock on
// it. A missing list (a kernel without file locking) is an empty map.
func Holders(path string) (map[File]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[File]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parse(f)
}

// parse reads lines like "1: POSIX  ADVISORY  WRITE 3807 fe:00:778327 0
// EOF", with "->" after the number for a waiter: the pid is the field
// before the first major:minor:inode one.
func parse(r io.Reader) (map[File]string, error) {
	held := map[File]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		for i, field := range fields {
			parts := strings.Split(field, ":")
			if i == 0 || len(parts) != 3 {
				continue
			}
			major, err1 := strconv.ParseUint(parts[0], 16, 32)
			minor, err2 := strconv.ParseUint(parts[1], 16, 32)
			ino, err3 := strconv.ParseUint(parts[2], 10, 64)
			if err1 == nil && err2 == nil && err3 == nil {
				held[File{major, minor, ino}] = fields[i-1]
			}
			break
		}
	}
	return held, sc.Err()
}
