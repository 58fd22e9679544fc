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

// maxReportsPerSecond bounds the failed handshakes Accept reports one by
// one, so a flood cannot flood the log too; the others are counted in the
// next one reported.
const maxReportsPerSecond = 10

// HandshakeError is the error Accept returns for one incoming connection
// that failed its handshake: not TLS, a wrong token, a different protocol
// version, silence until the timeout. The listener keeps serving; the
// caller logs the error and calls Accept again.
type HandshakeError struct {
	Remote net.Addr
	Err    error
	// Unreported counts the connections that failed since the last one
	// reported and were not reported one by one (Accept reports at most
	// maxReportsPerSecond a second, and none while nobody calls it).
	Unreported int
}

// Error names the remote address and what went wrong.
func (e *HandshakeError) Error() string {
	s := fmt.Sprintf("connection from %s: %v", e.Remote, e.Err)
	if e.Unreported > 0 {
		s += fmt.Sprintf(" (and %d more refused connections before it, not reported one by one)", e.Unreported)
	}
	return s
}

// Unwrap gives errors.Is access to the cause, such as ErrWrongToken.
func (e *HandshakeError) Unwrap() error { return e.Err }

// Listener accepts authenticated connections. Handshakes run in the
// background, one goroutine each, so a client that connects and says
// nothing delays nobody else; connections that have not authenticated are
// bounded in number and time (see DefaultPreAuthTimeout), and the
// listener never stops accepting, so a flood of them cannot keep an honest
// sender out.
type Listener struct {
	ln      net.Listener
	cfg     *tls.Config
	opt     Options
	ctx     context.Context // cancelled by Close; aborts handshakes
	cancel  context.CancelFunc
	results chan acceptResult // authenticated connections
	rejects chan *HandshakeError
	pre     *preAuthTable
	wg      sync.WaitGroup

	rmu        sync.Mutex
	window     time.Time // start of the current second of reports
	reported   int       // failed handshakes reported in it
	unreported int       // failed handshakes not reported since the last one
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
	l := &Listener{ln: ln, cfg: cfg, opt: opt, ctx: lctx, cancel: cancel, results: make(chan acceptResult),
		rejects: make(chan *HandshakeError, maxReportsPerSecond), pre: newPreAuthTable(maxPreAuth, maxPreAuthPerAddr)}
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
	if l.ctx.Err() != nil {
		return nil, fmt.Errorf("listener on %s: %w", l.ln.Addr(), net.ErrClosed)
	}
	select {
	case r := <-l.results:
		return r.c, r.err
	case he := <-l.rejects:
		return nil, he
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
	var backoff time.Duration
	for {
		raw, err := l.ln.Accept()
		if err != nil {
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
		remote := raw.RemoteAddr()
		ctx, cancel := context.WithCancelCause(l.ctx)
		p := l.pre.add(remote, cancel)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer cancel(nil)
			c, err := handshake(ctx, raw, true, l.cfg, &l.opt, listenerPurpose, remote.String(), p)
			l.pre.remove(p)
			if err != nil {
				if l.ctx.Err() == nil { // not aborted by Close
					l.reject(&HandshakeError{Remote: remote, Err: err})
				}
				return
			}
			select {
			case l.results <- acceptResult{c: c}:
			case <-l.ctx.Done():
				c.Close()
			}
		}()
	}
}

// reject hands a failed handshake to Accept without ever waiting: a
// handshake that failed holds nothing, so a flood of them must not pile up
// goroutines while nobody calls Accept (during a transfer). Beyond
// maxReportsPerSecond, or while Accept is not called, they are counted
// instead, and the count goes with the next one reported.
func (l *Listener) reject(he *HandshakeError) {
	l.rmu.Lock()
	defer l.rmu.Unlock()
	if now := time.Now(); now.Sub(l.window) >= time.Second {
		l.window, l.reported = now, 0
	}
	if l.reported < maxReportsPerSecond {
		he.Unreported = l.unreported
		select {
		case l.rejects <- he:
			l.reported++
			l.unreported = 0
			return
		default:
		}
	}
	l.unreported++
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
	c, err := handshake(ctx, raw, false, cfg, &opt, purpose, addr, nil)
	if err != nil {
		return nil, fmt.Errorf("connection to %s: %w", addr, err)
	}
	return c, nil
}
