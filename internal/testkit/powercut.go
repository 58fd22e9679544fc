package testkit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// PowerCut is a file system whose power a test can cut: ext4 on a loop
// device over a sparse file in the test's temporary directory. Cut stops
// it as a power failure would (the shutdown ioctl, without flushing its
// journal: every write not yet on the device is lost, the page cache's
// dirty data and the journal's uncommitted transactions alike, and every
// later write fails), and Recover mounts it again, replaying its journal
// as the boot after the failure would. What a program synced before the
// cut is there after Recover; what it did not, may not be. It needs root,
// losetup, mkfs.ext4 and mount (scripts/deps.sh installs them).
type PowerCut struct {
	Dir string // the mount point
	dev string
	t   testing.TB
}

// ext4IocShutdown is EXT4_IOC_SHUTDOWN (_IOR('X', 125, __u32)), and
// ext4GoingNoLogFlush its flag that drops what the journal holds.
const (
	ext4IocShutdown     = 0x8004587d
	ext4GoingNoLogFlush = 2
)

// NewPowerCut makes and mounts a file system of size bytes, removed when
// the test ends.
func NewPowerCut(t testing.TB, size int64) *PowerCut {
	t.Helper()
	dir := t.TempDir()
	img := filepath.Join(dir, "disk.img")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	dev := strings.TrimSpace(run(t, "losetup", "--find", "--show", img))
	p := &PowerCut{Dir: filepath.Join(dir, "mnt"), dev: dev, t: t}
	t.Cleanup(func() {
		exec.Command("umount", p.Dir).Run()
		exec.Command("losetup", "--detach", dev).Run()
	})
	run(t, "mkfs.ext4", "-q", dev)
	if err := os.Mkdir(p.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, "mount", dev, p.Dir)
	return p
}

// Cut cuts the power: from now on nothing more reaches the device.
func (p *PowerCut) Cut() {
	p.t.Helper()
	fd, err := unix.Open(p.Dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		p.t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.IoctlSetPointerInt(fd, ext4IocShutdown, ext4GoingNoLogFlush); err != nil {
		p.t.Fatalf("shutting %s down: %v", p.Dir, err)
	}
}

// Recover unmounts the file system, once nothing holds it open (kill the
// programs that wrote to it first), and mounts it again from what its
// device holds.
func (p *PowerCut) Recover() {
	p.t.Helper()
	// A program just killed may hold the file system a moment longer
	// (its last writes failing against the shut down device): busy is
	// tried again, for 10 seconds.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, err := exec.Command("umount", p.Dir).CombinedOutput()
		if err == nil {
			break
		}
		if !strings.Contains(string(out), "busy") || time.Now().After(deadline) {
			p.t.Fatalf("umount %s: %v: %s; what holds it: %s", p.Dir, err, out, holders(p.Dir))
		}
	}
	run(p.t, "mount", p.dev, p.Dir)
}

// holders names the processes with a file, a working directory or a root
// under dir, from /proc: what keeps a file system busy.
func holders(dir string) string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, proc := range procs {
		links, _ := filepath.Glob(proc + "/fd/*")
		for _, l := range append(links, proc+"/cwd", proc+"/root") {
			if target, err := os.Readlink(l); err == nil && (target == dir || strings.HasPrefix(target, dir+"/")) {
				comm, _ := os.ReadFile(proc + "/comm")
				out = append(out, fmt.Sprintf("pid %s (%s): %s", filepath.Base(proc), strings.TrimSpace(string(comm)), target))
				break
			}
		}
	}
	if len(out) == 0 {
		return "no process (the kernel: writeback against the shut down device)"
	}
	return strings.Join(out, "; ")
}

// run runs a command of the test's set-up and returns its output.
func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}
