package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/usecasetest"
)

// A password on the command line works as in the mariadb client, as
// --password=VALUE and as -pVALUE, with a warning; once backstream has
// started its work (mariabackup runs), neither its own command line nor
// any child's shows the password. mariabackup is held at its start until
// the watcher has looked, so the look cannot miss it. --password without a
// value and without a terminal is refused, naming what to do instead.
func TestPasswordOnCommandLineHidden(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bin := buildBinary(t)
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 1}); err != nil {
		t.Fatal(err)
	}
	password := "Argv-" + testkit.RandomHex(12)
	conn, err := src.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"SET SESSION sql_log_bin = 0", "CREATE USER bs_argv@localhost IDENTIFIED BY '" + password + "'",
		"GRANT ALL PRIVILEGES ON *.* TO bs_argv@localhost"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	conn.Close()
	secrets := []secret{{"database password", password}}
	repoDir := newRepoDir(t)

	for _, form := range []string{"--password=" + password, "-p" + password, "-vp" + password} {
		gated, open := usecasetest.GatedMariabackup(t, "--backup")
		cmd := exec.Command(bin, "backup", "--repo", repoDir, "--parallel", "1", "--progress", "none", "--no-defaults",
			"--socket", src.Socket, "--user", "bs_argv", form, "--mariabackup", gated)
		cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		what := strings.ReplaceAll(form, password, "<password>")
		started := watchProcs(pid, bin, nil)
		for deadline := time.Now().Add(2 * time.Minute); !started.saw("--backup", "dash", "sh", "bash"); time.Sleep(20 * time.Millisecond) {
			select {
			case err := <-exited:
				t.Fatalf("backup with %s ended (%v) before mariabackup --backup was seen:\n%s", what, err, stderr.String())
			default:
			}
			if time.Now().After(deadline) {
				open()
				<-exited
				t.Fatalf("backup with %s: no mariabackup --backup started in 2 minutes:\n%s", what, stderr.String())
			}
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			t.Fatal(err)
		}
		w := watchProcs(pid, bin, secrets)
		w.scan() // at least one look while mariabackup is held
		open()
		err = <-exited
		started.finish()
		_, found := w.finish()
		for _, l := range found {
			t.Errorf("backup with %s: %s", what, l)
		}
		if bytes.Contains(cmdline, []byte(password)) {
			t.Errorf("backup with %s: /proc/%d/cmdline still holds the password while mariabackup runs: %q", what, pid, cmdline)
		} else if !bytes.Contains(cmdline, []byte(strings.Repeat("x", len(password)))) {
			t.Errorf("backup with %s: /proc/%d/cmdline = %q, want the password overwritten with x's", what, pid, cmdline)
		}
		if err != nil {
			t.Fatalf("backup with %s: %v\n%s", what, err, stderr.String())
		}
		if !strings.Contains(stderr.String(), options.PasswordOnCommandLine) {
			t.Errorf("backup with %s: no warning that an option file is safer:\n%s", what, stderr.String())
		}
		if strings.Contains(stderr.String(), password) {
			t.Errorf("backup with %s: stderr holds the password:\n%s", what, stderr.String())
		}
	}

	r := run(t, "backup", "--repo", repoDir, "--no-defaults", "--socket", src.Socket, "--user", "bs_argv", "-p")
	if r.code != ExitUsage || !strings.Contains(r.err.Error(), "needs a terminal") {
		t.Errorf("backup with -p and no terminal: exit %d, %v; want exit %d saying it needs a terminal", r.code, r.err, ExitUsage)
	}
}
