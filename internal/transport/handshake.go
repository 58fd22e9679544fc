package transport

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// ekmLabel names our use of the TLS exporter (RFC 8446 section 7.5), so
// the keying material is ours alone even if something else exports from
// the same session.
const ekmLabel = "backstream token v1"

// proofLabel starts every proof; the role that follows ("client" or
// "server", both six bytes) makes the two directions' proofs different, so
// a relay cannot reflect the dialer's proof back to it.
const proofLabel = "backstream token proof v1\x00"

// maxPurpose bounds the purpose string in a hello.
const maxPurpose = 256

// listenerPurpose is what a listener says it is for in its hello.
const listenerPurpose = "listener"

// plainTextReply is written to a client that speaks plain text to the
// listener, so someone poking the port with nc or curl sees what it is.
const plainTextReply = "backstream: this port speaks TLS with token authentication; use backstream send\n"

func tokenProof(token []byte, role string, ekm []byte) []byte {
	m := hmac.New(sha256.New, token)
	m.Write([]byte(proofLabel))
	m.Write([]byte(role))
	m.Write(ekm)
	return m.Sum(nil)
}

// handshake runs TLS, the token proofs and the hello on rawConn, all
// within opt's handshake timeout, and returns the authenticated Conn. On
// error rawConn is closed. A listener passes the connection's entry in its
// pre-authentication table: the deadline is then opt's pre-authentication
// timeout until the dialer's proof verifies, when the entry leaves the
// table and the rest of the handshake gets the handshake timeout.
func handshake(ctx context.Context, rawConn net.Conn, server bool, cfg *tls.Config, opt *Options, purpose, peer string, pre *pending) (*Conn, error) {
	timeout := opt.handshakeTimeout()
	if pre != nil {
		timeout = opt.preAuthTimeout()
	}
	if err := rawConn.SetDeadline(time.Now().Add(timeout)); err != nil {
		rawConn.Close()
		return nil, fmt.Errorf("setting the handshake deadline: %w", err)
	}
	// Cancelling ctx moves the deadline into the past, which interrupts
	// whatever read or write the handshake is blocked in.
	stop := context.AfterFunc(ctx, func() { _ = rawConn.SetDeadline(time.Unix(1, 0)) })
	dc := &deadlineConn{Conn: rawConn, stall: opt.stallTimeout(), idle: opt.idleTimeout(), pending: pre}
	var tc *tls.Conn
	if server {
		tc = tls.Server(dc, cfg)
	} else {
		tc = tls.Client(dc, cfg)
	}
	c := newConn(tc, dc, peer)
	err := c.authenticate(server, opt, purpose)
	if dc.pending == nil {
		timeout = opt.handshakeTimeout()
	}
	if !stop() && err == nil {
		err = errors.New("handshake interrupted")
	}
	if err != nil {
		rawConn.Close()
		var ne net.Error
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("handshake: %w (%v)", context.Cause(ctx), err)
		case errors.As(err, &ne) && ne.Timeout():
			return nil, fmt.Errorf("handshake timed out after %s: %w", timeout, err)
		}
		return nil, err
	}
	if err := rawConn.SetDeadline(time.Time{}); err != nil {
		rawConn.Close()
		return nil, fmt.Errorf("clearing the handshake deadline: %w", err)
	}
	dc.active = true
	c.lastWrite = time.Now()
	if every := opt.heartbeat(); every > 0 {
		go c.beat(every)
	}
	return c, nil
}

// authenticated is called on the listener once the dialer's proof
// verified: the connection leaves the pre-authentication table, so it no
// longer counts against its limits nor can be dropped, and the rest of the
// handshake gets the full handshake timeout.
func (c *Conn) authenticated(opt *Options) error {
	p := c.raw.pending
	if p == nil {
		return nil
	}
	c.raw.pending = nil
	if !p.authenticated() {
		return ErrDropped
	}
	if err := c.raw.Conn.SetDeadline(time.Now().Add(opt.handshakeTimeout())); err != nil {
		return fmt.Errorf("setting the handshake deadline: %w", err)
	}
	return nil
}

// authenticate is the protocol after TCP: TLS 1.3, then the dialer's
// proof, the listener's proof, the dialer's hello and the listener's hello.
// The listener sends its proof only once the dialer's verified, and says
// why before closing when it did not.
func (c *Conn) authenticate(server bool, opt *Options, purpose string) error {
	if err := c.tls.Handshake(); err != nil {
		return tlsError(err, server, opt)
	}
	cs := c.tls.ConnectionState()
	if cs.Version != tls.VersionTLS13 {
		return fmt.Errorf("TLS version 0x%04x negotiated, backstream requires TLS 1.3", cs.Version)
	}
	ekm, err := cs.ExportKeyingMaterial(ekmLabel, nil, 32)
	if err != nil {
		return fmt.Errorf("exporting TLS keying material: %w", err)
	}
	own, want := "client", "server"
	if server {
		own, want = want, own
	}
	myProof := tokenProof(opt.Token, own, ekm)
	peerProof := tokenProof(opt.Token, want, ekm)

	if !server {
		if err := c.writeLocked(typeAuth, myProof); err != nil {
			return fmt.Errorf("sending the token proof: %w", err)
		}
	}
	p, err := c.readHandshake(typeAuth, "token proof")
	if err != nil {
		return err
	}
	if !hmac.Equal(p, peerProof) {
		reason := "authentication failed: wrong token"
		if !server {
			reason += " (the listener's proof did not verify)"
		}
		// Best effort: the peer learns why, then the connection closes.
		_ = c.writeLocked(typeError, errorPayload(codeWrongToken, reason))
		_ = c.tls.Close()
		return fmt.Errorf("%w: the peer's proof did not verify (a different token, or a man in the middle)", ErrWrongToken)
	}
	if server {
		if err := c.authenticated(opt); err != nil {
			return err
		}
		if err := c.writeLocked(typeAuth, myProof); err != nil {
			return fmt.Errorf("sending the token proof: %w", err)
		}
	} else {
		if err := c.writeLocked(typeHello, helloPayload(opt.protocolVersion(), purpose)); err != nil {
			return fmt.Errorf("sending hello: %w", err)
		}
	}
	p, err = c.readHandshake(typeHello, "hello")
	if err != nil {
		return err
	}
	theirs, theirPurpose, err := parseHello(p)
	if err != nil {
		return err
	}
	c.purpose = theirPurpose
	if server {
		// Always answer with our version, so the dialer can name both.
		if err := c.writeLocked(typeHello, helloPayload(opt.protocolVersion(), listenerPurpose)); err != nil {
			return fmt.Errorf("sending hello: %w", err)
		}
	}
	if ours := opt.protocolVersion(); theirs != ours {
		which := "the peer's backstream"
		if ours < theirs {
			which = "this backstream"
		}
		return fmt.Errorf("%w: peer speaks protocol %d, this backstream speaks %d: upgrade %s", ErrProtocolVersion, theirs, ours, which)
	}
	return nil
}

// readHandshake reads one handshake frame, which must be of type want or
// an error from the peer.
func (c *Conn) readHandshake(want byte, what string) ([]byte, error) {
	typ, p, err := readFrame(c.tls, &c.hdr, nil, handshakeMax)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("reading the peer's %s: the peer closed the connection: %w", what, err)
		}
		return nil, fmt.Errorf("reading the peer's %s: %w", what, err)
	}
	switch typ {
	case want:
		return p, nil
	case typeError:
		return nil, parsePeerError(p)
	}
	return nil, fmt.Errorf("reading the peer's %s: got a message of type 0x%02x instead: not a backstream peer or a different protocol", what, typ)
}

// parseHello reads a hello's payload: the peer's protocol version and its
// purpose, made fit for a log line.
func parseHello(p []byte) (uint16, string, error) {
	if len(p) < 2 {
		return 0, "", fmt.Errorf("malformed hello of %d bytes", len(p))
	}
	return binary.BigEndian.Uint16(p), printable(string(p[2:]), maxPurpose), nil
}

func helloPayload(version uint16, purpose string) []byte {
	p := binary.BigEndian.AppendUint16(nil, version)
	return append(p, purpose...)
}

// tlsError says in words what a failed TLS handshake means for backstream.
func tlsError(err error, server bool, opt *Options) error {
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) {
		if server {
			if rh.Conn != nil {
				_, _ = rh.Conn.Write([]byte(plainTextReply))
			}
			return fmt.Errorf("not a TLS client (it sent %q): %w", rh.RecordHeader[:], err)
		}
		return fmt.Errorf("not a TLS server (it sent %q): %w", rh.RecordHeader[:], err)
	}
	var cv *tls.CertificateVerificationError
	if errors.As(err, &cv) {
		return fmt.Errorf("TLS handshake: the listener's certificate does not verify against CA file %s: %w", opt.CAFile, err)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("TLS handshake: the peer closed the connection: %w", err)
	}
	return fmt.Errorf("TLS handshake: %w", err)
}
