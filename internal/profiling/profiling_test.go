package profiling

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The heap profile written is the largest heap's: a big allocation freed
// before the end is in it, with the bytes it held.
func TestMemProfileKeepsThePeak(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu"), filepath.Join(dir, "mem")
	var errs bytes.Buffer
	stop, err := Start(cpu, mem, &errs)
	if err != nil {
		t.Fatal(err)
	}
	peakAllocation()
	runtime.GC()
	runtime.GC()
	stop()
	if errs.Len() != 0 {
		t.Errorf("stop said %q", errs.String())
	}
	b, err := os.ReadFile(mem)
	if err != nil {
		t.Fatal(err)
	}
	// "heap profile: <objects>: <bytes in use> [...] @ heap/<rate>"
	var objects, inuse int64
	if _, err := fmt.Sscanf(string(b), "heap profile: %d: %d", &objects, &inuse); err != nil {
		t.Fatalf("the heap profile's first line: %v in %.200q", err, b)
	}
	if inuse < 64<<20 || !strings.Contains(string(b), "profiling.peakAllocation") {
		t.Errorf("the profile holds %d bytes in use, want peakAllocation's 64 MiB among them:\n%.2000s", inuse, b)
	}
	if st, err := os.Stat(cpu); err != nil || st.Size() == 0 {
		t.Errorf("the CPU profile: %v, %v", st, err)
	}
}

var sink []byte

//go:noinline
func peakAllocation() {
	sink = make([]byte, 64<<20)
	for i := range sink {
		sink[i] = byte(i)
	}
	// Two GCs make the profile account for it; then it is held across
	// a few samples.
	runtime.GC()
	runtime.GC()
	time.Sleep(3 * heapSample)
	sink = nil
}

// A bad path fails before any profile starts: a CPU profile can then
// start again at once (only one may run in a process).
func TestStartRefusesAnUnwritableFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := Start(filepath.Join(dir, "cpu"), filepath.Join(dir, "no", "such", "dir"), &bytes.Buffer{}); err == nil {
		t.Error("Start with a memory profile in a missing directory: no error")
	}
	stop, err := Start(filepath.Join(dir, "cpu2"), "", &bytes.Buffer{})
	if err != nil {
		t.Fatalf("a CPU profile after the refused Start: %v", err)
	}
	stop()
}
