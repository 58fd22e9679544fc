package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// maxPendingHandshakes bounds the connections being authenticated or
// waiting for Accept at once; beyond it new connections wait in the
// kernel's backlog.
const maxPendingHandshakes = 64

// HandshakeError is the error Accept returns for one incoming connection
// that failed its handshake: not TLS, a wrong token, a different protocol
// version, silence until the timeout. The listener keeps serving; the
// caller logs the error and calls Accept again.
type HandshakeError struct {
	Remote net.Addr
	Err    error
}

// Error names the remote address and what went wrong.
func (e *HandshakeError) Error() string {
	return fmt.Sprintf("connection from %s: %v", e.Remote, e.Err)
}

// Unwrap gives errors.Is access to the cause, such as ErrWrongToken.
func (e *HandshakeError) Unwrap() error { return e.Err }

// Listener accepts authenticated connections. Handshakes run in the
// background, several at a time, so a client that connects and says
// nothing delays nobody else.
type Listener struct {
	ln      net.Listener
	cfg     *tls.Config
	opt     Options
	ctx     context.Context // cancelled by Close; aborts handshakes
	cancel  context.CancelFunc
	results chan acceptResult
	wg      sync.WaitGroup
}

type acceptResult struct {
	c   *Conn
	err error
}

// keepAlive tunes TCP keepalive so a dead peer host or a cut network is
// noticed in about the stall timeout even while no message is due; the
// kernel answers probes, so this adds no bytes to the message stream.
func keepAlive(opt *Options) net.KeepAliveConfig {
	s := opt.stallTimeout()
	if s <= 0 {
		return net.KeepAliveConfig{Enable: true}
	}
	step := max(s/4, time.Second)
	return net.KeepAliveConfig{Enable: true, Idle: step, Interval: step, Count: 3}
}

// Listen listens on addr ("host:port", ":4444") for backstream peers. ctx
// bounds only setting up the listener; Close stops it. Without CertFile and
// KeyFile it makes an ephemeral self-signed certificate.
func Listen(ctx context.Context, addr string, opt Options) (*Listener, error) {
	if err := opt.checkToken(); err != nil {
		return nil, err
	}
	cfg, err := serverConfig(&opt)
	if err != nil {
		return nil, err
	}
	lc := net.ListenConfig{KeepAliveConfig: keepAlive(&opt)}
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	lctx, cancel := context.WithCancel(context.Background())
	l := &Listener{ln: ln, cfg: cfg, opt: opt, ctx: lctx, cancel: cancel, results: make(chan acceptResult)}
	l.wg.Add(1)
	go l.serve()
	return l, nil
}

// Addr is the address the listener is bound to (with the real port when
// ":0" was asked for).
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Accept returns the next authenticated connection. For a connection that
// failed its handshake it returns a *HandshakeError and the listener goes
// on serving; any other error (ctx done, listener closed) is final.
//
//	for {
//		c, err := l.Accept(ctx)
//		var he *transport.HandshakeError
//		if errors.As(err, &he) {
//			log.Warn("rejected", "err", he)
//			continue
//		}
//		if err != nil {
//			return err
//		}
//		...
//	}
func (l *Listener) Accept(ctx context.Context) (*Conn, error) {
	select {
	case r := <-l.results:
		return r.c, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.ctx.Done():
		return nil, fmt.Errorf("listener on %s: %w", l.ln.Addr(), net.ErrClosed)
	}
}

// Close stops listening, aborts handshakes in progress and closes
// connections not yet returned by Accept. Connections already returned
// stay open.
func (l *Listener) Close() error {
	l.cancel()
	err := l.ln.Close()
	l.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (l *Listener) serve() {
	defer l.wg.Done()
	slots := make(chan struct{}, maxPendingHandshakes)
	var backoff time.Duration
	for {
		select {
		case slots <- struct{}{}:
		case <-l.ctx.Done():
			return
		}
		raw, err := l.ln.Accept()
		if err != nil {
			<-slots
			if l.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Running out of file descriptors and the like pass; retry
			// like net/http does rather than give up listening.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(backoff):
			case <-l.ctx.Done():
				return
			}
			continue
		}
		backoff = 0
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer func() { <-slots }()
			remote := raw.RemoteAddr()
			c, err := handshake(l.ctx, raw, true, l.cfg, &l.opt, listenerPurpose, remote.String())
			r := acceptResult{c: c}
			if err != nil {
				r.err = &HandshakeError{Remote: remote, Err: err}
			}
			select {
			case l.results <- r:
			case <-l.ctx.Done():
				if c != nil {
					c.Close()
				}
			}
		}()
	}
}

// Dial connects to the listener at addr and authenticates. purpose tells
// the listener what this connection is for ("control", "stream 3"); it
// reads it with Purpose. ctx bounds connecting and the handshake, which
// also end after opt's HandshakeTimeout; it does not bound the returned
// connection.
func Dial(ctx context.Context, addr, purpose string, opt Options) (*Conn, error) {
	if err := opt.checkToken(); err != nil {
		return nil, err
	}
	if len(purpose) > maxPurpose {
		return nil, fmt.Errorf("purpose of %d bytes is longer than %d", len(purpose), maxPurpose)
	}
	cfg, err := clientConfig(&opt, addr)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: opt.handshakeTimeout(), KeepAliveConfig: keepAlive(&opt)}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", addr, err)
	}
	c, err := handshake(ctx, raw, false, cfg, &opt, purpose, addr)
	if err != nil {
		return nil, fmt.Errorf("connection to %s: %w", addr, err)
	}
	return c, nil
}
