package xbstream

import (
	"fmt"
	"io"
)

// Writer writes chunks to w. It validates every chunk, alone and against
// the chunks before it (see Validator), so that it never writes a stream
// that mbstream would apply wrongly. After a failed write of w every call
// returns that error.
type Writer struct {
	w   io.Writer
	v   *Validator
	hdr []byte
	buf []byte // WriteFile's read buffer, kept between calls
	err error
}

// NewWriter returns a Writer writing to w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: w, v: NewValidator()}
}

// WriteChunk validates c and writes its encoding: the header, then the
// payload straight from c.Payload (no copy).
func (w *Writer) WriteChunk(c *Chunk) error {
	if w.err != nil {
		return w.err
	}
	if err := w.v.Check(c); err != nil {
		return err
	}
	w.hdr = appendHeader(w.hdr[:0], c)
	if _, err := w.w.Write(w.hdr); err != nil {
		w.err = fmt.Errorf("xbstream: writing chunk %v for %q: %w", c.Type, c.Path, err)
		return w.err
	}
	if len(c.Payload) > 0 {
		if _, err := w.w.Write(c.Payload); err != nil {
			w.err = fmt.Errorf("xbstream: writing payload of %q at file offset %d: %w", c.Path, c.Offset, err)
			return w.err
		}
	}
	return nil
}

// WriteFile writes r as path: payload chunks of at most chunkSize bytes at
// increasing offsets, then an E chunk. An empty r gives the E chunk alone,
// as mariabackup writes an empty file.
func (w *Writer) WriteFile(path string, r io.Reader, chunkSize int) error {
	if chunkSize <= 0 || chunkSize > maxPayloadLen {
		return fmt.Errorf("xbstream: writing %q: chunk size %d is not in 1..%d", path, chunkSize, maxPayloadLen)
	}
	if cap(w.buf) < chunkSize {
		w.buf = make([]byte, chunkSize)
	}
	buf := w.buf[:chunkSize]
	var off uint64
	for {
		n, err := fill(r, buf)
		if n > 0 {
			c := Chunk{Type: TypePayload, Path: path, Offset: off, Payload: buf[:n]}
			if werr := w.WriteChunk(&c); werr != nil {
				return werr
			}
			off += uint64(n)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("xbstream: reading %q at offset %d: %w", path, off, err)
		}
	}
	return w.WriteChunk(&Chunk{Type: TypeEOF, Path: path})
}

// fill reads until buf is full or r fails. Unlike io.ReadFull it passes on
// io.EOF alone as the end of r: an io.ErrUnexpectedEOF from r (a truncated
// decompressor, say) is an error, never a shorter file.
func fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
