package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// atLeast is the least time moving bytes at rate can take: the limiter lets
// its first burst (a tenth of a second of bytes) through at once, and the
// 0.8 leaves room for that. Throttling guarantees the bound on any
// machine, however loaded; a backup that ignored the limit ends well
// before it.
func atLeast(n, rate int64) time.Duration {
	return time.Duration(float64(n) / float64(rate) * 0.8 * float64(time.Second))
}

// A physical backup under --max-rate and --max-io: mariabackup gets its
// --throttle, the stream is read no faster than the rate, and the backup
// restores, prepares and starts with every table's checksum equal to the
// source's.
func TestPhysicalBackupMaxRate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 2, BigTableMB: 24}); err != nil {
		t.Fatal(err)
	}
	want := usecasetest.Checksums(t, src)
	tr := testRepo{usecasetest.Backends[0].Make(t)}
	const rate = 16 << 20
	start := time.Now()
	run(t, append([]string{"backup", "--repo", tr.Location, "--parallel", "2", "--max-rate", "16MiB/s", "--max-io", "5000"}, sandboxConn(src)...)...).mustSucceed(t)
	took := time.Since(start)
	e := backupListing(t, tr.Location)[0]
	if least := atLeast(e.RawBytes, rate); took < least {
		t.Errorf("backup of %d raw bytes at --max-rate 16MiB/s took %v, less than the %v the rate allows", e.RawBytes, took, least)
	}
	t.Logf("%d raw bytes at 16 MiB/s: %v (at least %v)", e.RawBytes, took, atLeast(e.RawBytes, rate))
	// mariabackup records the options it was given in its info file.
	if info := mariabackupInfo(t, tr, e.ID); !strings.Contains(info, " --throttle=5000") {
		t.Errorf("mariabackup did not get --throttle=5000; its info file says:\n%s", info)
	}

	run(t, "verify", e.ID, "--repo", tr.Location).mustSucceed(t)
	target := filepath.Join(t.TempDir(), "restore")
	run(t, "restore", e.ID, "--repo", tr.Location, "--target-dir", target, "--prepare").mustSucceed(t)
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, usecasetest.ServerOn(t, target)), want)
}

// mariabackupInfo is the tool's info file kept in a backup's meta (its
// name changed in 11.1).
func mariabackupInfo(t *testing.T, tr testRepo, id string) string {
	t.Helper()
	infos, err := tr.Backend.List(context.Background(), "backups/"+id+"/meta/")
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range infos {
		if b := path.Base(i.Name); b == "xtrabackup_info" || b == "mariadb_backup_info" {
			return string(tr.Read(t, i.Name))
		}
	}
	t.Fatalf("backup %s keeps no mariabackup info file in its meta: %v", id, infos)
	return ""
}

// A logical backup under --max-rate: all connections share one budget, so
// the table data takes at least its size over the rate, and the dump
// loads into a fresh server with every table's checksum equal.
func TestLogicalBackupMaxRate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 3, BigTableMB: 8, Blobs: true}); err != nil {
		t.Fatal(err)
	}
	want := usecasetest.Checksums(t, src)
	repoDir := newRepoDir(t)
	const rate = 4 << 20
	start := time.Now()
	run(t, append([]string{"backup", "--logical", "--repo", repoDir, "--parallel", "3", "--chunk-size", "1MiB", "--skip-users", "--max-rate", "4MiB"}, sandboxConn(src)...)...).mustSucceed(t)
	took := time.Since(start)
	var data int64
	for _, d := range backupListing(t, repoDir)[0].Databases {
		data += d.Bytes
	}
	if least := atLeast(data, rate); took < least {
		t.Errorf("dump of %d bytes of table data at --max-rate 4MiB took %v, less than the %v the rate allows", data, took, least)
	}
	t.Logf("%d bytes of table data over 3 connections at 4 MiB/s: %v (at least %v)", data, took, atLeast(data, rate))

	dst := sandboxtest.Start(t, sandbox.Options{})
	run(t, append([]string{"restore", "--repo", repoDir}, sandboxConn(dst)...)...).mustSucceed(t)
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, dst), want)
}

// Limits given wrongly are usage errors that name the flag, before any
// server or repository is touched.
func TestMaxRateUsageErrors(t *testing.T) {
	t.Parallel()
	repoDir := filepath.Join(t.TempDir(), "repo") // never created: every backup here is refused
	conn := []string{"--socket", filepath.Join(t.TempDir(), "no.sock"), "--user", "root", "--no-defaults"}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--max-rate", "fast"}, []string{"--max-rate", `"fast"`}},
		{[]string{"--max-rate", "200MiB/h"}, []string{"--max-rate", "200MiB/h"}},
		{[]string{"--max-rate", "-5MiB/s"}, []string{"--max-rate", "-5MiB/s"}},
		{[]string{"--max-rate", "200"}, []string{"--max-rate", `"200"`, "64KiB/s"}},
		{[]string{"--max-io", "-1"}, []string{"--max-io", "-1"}},
		{[]string{"--max-io", "many"}, []string{"max-io", "many"}},
		{[]string{"--logical", "--max-io", "100"}, []string{"--max-io", "--max-rate"}},
	} {
		for _, cmd := range []string{"backup", "send"} {
			if cmd == "send" && tc.args[0] == "--logical" {
				continue
			}
			dest := []string{"--repo", repoDir}
			if cmd == "send" {
				dest = []string{"--to", "127.0.0.1:1"}
			}
			r := run(t, append(append(append([]string{cmd}, dest...), tc.args...), conn...)...)
			if r.code != ExitUsage {
				t.Errorf("%s %v: exit %d (%v), want %d", cmd, tc.args, r.code, r.err, ExitUsage)
				continue
			}
			for _, w := range tc.want {
				if !strings.Contains(r.err.Error(), w) {
					t.Errorf("%s %v: error %q does not name %s", cmd, tc.args, r.err, w)
				}
			}
		}
	}
	if _, err := os.Stat(repoDir); !os.IsNotExist(err) {
		t.Errorf("a refused backup created its repository (%v)", err)
	}
}

// Ctrl-C while a throttled backup waits on its budget: exit 130 at once, no
// child left and nothing in the repository, physical or logical.
func TestInterruptedThrottledBackup(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1, BigTableMB: 24}); err != nil {
		t.Fatal(err)
	}
	// At 1MiB/s either backup would run for half a minute or more.
	for _, kind := range []struct {
		name string
		args []string
	}{{"physical", nil}, {"logical", []string{"--logical", "--chunk-size", "256KiB"}}} {
		t.Run(kind.name, func(t *testing.T) {
			repoDir := newRepoDir(t)
			var stderr bytes.Buffer
			args := append(append([]string{"backup", "--repo", repoDir, "--parallel", "2", "--progress", "none", "--max-rate", "1MiB/s"}, kind.args...), sandboxConn(src)...)
			cmd := exec.Command(bin, args...)
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait until stream data is arriving, then interrupt.
			for deadline := time.Now().Add(time.Minute); usecasetest.DirBytes(filepath.Join(repoDir, "backups")) < 64<<10; time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("no stream data after a minute; stderr: %s", stderr.String())
				}
			}
			var children []int
			if kind.name == "physical" {
				if children = mariabackupChildren(t, cmd.Process.Pid, src.Datadir); len(children) != 1 {
					cmd.Process.Kill()
					t.Fatalf("%d mariabackup children of backstream mid-backup, want 1", len(children))
				}
			}
			cmd.Process.Signal(syscall.SIGINT)
			interrupted := time.Now()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				cmd.Process.Kill()
				t.Fatal("backstream did not exit within a minute of SIGINT")
			}
			t.Logf("exited %v after SIGINT", time.Since(interrupted).Round(time.Millisecond))
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != ExitInterrupted {
				t.Fatalf("exit: %v, want code %d; stderr: %s", err, ExitInterrupted, stderr.String())
			}
			if left := usecasetest.DirBytes(filepath.Join(repoDir, "backups")); left != 0 {
				t.Errorf("%d bytes left under backups/ after the interrupt", left)
			}
			for _, pid := range children {
				if !processGone(pid) {
					t.Errorf("mariabackup (pid %d) still running after backstream exited", pid)
				}
			}
		})
	}
}
