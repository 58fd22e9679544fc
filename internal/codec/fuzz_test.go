package codec

import (
	"bytes"
	"errors"
	"testing"
)

// fuzzDecompress checks that Decompress never panics, never returns success
// with the wrong length, and reports every failure as ErrCorrupt.
func fuzzDecompress(f *testing.F, c Codec) {
	for i, seed := range [][]byte{nil, []byte("a"), textLines(3000, 1), innodbLike(4<<10, 2), make([]byte, 20<<10)} {
		frame, err := c.Compress(nil, seed)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(frame, uint32(len(seed)))
		if len(frame) > 8 {
			f.Add(frame[:len(frame)-i-1], uint32(len(seed)))
		}
	}
	f.Fuzz(func(t *testing.T, frame []byte, size uint32) {
		// Keep sizes small so that the fuzzer explores formats, not memory.
		n := int(size % (1 << 17))
		out, err := c.Decompress([]byte("pre"), frame, n)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s: error %v does not wrap ErrCorrupt", c, err)
			}
			if string(out) != "pre" {
				t.Fatalf("%s: dst changed on error", c)
			}
			return
		}
		if len(out) != 3+n || string(out[:3]) != "pre" {
			t.Fatalf("%s: success with %d bytes, expected %d after the prefix", c, len(out)-3, n)
		}
		// What decodes must also decode again the same way (no state
		// leaking between pooled decoders).
		again, err := c.Decompress(nil, frame, n)
		if err != nil || !bytes.Equal(again, out[3:]) {
			t.Fatalf("%s: second decode differs: %v", c, err)
		}
	})
}

func FuzzDecompressZstd(f *testing.F) { fuzzDecompress(f, Zstd{zstdDefaultLevel}) }
func FuzzDecompressLZ4(f *testing.F)  { fuzzDecompress(f, LZ4{lz4DefaultLevel}) }
func FuzzDecompressGzip(f *testing.F) { fuzzDecompress(f, Gzip{gzipDefaultLevel}) }
func FuzzDecompressNone(f *testing.F) { fuzzDecompress(f, None{}) }

// FuzzRoundTrip checks that every algorithm gives back what it was given.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{}, uint8(0))
	f.Add(textLines(5000, 3), uint8(1))
	f.Add(make([]byte, 1000), uint8(2))
	codecs := append(defaultCodecs(), Zstd{2}, LZ4{3}, Gzip{6})
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		c := codecs[int(which)%len(codecs)]
		roundTrip(t, c, data)
	})
}
