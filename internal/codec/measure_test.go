package codec

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU time the process has used so far. Throughput measured
// in CPU time, not wall time, stays meaningful on a shared, loaded machine;
// frames are independent, so a frame codec scales with cores from there.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestMeasureLevels prints ratio and per-core speed of every codec and level
// on InnoDB-like and TSV frames; it is how the default levels were chosen.
// Run with BACKSTREAM_CODEC_MEASURE=1 go test -run TestMeasureLevels -v.
func TestMeasureLevels(t *testing.T) {
	if os.Getenv("BACKSTREAM_CODEC_MEASURE") == "" {
		t.Skip("set BACKSTREAM_CODEC_MEASURE=1 to measure")
	}
	const frames = 8
	for _, in := range []struct {
		name string
		gen  func(int, uint64) []byte
	}{{"innodb", innodbLike}, {"tsv", textLines}} {
		var srcs [][]byte
		total := 0
		for i := range frames {
			srcs = append(srcs, in.gen(benchFrameSize, uint64(100+i)))
			total += benchFrameSize
		}
		for _, c := range allCodecs() {
			var out [][]byte
			compressed := 0
			start := cpuTime(t)
			for _, s := range srcs {
				f, err := c.Compress(nil, s)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, f)
				compressed += len(f)
			}
			mid := cpuTime(t)
			for i, f := range out {
				if _, err := c.Decompress(nil, f, len(srcs[i])); err != nil {
					t.Fatal(err)
				}
			}
			end := cpuTime(t)
			mbps := func(d time.Duration) float64 { return float64(total) / 1e6 / d.Seconds() }
			t.Logf("%-7s %-7s ratio %.3f  compress %7.1f MB/s/core  decompress %7.1f MB/s/core",
				in.name, c, float64(compressed)/float64(total), mbps(mid-start), mbps(end-mid))
		}
	}
}
