package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// A message on the wire is a 5-byte header, the type byte and the payload
// length (uint32 big endian), followed by the payload. The same framing
// carries the handshake, so a peer speaking another protocol version can
// still read our hello and our error messages.
const headerLen = 5

// MaxPayload is the largest payload WriteMessage sends and ReadMessage
// accepts: 256 MiB for a compressed frame plus 64 KiB for the caller's own
// headers around it.
const MaxPayload = 256<<20 + 64<<10

// Message types from 0xF0 up belong to the transport itself; callers use
// types below FirstReservedType.
const FirstReservedType = 0xF0

const (
	typeError byte = 0xF1 // payload: code byte, then a human-readable reason
	typeAuth  byte = 0xF2 // payload: the 32-byte token proof
	typeHello byte = 0xF3 // payload: protocol version (uint16 BE), then the purpose
	typeEnd   byte = 0xF4 // no payload: CloseWrite; no message follows
	// typeHeartbeat (no payload) says the peer is alive while it has
	// nothing else to send; ReadMessage skips it.
	typeHeartbeat byte = 0xF5
)

// handshakeMax bounds every frame read before the peer has authenticated,
// so an unauthenticated client cannot make us allocate more than this.
const handshakeMax = 4096

// growStep is the first allocation when a message does not fit the
// caller's buffer; further space is added as data arrives, so a header that
// lies about its length costs at most about twice the bytes really sent.
const growStep = 1 << 20

// frameError describes where in a message reading stopped; Conn turns it
// into a message naming the peer and tells a stall from an idle wait.
type frameError struct {
	typ      byte
	length   int // -1 while the header was incomplete
	got      int // bytes of the header, or of the payload once the header was read
	err      error
	tooLarge bool
}

func (e *frameError) Error() string {
	switch {
	case e.tooLarge:
		return fmt.Sprintf("message of type 0x%02x claims %d bytes, more than the limit of %d", e.typ, e.length, MaxPayload)
	case e.length < 0:
		return fmt.Sprintf("message header: got %d of %d bytes: %v", e.got, headerLen, e.err)
	default:
		return fmt.Sprintf("message of type 0x%02x: payload: got %d of %d bytes: %v", e.typ, e.got, e.length, e.err)
	}
}

func (e *frameError) Unwrap() error { return e.err }

// idle reports whether reading stopped before any byte of a message
// arrived, i.e. while waiting between messages rather than inside one.
func (e *frameError) idle() bool { return e.length < 0 && e.got == 0 }

// errTooLarge is wrapped by the error for a header whose length exceeds the limit.
var errTooLarge = errors.New("message too large")

// readFrame reads one message from r. The payload is read into buf when it
// fits (so callers that pass the previous payload back reuse it), else into
// a buffer grown as bytes arrive. A clean end of input before the first
// header byte returns io.EOF itself; anything else is a *frameError.
func readFrame(r io.Reader, hdr *[headerLen]byte, buf []byte, limit int) (byte, []byte, error) {
	n, err := io.ReadFull(r, hdr[:])
	if err != nil {
		if n == 0 && err == io.EOF {
			return 0, nil, io.EOF
		}
		return 0, nil, &frameError{length: -1, got: n, err: err}
	}
	typ := hdr[0]
	length := binary.BigEndian.Uint32(hdr[1:])
	if uint64(length) > uint64(limit) {
		return typ, nil, &frameError{typ: typ, length: int(length), tooLarge: true, err: errTooLarge}
	}
	size := int(length)
	if cap(buf) >= size {
		p := buf[:size]
		got, err := io.ReadFull(r, p)
		if err != nil {
			return typ, nil, &frameError{typ: typ, length: size, got: got, err: noEOF(err)}
		}
		return typ, p, nil
	}
	p := buf[:0]
	if cap(p) < min(size, growStep) {
		p = make([]byte, 0, min(size, growStep))
	}
	for len(p) < size {
		if len(p) == cap(p) {
			q := make([]byte, len(p), min(size, 2*cap(p)))
			copy(q, p)
			p = q
		}
		got, err := io.ReadFull(r, p[len(p):cap(p)])
		p = p[:len(p)+got]
		if err != nil {
			return typ, nil, &frameError{typ: typ, length: size, got: len(p), err: noEOF(err)}
		}
	}
	return typ, p, nil
}

// noEOF turns a plain EOF inside a message into ErrUnexpectedEOF, so no
// caller mistakes a truncated message for a clean end.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// putHeader writes the header for a payload of n bytes into b[:headerLen].
func putHeader(b []byte, typ byte, n int) {
	b[0] = typ
	binary.BigEndian.PutUint32(b[1:headerLen], uint32(n))
}
