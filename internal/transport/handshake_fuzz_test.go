package transport

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// FuzzParseHandshake feeds arbitrary payloads to the parsers of the
// handshake's hello and of a peer's error message: no panic, the text kept
// is bounded and fit for a terminal, and a well-formed hello reads back as
// written.
func FuzzParseHandshake(f *testing.F) {
	f.Add(helloPayload(ProtocolVersion, "control"))
	f.Add(helloPayload(2, "stream 3 20260101T000000Z-abcd"))
	f.Add([]byte{0})
	f.Add(errorPayload(codeWrongToken, "authentication failed: wrong token"))
	f.Add([]byte{codeVersion, 0xff, 0xfe, '\n', 0x1b, '['})
	f.Fuzz(func(t *testing.T, p []byte) {
		fit := func(what, s string, limit int) {
			if len(s) > limit {
				t.Fatalf("%s of %d bytes, more than %d", what, len(s), limit)
			}
			if !utf8.ValidString(s) {
				t.Fatalf("%s %q is not UTF-8", what, s)
			}
			for _, r := range s {
				if !unicode.IsPrint(r) {
					t.Fatalf("%s %q has the unprintable %U", what, s, r)
				}
			}
		}
		v, purpose, err := parseHello(p)
		if (err != nil) != (len(p) < 2) {
			t.Fatalf("hello of %d bytes: %v", len(p), err)
		}
		if err == nil {
			fit("purpose", purpose, maxPurpose)
			if v != binary.BigEndian.Uint16(p) {
				t.Fatalf("version %d from %x", v, p[:2])
			}
			if raw := string(p[2:]); len(raw) <= maxPurpose && raw == purpose && !bytes.Equal(helloPayload(v, purpose), p) {
				t.Fatalf("hello %x does not re-encode", p)
			}
		}
		pe := parsePeerError(p)
		fit("reason", pe.Reason, maxReason)
		if err := pe.Unwrap(); err != nil && !errors.Is(err, ErrWrongToken) && !errors.Is(err, ErrProtocolVersion) {
			t.Fatalf("peer error unwraps to %v", err)
		}
	})
}

// FuzzHandshake runs the real handshake, on the listener's side and on
// the dialer's, against a peer that completes TLS 1.3 and then sends
// arbitrary bytes where the token proof, hello or error belong. Nobody
// without the token gets through: the handshake must fail, cleanly and
// within its deadline, never panic or authenticate.
func FuzzHandshake(f *testing.F) {
	opt := Options{Token: testToken, HandshakeTimeout: 5 * time.Second}
	scfg, err := serverConfig(&opt)
	if err != nil {
		f.Fatal(err)
	}
	ccfg, err := clientConfig(&opt, "127.0.0.1:1")
	if err != nil {
		f.Fatal(err)
	}
	proof := make([]byte, 32)
	f.Add(true, append([]byte{typeAuth, 0, 0, 0, 32}, proof...))
	f.Add(false, append([]byte{typeAuth, 0, 0, 0, 32}, proof...))
	f.Add(false, append([]byte{typeError, 0, 0, 0, 6, codeWrongToken}, "wrong"...))
	f.Add(true, []byte{typeHello, 0, 0, 0, 2, 0, 1})
	f.Add(true, []byte{typeAuth, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, server bool, in []byte) {
		ours, theirs := net.Pipe()
		defer ours.Close()
		defer theirs.Close()
		go func() {
			// The hostile peer: TLS as it should be, then the fuzz input.
			var tc *tls.Conn
			if server {
				tc = tls.Client(theirs, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13})
			} else {
				tc = tls.Server(theirs, scfg)
			}
			_ = theirs.SetDeadline(time.Now().Add(5 * time.Second))
			if tc.Handshake() != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, tc) }() // what we send, unread, would block net.Pipe
			_, _ = tc.Write(in)
			_ = tc.Close()
		}()
		cfg := ccfg
		if server {
			cfg = scfg
		}
		var pre *pending
		if server {
			pre = newPreAuthTable(maxPreAuth, maxPreAuthPerAddr).add(ours.RemoteAddr(), func(error) {})
		}
		c, err := handshake(context.Background(), ours, server, cfg, &opt, "control", "fuzz peer", pre)
		if err == nil {
			c.Close()
			t.Fatalf("a peer without the token was authenticated by %x", in)
		}
	})
}
