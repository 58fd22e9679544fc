package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
)

// A failed command says why once: the progress summary's FAILED line does
// not repeat the error that the command then prints (a user read every
// failure twice). Run as the binary, since main prints the error.
func TestFailureIsPrintedOnce(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	repoDir := newRepoDir(t)
	missing := filepath.Join(t.TempDir(), "no.sock")
	for _, args := range [][]string{
		{"backup", "--no-defaults", "--repo", repoDir, "--socket", missing, "--progress", "plain"},
		{"backup", "--no-defaults", "--logical", "--repo", repoDir, "--socket", missing, "--progress", "plain"},
	} {
		var stderr bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stderr = &stderr
		err := cmd.Run()
		if err == nil {
			t.Fatalf("%v: exit 0 without a server", args)
		}
		const cause = "no such file or directory"
		if n := strings.Count(stderr.String(), cause); n != 1 {
			t.Errorf("%v: the error is printed %d times:\n%s", args, n, stderr.String())
		}
		if !strings.Contains(stderr.String(), ": FAILED after ") {
			t.Errorf("%v: no FAILED summary:\n%s", args, stderr.String())
		}
	}
}

// No command's help prints a byte a terminal does not show: --password's
// request to prompt was a NUL and a word in -p's usage line.
func TestHelpIsPrintable(t *testing.T) {
	root := NewRoot("test")
	for _, c := range append(root.Commands(), root) {
		if c.Hidden {
			continue
		}
		out := run(t, append(strings.Fields(strings.TrimPrefix(c.CommandPath(), "backstream")), "--help")...).mustSucceed(t).stdout
		if i := strings.IndexFunc(out, func(r rune) bool { return !unicode.IsPrint(r) && r != '\n' && r != '\t' }); i >= 0 {
			t.Errorf("%s --help has %q at %d: %q", c.CommandPath(), out[i], i, out[max(0, i-40):min(len(out), i+20)])
		}
	}
	if out := run(t, "backup", "--help").stdout; !strings.Contains(out, "-p, --password string ") {
		t.Errorf("backup --help: no -p, --password line:\n%s", out)
	}
}

// A bad value in an option file names its file and line, whichever check
// finds it: the flag parser's (parallel) or a command's own (compress,
// max-rate, memory).
func TestBadOptionFileValuesNameTheirLine(t *testing.T) {
	t.Parallel()
	repoDir := newRepoDir(t)
	for _, c := range []struct{ key, value string }{
		{"parallel", "abc"},
		{"compress", "zstd:99"},
		{"max-rate", "10"},
		{"memory", "1"},
		{"limit-upload", "10"},
	} {
		file := filepath.Join(t.TempDir(), "bad.cnf")
		if err := os.WriteFile(file, []byte("[backstream]\n# a comment\n"+c.key+" = "+c.value+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		r := run(t, "backup", "--defaults-file", file, "--repo", repoDir, "--socket", filepath.Join(t.TempDir(), "no.sock"))
		if r.code != ExitUsage || r.err == nil || !strings.Contains(r.err.Error(), file+":3") {
			t.Errorf("%s = %s: exit %d, %v; want exit %d naming %s:3", c.key, c.value, r.code, r.err, ExitUsage, file)
		}
		// The same value on the command line names no file.
		r = run(t, "backup", "--no-defaults", "--"+c.key, c.value, "--repo", repoDir, "--socket", filepath.Join(t.TempDir(), "no.sock"))
		if r.code != ExitUsage || r.err == nil || strings.Contains(r.err.Error(), ".cnf") {
			t.Errorf("--%s %s: exit %d, %v; want exit %d naming no file", c.key, c.value, r.code, r.err, ExitUsage)
		}
	}
}
