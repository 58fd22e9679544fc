package procargs

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The test binary runs itself with a secret argument; the child masks it
// and reports what /proc/self/cmdline and its os.Args then hold.
func TestMaskHidesFromProc(t *testing.T) {
	if os.Getenv("PROCARGS_CHILD") == "1" {
		Mask(len(os.Args)-1, len("--password="))
		cmdline, err := os.ReadFile("/proc/self/cmdline")
		if err != nil {
			t.Fatal(err)
		}
		os.Stdout.Write(cmdline)
		os.Stdout.WriteString("\n" + os.Args[len(os.Args)-1] + "\n")
		return
	}
	secret := "--password=Hidden-Secret-42"
	cmd := exec.Command(os.Args[0], "-test.run=^TestMaskHidesFromProc$", "--", secret)
	cmd.Env = append(os.Environ(), "PROCARGS_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	cmdline, args, _ := bytes.Cut(out, []byte("\n"))
	if bytes.Contains(cmdline, []byte("Hidden-Secret-42")) {
		t.Errorf("/proc/self/cmdline still holds the secret after Mask: %q", cmdline)
	}
	if want := "\x00--password=" + strings.Repeat("x", len("Hidden-Secret-42")) + "\x00"; !bytes.Contains(cmdline, []byte(want)) {
		t.Errorf("/proc/self/cmdline = %q, want it to hold %q", cmdline, want)
	}
	if !strings.HasPrefix(string(args), secret+"\n") {
		t.Errorf("os.Args after Mask holds %q, want the value %q kept for the program", args, secret)
	}
}
