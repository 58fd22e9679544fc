package transport

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func frame(typ byte, payload []byte) []byte {
	b := make([]byte, headerLen, headerLen+len(payload))
	putHeader(b, typ, len(payload))
	return append(b, payload...)
}

func TestReadFrame(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789"), 300_000) // 3 MB: grows past growStep
	tests := []struct {
		name    string
		in      []byte
		limit   int
		typ     byte
		payload []byte
		wantErr error // matched with errors.Is; nil means success
		idle    bool  // the error happened before any byte
	}{
		{name: "empty payload", in: frame(7, nil), limit: 10, typ: 7, payload: []byte{}},
		{name: "small", in: frame(1, []byte("hello")), limit: 10, typ: 1, payload: []byte("hello")},
		{name: "at limit", in: frame(2, []byte("0123456789")), limit: 10, typ: 2, payload: []byte("0123456789")},
		{name: "over limit", in: frame(2, []byte("0123456789x")), limit: 10, wantErr: errTooLarge},
		{name: "huge claim", in: []byte{3, 0xff, 0xff, 0xff, 0xff}, limit: MaxPayload, wantErr: errTooLarge},
		{name: "clean end", in: nil, limit: 10, wantErr: io.EOF, idle: true},
		{name: "partial header", in: []byte{1, 0}, limit: 10, wantErr: io.ErrUnexpectedEOF},
		{name: "truncated payload", in: frame(1, []byte("hello"))[:8], limit: 10, wantErr: io.ErrUnexpectedEOF},
		{name: "header only", in: frame(1, []byte("hello"))[:5], limit: 10, wantErr: io.ErrUnexpectedEOF},
		{name: "large", in: frame(9, big), limit: MaxPayload, typ: 9, payload: big},
		{name: "truncated large", in: frame(9, big)[:2_000_000], limit: MaxPayload, wantErr: io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hdr [headerLen]byte
			typ, p, err := readFrame(bytes.NewReader(tt.in), &hdr, nil, tt.limit)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				var fe *frameError
				if errors.As(err, &fe) && fe.idle() != tt.idle {
					t.Errorf("idle = %v, want %v (%v)", fe.idle(), tt.idle, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if typ != tt.typ || !bytes.Equal(p, tt.payload) {
				t.Fatalf("got type %d, %d bytes; want type %d, %d bytes", typ, len(p), tt.typ, len(tt.payload))
			}
		})
	}
}

// TestReadFrameReusesBuffer checks that a payload that fits the caller's
// buffer lands in it, and one that does not gets a new buffer.
func TestReadFrameReusesBuffer(t *testing.T) {
	var hdr [headerLen]byte
	buf := make([]byte, 100)
	_, p, err := readFrame(bytes.NewReader(frame(1, []byte("abc"))), &hdr, buf, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if &p[0] != &buf[0] {
		t.Error("payload that fits was not read into the caller's buffer")
	}
	_, p, err = readFrame(bytes.NewReader(frame(1, make([]byte, 500))), &hdr, buf, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != 500 || &p[0] == &buf[0] {
		t.Errorf("payload of 500 bytes: len %d, same buffer %v", len(p), &p[0] == &buf[0])
	}
}

// FuzzReadFrame feeds arbitrary bytes to the framing: it must not panic,
// must never return more payload than was sent, must allocate in
// proportion to what arrived (not to what the header claims), and a
// message it accepts must re-encode to the bytes it read.
func FuzzReadFrame(f *testing.F) {
	f.Add(frame(1, []byte("hello")))
	f.Add(frame(0, nil))
	f.Add([]byte{1, 0x10, 0, 0, 0, 'x'})
	f.Add([]byte{typeError, 0, 0, 0, 2, 1, 'a'})
	f.Add(append(frame(2, []byte("ab")), frame(3, []byte("cd"))...))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		var hdr [headerLen]byte
		var buf []byte
		consumed := 0
		for {
			typ, p, err := readFrame(r, &hdr, buf, MaxPayload)
			if err != nil {
				var fe *frameError
				if err != io.EOF && !errors.As(err, &fe) {
					t.Fatalf("error of type %T: %v", err, err)
				}
				return
			}
			if cap(p) > 2*len(in)+growStep {
				t.Fatalf("payload buffer of %d bytes for %d bytes of input", cap(p), len(in))
			}
			n := headerLen + len(p)
			if !bytes.Equal(frame(typ, p), in[consumed:consumed+n]) {
				t.Fatalf("message at %d does not re-encode to its input", consumed)
			}
			consumed += n
			buf = p
		}
	})
}
