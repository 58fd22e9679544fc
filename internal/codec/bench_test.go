package codec

import (
	"fmt"
	"testing"
)

// benchFrameSize is a typical frame: a few MiB, as the archive writes them.
const benchFrameSize = 4 << 20

// benchInputs are the kinds of data backups carry.
var benchInputs = []struct {
	name string
	data func() []byte
}{
	{"innodb", func() []byte { return innodbLike(benchFrameSize, 42) }},
	{"tsv", func() []byte { return textLines(benchFrameSize, 43) }},
}

// BenchmarkCompress measures each codec and level on one frame at a time,
// in parallel across GOMAXPROCS goroutines as the archive uses it (run with
// -cpu 1,2 to see the scaling); ratio is compressed/original.
func BenchmarkCompress(b *testing.B) {
	for _, in := range benchInputs {
		src := in.data()
		for _, c := range allCodecs() {
			b.Run(fmt.Sprintf("%s/%s", in.name, c), func(b *testing.B) {
				frame, err := c.Compress(nil, src)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(len(frame))/float64(len(src)), "ratio")
				b.SetBytes(int64(len(src)))
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					buf := make([]byte, 0, len(src)+len(src)/8)
					for pb.Next() {
						if _, err := c.Compress(buf[:0], src); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

// BenchmarkDecompress measures decoding one frame at a time, in parallel.
func BenchmarkDecompress(b *testing.B) {
	for _, in := range benchInputs {
		src := in.data()
		for _, c := range allCodecs() {
			b.Run(fmt.Sprintf("%s/%s", in.name, c), func(b *testing.B) {
				frame, err := c.Compress(nil, src)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(src)))
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					buf := make([]byte, 0, len(src)+64)
					for pb.Next() {
						if _, err := c.Decompress(buf[:0], frame, len(src)); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}
