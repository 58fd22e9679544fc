package xbstream

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func fuzzSeeds(f *testing.F) {
	f.Add(writeAll(f, allTypes()))
	for _, c := range allTypes() {
		f.Add(mustAppend(f, nil, c))
	}
	f.Add(perconaSparse("t.ibd", 0, []uint32{0, 8}, []uint32{4, 4}, []byte("abcdefgh")))
	f.Add(rawPayload("a", 0, []byte("x"), 0))
	f.Add([]byte(Magic))
}

func FuzzDecodeChunk(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		c, n, err := DecodeChunk(b)
		if err != nil {
			if n != 0 {
				t.Fatalf("error %v with length %d", err, n)
			}
			return
		}
		if n <= 0 || n > len(b) {
			t.Fatalf("length %d out of range for %d bytes", n, len(b))
		}
		// A decoded chunk re-encodes to the same bytes.
		enc, err := AppendChunk(nil, &c)
		if err != nil {
			t.Fatalf("decoded chunk %+v does not re-encode: %v", c, err)
		}
		if !bytes.Equal(enc, b[:n]) {
			t.Fatalf("re-encoding differs:\n got %q\nwant %q", enc, b[:n])
		}
	})
}

func FuzzReader(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		rd := NewReader(bytes.NewReader(b))
		v := NewValidator()
		var total int64
		for {
			c, raw, err := rd.Next()
			if err == io.EOF {
				if total != int64(len(b)) {
					t.Fatalf("clean end after %d of %d bytes", total, len(b))
				}
				if err := v.End(); err != nil {
					t.Fatalf("Reader ended cleanly but Validator: %v", err)
				}
				return
			}
			if err != nil {
				if rd.Offset() != total {
					t.Fatalf("Offset %d, want %d", rd.Offset(), total)
				}
				if total == int64(len(b)) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("error at the end of input does not match io.ErrUnexpectedEOF: %v", err)
				}
				return
			}
			// The Reader and DecodeChunk + Validator agree.
			c2, n, derr := DecodeChunk(b[total:])
			if derr != nil || n != len(raw) || !bytes.Equal(raw, b[total:total+int64(n)]) || c2.Path != c.Path {
				t.Fatalf("Reader chunk %+v disagrees with DecodeChunk: %+v, %d, %v", c, c2, n, derr)
			}
			if err := v.Check(&c); err != nil {
				t.Fatalf("Reader accepted a chunk the Validator refuses: %v", err)
			}
			total += int64(len(raw))
		}
	})
}
