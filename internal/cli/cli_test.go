package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/sandbox"
)

// result is what one in-process run of the CLI produced.
type result struct {
	stdout, stderr string
	err            error
	code           int
}

// run executes backstream with args in-process, as main would, with
// --progress none unless args name another, and a restore with --no-sync
// unless args say --no-sync themselves or restore into place (--datadir):
// what these tests check is what a restore wrote, not when the disk has
// it, and a sync in every one of the suite's restores made the parallel
// tests wait on each other's writes. That a restore syncs is checked in
// internal/durable and internal/restore (through the page cache's own
// account), and end to end by the restores into place and by receive.
func run(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	root := NewRoot("test")
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--progress") }) {
		args = append(args, "--progress=none")
	}
	if len(args) > 0 && args[0] == "restore" && !slices.ContainsFunc(args, func(a string) bool {
		return strings.HasPrefix(a, "--no-sync") || a == "--datadir" || strings.HasPrefix(a, "--datadir=")
	}) {
		args = append(args, "--no-sync")
	}
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	err := root.ExecuteContext(context.Background())
	r := result{stdout: out.String(), stderr: errOut.String(), err: err, code: ExitCode(err, false)}
	t.Logf("backstream %s -> exit %d, err: %v", strings.Join(args, " "), r.code, err)
	return r
}

// catExtract runs `backstream cat` in-process with its output piped into
// the real `mbstream -x -C dir`, as `cat | mbstream -x` with pipefail
// would: both must succeed. The stream is never held in memory whole.
func catExtract(t *testing.T, dir string, args ...string) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var mbOut bytes.Buffer
	mb := exec.Command("mbstream", "-x", "-C", dir)
	mb.Stdin, mb.Stdout, mb.Stderr = pr, &mbOut, &mbOut
	if err := mb.Start(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	var errOut bytes.Buffer
	root := NewRoot("test")
	root.SetArgs(append(append([]string{"cat"}, args...), "--progress=none"))
	root.SetOut(pw)
	root.SetErr(&errOut)
	catErr := root.ExecuteContext(context.Background())
	pw.Close()
	mbErr := mb.Wait()
	t.Logf("backstream cat %s | mbstream -x -> %v, %v", strings.Join(args, " "), catErr, mbErr)
	if catErr != nil {
		t.Fatalf("cat: %v\nstderr: %s", catErr, errOut.String())
	}
	if mbErr != nil {
		t.Fatalf("cat | mbstream -x: %v\n%s", mbErr, mbOut.String())
	}
}

func (r result) mustSucceed(t *testing.T) result {
	t.Helper()
	if r.err != nil {
		t.Fatalf("failed: %v\nstderr: %s", r.err, r.stderr)
	}
	return r
}

// backupListing parses `list --json`; flags are added to the command.
func backupListing(t *testing.T, repoDir string, flags ...string) []inventory.Backup {
	t.Helper()
	r := run(t, append([]string{"list", "--repo", repoDir, "--json"}, flags...)...).mustSucceed(t)
	var entries []inventory.Backup
	if err := json.Unmarshal([]byte(r.stdout), &entries); err != nil {
		t.Fatalf("list --json: %v\n%s", err, r.stdout)
	}
	return entries
}

// newRepoDir makes a repository in a new directory, with init, and
// returns its path: no other command creates one.
func newRepoDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	run(t, "init", "--repo", dir).mustSucceed(t)
	return dir
}

// sandboxConn is the connection options of the sandbox server s.
func sandboxConn(s *sandbox.Server) []string {
	return []string{"--socket", s.Socket, "--user", "root", "--no-defaults"}
}

// copyConn names source and target sandboxes for copy.
func copyConn(src, dst *sandbox.Server) []string {
	return []string{"--from", src.Socket, "--from-user", "root", "--to", dst.Socket, "--to-user", "root", "--no-defaults"}
}
