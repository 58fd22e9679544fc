package codec

import (
	"bytes"
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

// measurement is what one codec did to a set of frames.
type measurement struct {
	ratio                float64 // compressed / original
	compress, decompress time.Duration
}

// measure compresses and decompresses every frame with c, checks that each
// comes back whole, and takes the CPU time of each half. A first, untimed
// round trip sets up the codec's pooled encoder and decoder.
func measure(t *testing.T, c Codec, srcs [][]byte) measurement {
	t.Helper()
	if f, err := c.Compress(nil, srcs[0]); err == nil {
		_, _ = c.Decompress(nil, f, len(srcs[0]))
	}
	var out [][]byte
	total, compressed := 0, 0
	start := cpuTime(t)
	for _, s := range srcs {
		f, err := c.Compress(nil, s)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		out = append(out, f)
		total += len(s)
		compressed += len(f)
	}
	mid := cpuTime(t)
	for i, f := range out {
		got, err := c.Decompress(nil, f, len(srcs[i]))
		if err != nil {
			t.Fatalf("%s: frame %d: %v", c, i, err)
		}
		if !bytes.Equal(got, srcs[i]) {
			t.Fatalf("%s: frame %d does not decompress to what was compressed", c, i)
		}
	}
	end := cpuTime(t)
	return measurement{ratio: float64(compressed) / float64(total), compress: mid - start, decompress: end - mid}
}

func logMeasurement(t *testing.T, input string, c Codec, m measurement, size int) {
	mbps := func(d time.Duration) float64 { return float64(size) / 1e6 / d.Seconds() }
	t.Logf("%-7s %-7s ratio %.3f  compress %7.1f MB/s/core  decompress %7.1f MB/s/core",
		input, c, m.ratio, mbps(m.compress), mbps(m.decompress))
}

// TestMeasureLevels measures ratio and per-core speed of the codecs' levels
// on InnoDB-like and TSV frames, the measurements the default levels were
// chosen by (each algorithm's fastest), and checks what the levels are for:
// every codec but none shrinks these frames, and each algorithm's highest
// level compresses smaller than its lowest.
//
// By default it measures one 128 KiB frame of each kind at the lowest and
// the highest level. The full table (eight 4 MiB frames, every level) also
// checks that the highest level costs more CPU than the lowest; a smaller
// measurement, or one under the race detector, is too noisy for that:
//
//	BACKSTREAM_CODEC_MEASURE=1 go test -run TestMeasureLevels -v ./internal/codec
func TestMeasureLevels(t *testing.T) {
	full := os.Getenv("BACKSTREAM_CODEC_MEASURE") != ""
	frames, frameSize := 1, 128<<10
	if full {
		frames, frameSize = 8, benchFrameSize
	}
	for _, in := range []struct {
		name string
		gen  func(int, uint64) []byte
	}{{"innodb", innodbLike}, {"tsv", textLines}} {
		var srcs [][]byte
		for i := range frames {
			srcs = append(srcs, in.gen(frameSize, uint64(100+i)))
		}
		for _, a := range algorithms {
			if a.maxLevel == 0 {
				m := measure(t, a.make(0), srcs)
				logMeasurement(t, in.name, a.make(0), m, frames*frameSize)
				if m.ratio != 1 {
					t.Errorf("%s %s: ratio %.3f, want 1", in.name, a.name, m.ratio)
				}
				continue
			}
			levels := []int{a.minLevel, a.maxLevel}
			if full {
				levels = levels[:0]
				for l := a.minLevel; l <= a.maxLevel; l++ {
					levels = append(levels, l)
				}
			}
			got := map[int]measurement{}
			for _, l := range levels {
				c := a.make(l)
				m := measure(t, c, srcs)
				got[l] = m
				logMeasurement(t, in.name, c, m, frames*frameSize)
				if m.ratio >= 1 {
					t.Errorf("%s %s: ratio %.3f, the frames did not shrink", in.name, c, m.ratio)
				}
			}
			lo, hi := got[a.minLevel], got[a.maxLevel]
			if hi.ratio >= lo.ratio {
				t.Errorf("%s %s: level %d ratio %.3f is no better than level %d ratio %.3f", in.name, a.name,
					a.maxLevel, hi.ratio, a.minLevel, lo.ratio)
			}
			if full && hi.compress <= lo.compress {
				t.Errorf("%s %s: level %d compressed in %v of CPU, no slower than level %d in %v", in.name, a.name,
					a.maxLevel, hi.compress, a.minLevel, lo.compress)
			}
		}
	}
}
