package codec

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/klauspost/compress/gzip"
)

// gzip levels are deflate's 1 to 9, as in gzip and pigz.
const (
	gzipMinLevel     = 1
	gzipMaxLevel     = 9
	gzipDefaultLevel = 1
)

// Gzip is the gzip codec: one member per frame. It is here for portability
// (every system can `gzip -dc`); zstd is better on both speed and ratio.
// Get one from Parse: the zero value decompresses but has no level to
// compress with.
type Gzip struct{ level int }

func newGzip(level int) Codec { return Gzip{level: level} }

// Name returns "gzip".
func (Gzip) Name() string { return "gzip" }

// Level returns the level, 1 to 9.
func (g Gzip) Level() int { return g.level }

// String returns the spec, e.g. "gzip:6".
func (g Gzip) String() string { return spec("gzip", g.level) }

// Suffix returns ".gz".
func (Gzip) Suffix() string { return ".gz" }

// gzipEncoder is a pooled writer with the buffer it appends to.
type gzipEncoder struct {
	out appendWriter
	w   *gzip.Writer
}

// gzipWriters pools writers per level: a deflate writer carries large
// tables that are costly to allocate per frame.
var gzipWriters [gzipMaxLevel + 1]sync.Pool

var gzipReaders sync.Pool

// Compress appends one gzip member to dst.
func (g Gzip) Compress(dst, src []byte) ([]byte, error) {
	if err := checkSource("gzip", src); err != nil {
		return dst, err
	}
	if g.level < gzipMinLevel || g.level > gzipMaxLevel {
		return dst, fmt.Errorf("gzip: level %d out of range %d-%d", g.level, gzipMinLevel, gzipMaxLevel)
	}
	n := len(dst)
	e, _ := gzipWriters[g.level].Get().(*gzipEncoder)
	if e == nil {
		e = &gzipEncoder{}
		w, err := gzip.NewWriterLevel(&e.out, g.level)
		if err != nil {
			return dst, fmt.Errorf("gzip: level %d writer: %w", g.level, err)
		}
		e.w = w
	}
	e.out.b = dst
	e.w.Reset(&e.out)
	_, err := e.w.Write(src)
	if err == nil {
		err = e.w.Close()
	}
	out := e.out.b
	e.out.b = nil
	if err != nil {
		return out[:n], fmt.Errorf("gzip: compress %d bytes: %w", len(src), err)
	}
	gzipWriters[g.level].Put(e)
	return out, nil
}

// Decompress appends the content of the single gzip member src to dst,
// checking its CRC-32 and length trailer.
func (Gzip) Decompress(dst, src []byte, size int) ([]byte, error) {
	if err := checkSizes("gzip", size); err != nil {
		return dst, err
	}
	n := len(dst)
	grown, room := grow(dst, size)
	// bytes.Reader is an io.ByteReader, so the inflater reads exactly the
	// member's bytes and what is left in br afterwards is trailing data.
	br := bytes.NewReader(src)
	r, _ := gzipReaders.Get().(*gzip.Reader)
	var err error
	if r == nil {
		r, err = gzip.NewReader(br)
	} else {
		err = r.Reset(br)
	}
	if err != nil {
		return dst, corruptf("gzip", "member header: %v", err)
	}
	r.Multistream(false)
	err = readExactly("gzip", r, room)
	if err == nil && br.Len() > 0 {
		err = corruptf("gzip", "%d trailing bytes after the member end at offset %d", br.Len(), len(src)-br.Len())
	}
	if err != nil {
		return dst, err
	}
	gzipReaders.Put(r)
	return grown[:n+size], nil
}
