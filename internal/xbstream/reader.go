package xbstream

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// readBufSize is the bufio size for headers; payloads larger than it are
// read straight into their chunk's buffer.
const readBufSize = 64 << 10

// exactAllocLen is the largest payload whose buffer is allocated at the size
// the header claims. Longer claims are read in growing steps, so a forged
// length costs memory only in proportion to the bytes that really follow.
const exactAllocLen = 16 << 20

// maxHeaderLen is the longest non-payload part of any chunk (a rename with
// two paths of the maximal length).
const maxHeaderLen = fixedLen + 2*(MaxPathLen-1) + renameLenSize

// Reader reads a stream chunk by chunk, validating everything (DecodeChunk +
// Validator).
type Reader struct {
	// Alloc, if set, provides the buffer for each chunk (len 0, cap at least
	// n) instead of a fresh allocation, so a caller can recycle buffers it
	// is done with. It is not used for payloads over 16 MiB, whose length
	// is only trusted as the bytes arrive.
	Alloc func(n int) []byte

	br  *bufio.Reader
	v   *Validator
	off int64
	err error // sticky
	hdr [maxHeaderLen]byte
}

// NewReader returns a Reader reading the stream from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, readBufSize), v: NewValidator()}
}

// Offset returns the number of bytes consumed so far: the stream offset of
// the next chunk.
func (r *Reader) Offset() int64 { return r.off }

// Next returns the next chunk and its raw encoded bytes; c.Payload aliases
// raw. raw is freshly allocated (or taken from Alloc) for each call: the
// caller may keep it.
//
// It returns io.EOF at a clean end of stream (at a chunk boundary, all files
// ended). A stream that ends inside a chunk or with open files is an error
// (io.ErrUnexpectedEOF wrapped, with the offset and path). Errors carry the
// stream byte offset of the bad chunk and the path. After an error every
// call returns the same error.
func (r *Reader) Next() (c Chunk, raw []byte, err error) {
	if r.err != nil {
		return Chunk{}, nil, r.err
	}
	c, raw, err = r.next()
	if err != nil {
		if err != io.EOF {
			err = fmt.Errorf("xbstream: stream offset %d: %w", r.off, err)
		}
		r.err = err
		return Chunk{}, nil, err
	}
	r.off += int64(len(raw))
	return c, raw, nil
}

// next reads one chunk; errors are unprefixed.
func (r *Reader) next() (Chunk, []byte, error) {
	h := r.hdr[:]
	n, err := io.ReadFull(r.br, h[:fixedLen])
	if err == io.EOF {
		if len(r.v.open) > 0 {
			return Chunk{}, nil, r.v.openErr()
		}
		return Chunk{}, nil, io.EOF
	}
	if err != nil && err != io.ErrUnexpectedEOF {
		return Chunk{}, nil, fmt.Errorf("reading chunk header: %w", err)
	}
	_, t, pathLen, perr := parseFixed(h[:n])
	if perr != nil {
		return Chunk{}, nil, perr
	}
	hl := fixedLen + pathLen + extraLen(t)
	if err := r.fill(h, fixedLen, hl); err != nil {
		return Chunk{}, nil, err
	}
	var payloadLen uint64
	switch t {
	case TypeRename:
		newLen := binary.LittleEndian.Uint32(h[hl-renameLenSize:])
		if newLen < MaxPathLen {
			if err := r.fill(h, hl, hl+int(newLen)); err != nil {
				return Chunk{}, nil, err
			}
			hl += int(newLen)
		} // else decode reports the bad length
	case TypePayload:
		payloadLen = binary.LittleEndian.Uint64(h[fixedLen+pathLen:])
		if payloadLen > maxPayloadLen {
			payloadLen = 0 // decode reports the bad length
		}
	}
	raw, sum, err := r.readRaw(h[:hl], int(payloadLen))
	if err != nil {
		return Chunk{}, nil, err
	}
	c, cn, err := decodeSummed(raw, &sum)
	if err != nil {
		return Chunk{}, nil, err
	}
	if cn != len(raw) {
		return Chunk{}, nil, fmt.Errorf("chunk %v for %q: decoded %d bytes of %d", c.Type, c.Path, cn, len(raw))
	}
	if c.Type == TypeSeek {
		next, err := r.br.Peek(len(Magic))
		if err != nil && err != io.EOF {
			return Chunk{}, nil, fmt.Errorf("chunk S for %q: reading what follows: %w", c.Path, err)
		}
		if err := checkAfterSeek(next, c.Path); err != nil {
			return Chunk{}, nil, err
		}
	}
	if err := r.v.check(&c); err != nil {
		return Chunk{}, nil, err
	}
	return c, raw, nil
}

// fill reads h[from:to] from the stream; a short read is a truncated chunk,
// named by its path when the path is already in h.
func (r *Reader) fill(h []byte, from, to int) error {
	n, err := io.ReadFull(r.br, h[from:to])
	if err == nil {
		return nil
	}
	if err != io.EOF && err != io.ErrUnexpectedEOF {
		return fmt.Errorf("reading chunk header: %w", err)
	}
	return r.truncatedAt(h[:from+n], to)
}

// truncatedAt builds the error for a chunk cut after the bytes in got, when
// need bytes were expected.
func (r *Reader) truncatedAt(got []byte, need int) error {
	_, what := decodePrefix(got)
	return fmt.Errorf("%s: need %d bytes, have %d: %w", what, need, len(got), io.ErrUnexpectedEOF)
}

// decodePrefix describes a partial chunk for an error message.
func decodePrefix(got []byte) (Type, string) {
	if len(got) < fixedLen {
		return 0, "chunk header truncated"
	}
	t := Type(got[9])
	pathLen := int(binary.LittleEndian.Uint32(got[10:14]))
	if len(got) < fixedLen+pathLen {
		return t, fmt.Sprintf("chunk %v truncated in its path", t)
	}
	return t, fmt.Sprintf("chunk %v for %q truncated", t, got[fixedLen:fixedLen+pathLen])
}

// crcStep is how much payload is read before it is checksummed: small enough
// to still be in the CPU cache, so the checksum costs no second trip to memory.
const crcStep = 256 << 10

// readRaw allocates the chunk's buffer, copies the header in and reads the
// payload straight into it, checksumming it as it arrives.
func (r *Reader) readRaw(h []byte, payloadLen int) ([]byte, uint32, error) {
	total := len(h) + payloadLen
	var raw []byte
	switch {
	case payloadLen <= exactAllocLen && r.Alloc != nil:
		raw = r.Alloc(total)[:len(h)]
	case payloadLen <= exactAllocLen:
		raw = make([]byte, len(h), total)
	default:
		raw = make([]byte, len(h), len(h)+exactAllocLen)
	}
	copy(raw, h)
	var sum uint32
	for len(raw) < total {
		if len(raw) == cap(raw) {
			raw = append(raw, 0)[:len(raw)]
		}
		end := min(cap(raw), total, len(raw)+crcStep)
		n, err := io.ReadFull(r.br, raw[len(raw):end])
		sum = crc32.Update(sum, crc32.IEEETable, raw[len(raw):len(raw)+n])
		raw = raw[:len(raw)+n]
		if err != nil {
			return nil, 0, r.payloadErr(raw, total, err)
		}
	}
	return raw, sum, nil
}

func (r *Reader) payloadErr(got []byte, need int, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return r.truncatedAt(got, need)
	}
	_, what := decodePrefix(got)
	return fmt.Errorf("%s: reading payload: %w", what, err)
}
