// Package transport provides authenticated, encrypted connections between
// two backstream processes and a small message framing on top of them. It
// knows nothing of backups: a sender dials one connection per stream plus a
// control connection, a receiver listens and accepts them.
//
// # Security
//
// Every connection is TLS 1.3. By default the listener makes an ephemeral
// self-signed certificate at start and the dialer does not verify it;
// instead both ends prove that they know the shared token, bound to this
// very TLS session: each sends HMAC-SHA256(token, label || role || EKM)
// where EKM is the session's exported keying material (RFC 8446 section
// 7.5). A relay that terminates TLS on both sides has two sessions with
// different keying material, so proofs it forwards do not verify. The
// dialer speaks first; the listener answers with its own proof only after
// the dialer's checked out, so a client without the token learns nothing
// about it, and a listener without the token cannot impersonate the
// receiver to a sender.
//
// What this protects against, plainly: anyone who does not know the token,
// whether a passive eavesdropper, a stray client, or an active man in the
// middle, can neither read the data nor take part. Anyone who knows the
// token can act as either end, including as a man in the middle that
// terminates TLS on both sides and computes fresh proofs for each; the
// token is the only secret in the default mode. With CertFile/KeyFile on
// the listener and CAFile on the dialer (a site's own PKI), the dialer also
// verifies the listener's certificate chain and host name, which stops a
// token holder who has no certificate from that CA; the token proof still
// runs as a second check.
//
// # Messages
//
// A message is a type byte and a payload of up to MaxPayload bytes. Types
// from FirstReservedType up belong to the transport. ReadMessage returns
// io.EOF only after the peer's CloseWrite, which sends an end-of-stream
// message; a connection closed without it (the peer failed and closed, was
// killed, or the network cut it), or cut inside a message, is an error, so
// truncation is never mistaken for the end.
//
// # Timeouts
//
// The handshake (TCP connect, TLS, proofs, hello) is bounded by
// HandshakeTimeout. A listener gives a connection only PreAuthTimeout
// (5 s by default) to prove the token, and holds at most 64 connections
// that have not, 8 per source address, dropping the one silent longest to
// make room for a new one (see DefaultPreAuthTimeout for why): a flood of
// connections that never authenticate cannot keep a sender out. After the
// handshake, every write and every read inside a message
// must make progress within StallTimeout: deadlines are refreshed as bytes
// move, so a large message on a slow link is fine but a peer that stops
// for StallTimeout is an error. Waiting for the next message is bounded
// by IdleTimeout (DefaultIdleTimeout, 2 minutes): a peer with nothing to
// say (a sender whose mariabackup scans a large tablespace for changes, a
// receiver preparing what it received) still sends a heartbeat whenever it
// has written nothing for Heartbeat (10 seconds), until its CloseWrite, so
// only a peer process that stopped (SIGSTOP, a hang of the whole process)
// or lost its network goes silent; TCP keepalive probes, tuned to
// StallTimeout, would miss a stopped process, whose kernel still answers
// them.
package transport

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// ProtocolVersion is the version this backstream speaks in the hello. Both
// ends must speak the same one.
// Version 2 added heartbeats, which a version 1 peer would refuse; version 3
// made the receiver's result a typed outcome (internal/remote's message R),
// which a version 2 sender would not read; version 4 added the stored
// backup sent in part (the receiver's acceptance says what to send, each
// frame's record its offset), which a version 3 peer would misread.
const ProtocolVersion uint16 = 4

// MinTokenLen is the shortest token accepted, in bytes.
const MinTokenLen = 16

// TokenEnv is the environment variable LoadToken reads when no file is given.
const TokenEnv = "BACKSTREAM_TOKEN"

// Default timeouts, used where Options leaves a timeout zero.
const (
	DefaultHandshakeTimeout = 15 * time.Second
	DefaultStallTimeout     = 60 * time.Second
	// DefaultIdleTimeout is twelve heartbeats: a peer is given up only
	// when a dozen in a row failed to come, which no scheduling hiccup or
	// busy link explains.
	DefaultIdleTimeout = 2 * time.Minute
	DefaultHeartbeat   = 10 * time.Second
)

// Options configures both ends of a connection. The same Options may be
// given to Listen and Dial: each side uses the fields that apply to it.
type Options struct {
	// Token is the shared secret; at least MinTokenLen bytes. Required.
	Token []byte

	// CertFile and KeyFile (PEM) replace the listener's ephemeral
	// self-signed certificate. Listener only.
	CertFile, KeyFile string
	// CAFile (PEM) makes the dialer verify the listener's certificate chain
	// against these CAs and its name against ServerName. Dialer only.
	CAFile string
	// ServerName is the name the listener's certificate must carry when
	// CAFile is set; empty means the host part of the dialed address.
	ServerName string

	// HandshakeTimeout bounds connecting and the whole handshake; zero
	// means DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// PreAuthTimeout bounds, on the listener, the time from accepting a
	// connection to its verified token proof; zero means
	// DefaultPreAuthTimeout. It is never longer than HandshakeTimeout.
	PreAuthTimeout time.Duration
	// StallTimeout bounds how long a write, or a read inside a message,
	// may go without progress; zero means DefaultStallTimeout, negative
	// means no limit.
	StallTimeout time.Duration
	// IdleTimeout bounds the wait for the next message (the peer's
	// heartbeats count); zero means DefaultIdleTimeout, negative means no
	// limit.
	IdleTimeout time.Duration
	// Heartbeat is how long this end may write nothing before it sends a
	// heartbeat; zero means DefaultHeartbeat, negative means none (tests
	// of a silent peer).
	Heartbeat time.Duration

	// version overrides ProtocolVersion in tests.
	version uint16
}

func (o *Options) handshakeTimeout() time.Duration {
	if o.HandshakeTimeout > 0 {
		return o.HandshakeTimeout
	}
	return DefaultHandshakeTimeout
}

func (o *Options) preAuthTimeout() time.Duration {
	d := DefaultPreAuthTimeout
	if o.PreAuthTimeout > 0 {
		d = o.PreAuthTimeout
	}
	return min(d, o.handshakeTimeout())
}

func (o *Options) stallTimeout() time.Duration { return limit(o.StallTimeout, DefaultStallTimeout) }

func (o *Options) idleTimeout() time.Duration { return limit(o.IdleTimeout, DefaultIdleTimeout) }

func (o *Options) heartbeat() time.Duration { return limit(o.Heartbeat, DefaultHeartbeat) }

// limit reads a duration option whose zero means def and whose negative
// means none (0).
func limit(v, def time.Duration) time.Duration {
	switch {
	case v > 0:
		return v
	case v < 0:
		return 0
	}
	return def
}

func (o *Options) protocolVersion() uint16 {
	if o.version != 0 {
		return o.version
	}
	return ProtocolVersion
}

func (o *Options) checkToken() error {
	if len(o.Token) < MinTokenLen {
		return fmt.Errorf("token is %d bytes, shorter than the minimum of %d", len(o.Token), MinTokenLen)
	}
	return nil
}

var (
	// ErrWrongToken means the peer's token proof did not verify, or the
	// peer said ours did not: the two ends have different tokens, or a man
	// in the middle is relaying the connection.
	ErrWrongToken = errors.New("authentication failed: wrong token")
	// ErrProtocolVersion means the two ends speak different protocol versions.
	ErrProtocolVersion = errors.New("protocol version mismatch")
	// ErrAborted is what reading a connection returns once this end has
	// aborted it (see Conn.Abort).
	ErrAborted = errors.New("this end aborted the connection: nothing more is read from it")
)

// LoadToken reads the shared token from file, or when file is empty from
// the environment variable BACKSTREAM_TOKEN. Surrounding white space (a
// trailing newline) is dropped. A file that group or others may access is
// refused, since the token is as good as a password; so is a token shorter
// than MinTokenLen. Tokens are never taken from the command line, where
// other users of the host could read them.
func LoadToken(file string) ([]byte, error) {
	if file == "" {
		v, ok := os.LookupEnv(TokenEnv)
		if !ok {
			return nil, fmt.Errorf("no token: no token file given and %s is not set", TokenEnv)
		}
		tok := []byte(strings.TrimSpace(v))
		if len(tok) < MinTokenLen {
			return nil, fmt.Errorf("token from %s is %d bytes, shorter than the minimum of %d", TokenEnv, len(tok), MinTokenLen)
		}
		return tok, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	// Stat the open file, not the name, so the mode checked is the mode of
	// the bytes read.
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("token file %s is not a regular file", file)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("token file %s has mode %04o: group and others must have no access (chmod 600 %s)", file, perm, file)
	}
	raw, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("token file %s: %w", file, err)
	}
	tok := []byte(strings.TrimSpace(string(raw)))
	if len(tok) < MinTokenLen {
		return nil, fmt.Errorf("token file %s: token is %d bytes, shorter than the minimum of %d", file, len(tok), MinTokenLen)
	}
	return tok, nil
}

// GenerateToken returns a new random token: 32 bytes from crypto/rand,
// base64url without padding (43 characters).
func GenerateToken() string {
	var b [32]byte
	// crypto/rand.Read never fails since Go 1.24: it aborts the program
	// rather than return fewer random bytes.
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
