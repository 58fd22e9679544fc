package transport

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
)

// deadlineConn sits under TLS. It keeps the socket's deadlines moving
// while bytes move, so a deadline measures time without progress rather
// than the length of a whole message, and it batches: TLS reads and writes
// one 16 KiB record at a time, and a system call per record would cost
// more CPU than the AES-GCM itself. Read is only called under tls.Conn's
// input lock; writes go through wmu because tls.Conn's output lock does not
// cover the flush at the end of a message. Outside a batch nothing is held
// back, so Close (which tls.Conn calls to break a blocked write) needs no
// lock and no flush.
type deadlineConn struct {
	net.Conn
	active bool // false during the handshake, whose deadline is fixed
	// pending is the listener's record of a connection not yet
	// authenticated, told of every byte that arrives.
	pending *pending
	stall   time.Duration
	idle    time.Duration

	// dlmu orders the read deadlines a reader sets against the one
	// stopReads sets, so that a reader cannot push a stopped read's
	// deadline back into the future.
	dlmu        sync.Mutex
	readStopped bool
	readIdle    bool // waiting for the first byte of a message
	readSet     time.Time
	readSetIdle bool
	readSetAny  bool
	rbuf        []byte
	rpos, rend  int

	wmu      sync.Mutex
	writeSet time.Time
	batching bool   // between beginBatch and endBatch
	wbuf     []byte // records written while batching, not yet sent
	werr     error  // the first failed send; every later write fails too
}

// ioBuffer is the size of the read-ahead and write batch buffers: sixteen
// records per system call.
const ioBuffer = 256 << 10

// refresh reports whether a deadline set at 'set' for limit must be renewed
// at now. Renewing at most every limit/8 keeps timer churn negligible at
// gigabytes per second; the price is that a stall is reported after
// between 7/8 of the limit and the limit.
func refresh(now, set time.Time, limit time.Duration) bool {
	return limit > 0 && now.Sub(set) > limit/8
}

func (d *deadlineConn) Read(p []byte) (int, error) {
	if d.rpos < d.rend {
		n := copy(p, d.rbuf[d.rpos:d.rend])
		d.rpos += n
		return n, nil
	}
	if !d.active || len(p) >= ioBuffer {
		return d.rawRead(p)
	}
	if d.rbuf == nil {
		d.rbuf = make([]byte, ioBuffer)
	}
	n, err := d.rawRead(d.rbuf)
	d.rpos, d.rend = 0, n
	if n > 0 {
		// Hand over the bytes now; a pending error shows on the next call.
		m := copy(p, d.rbuf[:n])
		d.rpos = m
		return m, nil
	}
	return 0, err
}

func (d *deadlineConn) rawRead(p []byte) (int, error) {
	if d.active {
		if err := d.setReadDeadline(); err != nil {
			return 0, err
		}
	}
	n, err := d.Conn.Read(p)
	if n > 0 && d.pending != nil {
		d.pending.touch()
	}
	if n > 0 {
		// Bytes of a message arrived: the rest of it is bounded by the
		// stall limit, not the idle one.
		d.readIdle = false
	}
	return n, err
}

// setReadDeadline renews the read deadline when due, unless stopReads has
// stopped reading.
func (d *deadlineConn) setReadDeadline() error {
	d.dlmu.Lock()
	defer d.dlmu.Unlock()
	if d.readStopped {
		return ErrAborted
	}
	limit := d.stall
	if d.readIdle {
		limit = d.idle
	}
	now := time.Now()
	if !d.readSetAny || d.readIdle != d.readSetIdle || refresh(now, d.readSet, limit) {
		var dl time.Time
		if limit > 0 {
			dl = now.Add(limit)
		}
		if err := d.Conn.SetReadDeadline(dl); err != nil {
			return err
		}
		d.readSet, d.readSetIdle, d.readSetAny = now, d.readIdle, true
	}
	return nil
}

// stopReads makes a read in progress return at once, and every later one
// fail without reading.
func (d *deadlineConn) stopReads() {
	d.dlmu.Lock()
	defer d.dlmu.Unlock()
	d.readStopped = true
	_ = d.Conn.SetReadDeadline(time.Unix(1, 0))
}

func (d *deadlineConn) Write(p []byte) (int, error) {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if d.werr != nil {
		return 0, d.werr
	}
	if d.batching && len(p) < ioBuffer {
		if len(d.wbuf)+len(p) > ioBuffer {
			if err := d.flushLocked(); err != nil {
				return 0, err
			}
		}
		d.wbuf = append(d.wbuf, p...)
		return len(p), nil
	}
	if err := d.flushLocked(); err != nil {
		return 0, err
	}
	return d.rawWrite(p)
}

// beginBatch holds back records until endBatch, so that a message goes out
// in as few system calls as the buffer allows.
func (d *deadlineConn) beginBatch() {
	d.wmu.Lock()
	d.batching = true
	if d.wbuf == nil {
		d.wbuf = make([]byte, 0, ioBuffer)
	}
	d.wmu.Unlock()
}

// endBatch sends what beginBatch held back.
func (d *deadlineConn) endBatch() error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	d.batching = false
	return d.flushLocked()
}

func (d *deadlineConn) flushLocked() error {
	if d.werr != nil {
		return d.werr
	}
	if len(d.wbuf) == 0 {
		return nil
	}
	_, err := d.rawWrite(d.wbuf)
	d.wbuf = d.wbuf[:0]
	return err
}

func (d *deadlineConn) rawWrite(p []byte) (int, error) {
	// Only message writes (always batched) move the deadline: tls.Conn
	// sends close_notify under a short deadline of its own, which must hold.
	if d.active && d.batching && d.stall > 0 {
		if now := time.Now(); refresh(now, d.writeSet, d.stall) {
			if err := d.Conn.SetWriteDeadline(now.Add(d.stall)); err != nil {
				d.werr = err
				return 0, err
			}
			d.writeSet = now
		}
	}
	n, err := d.Conn.Write(p)
	if err != nil {
		d.werr = err
	}
	return n, err
}

// Conn is an authenticated connection to another backstream. Messages may
// be written from several goroutines (each WriteMessage is atomic on the
// wire) while one goroutine reads. Abort ends both: see there who owns the
// connection afterwards.
type Conn struct {
	tls     *tls.Conn
	raw     *deadlineConn
	purpose string
	peer    string // remote address, for messages

	rmu   sync.Mutex
	hdr   [headerLen]byte
	ended bool // the peer's end-of-stream message arrived

	// aborted is set by Abort, and draining by Abort and by a Close after
	// CloseWrite: from then on the connection belongs to its drain (see
	// drainThenClose).
	aborted  atomic.Bool
	draining atomic.Bool
	// sentEnd is set once CloseWrite has sent the end (read by Close,
	// which must not wait on wmu for a writer blocked on a stalled peer)
	sentEnd atomic.Bool

	wmu  sync.Mutex
	wbuf []byte // header plus the start of the payload, one full TLS record
	// lastWrite is when the last message went out; writeEnded is set by
	// CloseWrite and Abort, after which no heartbeat may follow.
	lastWrite  time.Time
	writeEnded bool

	// stopBeats ends the heartbeat goroutine (see beat); closed once.
	stopBeats     chan struct{}
	stopBeatsOnce sync.Once
}

// recordPayload is the most plaintext one TLS record carries; a write of
// exactly this much makes one full record.
const recordPayload = 16 << 10

func newConn(tc *tls.Conn, raw *deadlineConn, peer string) *Conn {
	return &Conn{tls: tc, raw: raw, peer: peer, stopBeats: make(chan struct{})}
}

// beat sends a heartbeat whenever the connection has written nothing for
// every, until it is closed or ends writing, so that the peer's idle
// timeout tells a process that stopped from one with nothing to say. A
// write in progress is left alone (it is progress itself), and a failed
// heartbeat leaves its error for the next write, as any failed write does.
func (c *Conn) beat(every time.Duration) {
	t := time.NewTicker(every / 2)
	defer t.Stop()
	for {
		select {
		case <-c.stopBeats:
			return
		case now := <-t.C:
			if !c.wmu.TryLock() {
				continue
			}
			if !c.writeEnded && !c.draining.Load() && now.Sub(c.lastWrite) >= every/2 {
				_ = c.writeLocked(typeHeartbeat, nil)
			}
			c.wmu.Unlock()
		}
	}
}

// endBeats stops the heartbeats.
func (c *Conn) endBeats() {
	c.stopBeatsOnce.Do(func() { close(c.stopBeats) })
}

// Purpose is what the peer said it is for in its hello ("control",
// "stream 3"); a listener says "listener".
func (c *Conn) Purpose() string { return c.purpose }

// RemoteAddr is the peer's network address.
func (c *Conn) RemoteAddr() net.Addr { return c.tls.RemoteAddr() }

// LocalAddr is this end's network address.
func (c *Conn) LocalAddr() net.Addr { return c.tls.LocalAddr() }

// WriteMessage sends one message of type typ (below FirstReservedType)
// with payload of up to MaxPayload bytes. It is safe to call from several
// goroutines. An error leaves the connection unusable: close it.
func (c *Conn) WriteMessage(typ byte, payload []byte) error {
	if typ >= FirstReservedType {
		return fmt.Errorf("to %s: message type 0x%02x is reserved for the transport", c.peer, typ)
	}
	if len(payload) > MaxPayload {
		return fmt.Errorf("to %s: message of %d bytes exceeds the limit of %d", c.peer, len(payload), MaxPayload)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(typ, payload)
}

// writeLocked sends header and payload with no copy beyond the first
// record: the header travels with the payload's first bytes in one full
// TLS record, the rest of the payload is written from the caller's slice.
func (c *Conn) writeLocked(typ byte, payload []byte) error {
	if c.wbuf == nil {
		c.wbuf = make([]byte, recordPayload)
	}
	first := min(len(payload), recordPayload-headerLen)
	putHeader(c.wbuf, typ, len(payload))
	copy(c.wbuf[headerLen:], payload[:first])
	c.raw.beginBatch()
	_, err := c.tls.Write(c.wbuf[:headerLen+first])
	if err == nil && first < len(payload) {
		_, err = c.tls.Write(payload[first:])
	}
	if ferr := c.raw.endBatch(); err == nil {
		err = ferr
	}
	if err != nil {
		return c.writeError(len(payload), err)
	}
	c.lastWrite = time.Now()
	return nil
}

func (c *Conn) writeError(n int, err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("to %s: writing a message of %d bytes: no progress for %s: the peer stopped reading or the network is down: %w",
			c.peer, n, c.raw.stall, err)
	}
	return fmt.Errorf("to %s: writing a message of %d bytes: %w", c.peer, n, err)
}

// ReadMessage reads the next message. The payload is read into buf when it
// fits, so passing the previous payload back avoids allocating; otherwise
// a buffer is grown as the bytes arrive. The payload is valid until the
// next call that reuses its memory. After the peer's CloseWrite, once
// everything sent before it is read, the error is io.EOF; a reason the
// peer sent with Abort is a *PeerError. Other errors name the peer and what
// was cut short, and leave the connection unusable.
func (c *Conn) ReadMessage(buf []byte) (typ byte, payload []byte, err error) {
	if c.draining.Load() {
		return 0, nil, c.abortedError()
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.draining.Load() {
		return 0, nil, c.abortedError()
	}
	if c.ended {
		return 0, nil, io.EOF
	}
	for {
		c.raw.readIdle = true
		typ, payload, err = readFrame(c.tls, &c.hdr, buf, MaxPayload)
		if err != nil {
			if c.draining.Load() {
				return 0, nil, c.abortedError()
			}
			return 0, nil, c.readError(err)
		}
		if typ != typeHeartbeat {
			break
		}
	}
	switch {
	case typ == typeEnd:
		c.ended = true
		return 0, nil, io.EOF
	case typ == typeError:
		return 0, nil, fmt.Errorf("from %s: %w", c.peer, parsePeerError(payload))
	case typ >= FirstReservedType:
		return 0, nil, fmt.Errorf("from %s: unexpected transport message of type 0x%02x after the handshake", c.peer, typ)
	}
	return typ, payload, nil
}

// abortedError is what reading a connection this end aborted or closed
// returns.
func (c *Conn) abortedError() error {
	if !c.aborted.Load() {
		return fmt.Errorf("from %s: %w", c.peer, net.ErrClosed)
	}
	return fmt.Errorf("from %s: %w", c.peer, ErrAborted)
}

func (c *Conn) readError(err error) error {
	if err == io.EOF {
		// crypto/tls reports a TCP close at a record boundary as io.EOF
		// even without close_notify, so only our end message is an end.
		return fmt.Errorf("from %s: connection closed without an end of stream (the peer failed, was killed, or the connection was cut): %w",
			c.peer, io.ErrUnexpectedEOF)
	}
	var fe *frameError
	errors.As(err, &fe)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		// Which deadline fired depends on whether any byte arrived, even
		// one of a TLS record not yet complete.
		if c.raw.readIdle {
			return fmt.Errorf("from %s: no message for %s (idle timeout): %w", c.peer, c.raw.idle, err)
		}
		return fmt.Errorf("from %s: peer stalled: no data for %s in the middle of a message: %w", c.peer, c.raw.stall, err)
	}
	if refusedRecord(err) {
		return fmt.Errorf("from %s: data altered on the wire (TLS refused a record): %w", c.peer, err)
	}
	if fe != nil && fe.idle() {
		return fmt.Errorf("from %s: connection lost between messages: %w", c.peer, err)
	}
	if fe != nil && errors.Is(fe.err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("from %s: connection closed in the middle of a message (the peer failed, was killed, or the connection was cut): %w", c.peer, err)
	}
	return fmt.Errorf("from %s: %w", c.peer, err)
}

// refusedRecord reports whether err is crypto/tls refusing a record that
// arrived after the handshake: its authentication failed (bad record
// MAC) or its header is not one the peer's TLS wrote (an impossible
// length, an unknown type), or the peer's TLS refused one of ours (a
// remote alert). Whichever byte of a record a fault changed, it is the
// same fault: the bytes on the wire are not what was sent.
func refusedRecord(err error) bool {
	if _, ok := errors.AsType[tls.RecordHeaderError](err); ok {
		return true
	}
	op, ok := errors.AsType[*net.OpError](err)
	return ok && op.Err != nil && (op.Op == "local error" || op.Op == "remote error") && strings.HasPrefix(op.Err.Error(), "tls: ")
}

// CloseWrite tells the peer that no more messages follow: its ReadMessage
// returns io.EOF once it has read everything sent before. Reading goes on.
// A connection closed without CloseWrite reads as an error on the peer's
// side, so a sender that fails and closes is never taken for one that
// finished.
func (c *Conn) CloseWrite() error {
	c.endBeats()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.writeEnded = true
	if err := c.writeLocked(typeEnd, nil); err != nil {
		return err
	}
	// Not batched: tls.Conn sends close_notify under a deadline of its own.
	if err := c.tls.CloseWrite(); err != nil {
		return fmt.Errorf("to %s: closing for writing: %w", c.peer, err)
	}
	if tc, ok := c.raw.Conn.(*net.TCPConn); ok {
		// Send the FIN too; the close_notify alone already ends the stream.
		_ = tc.CloseWrite()
	}
	c.sentEnd.Store(true)
	return nil
}

// Close closes the connection. It does not wait for a writer blocked on a
// stalled peer: that write fails. After Abort it does nothing: the drain
// closes the connection.
//
// After CloseWrite the connection goes to a drain too (see
// drainThenClose), for at most closeLinger: what this end sent may still
// be in the sockets, and the peer may have sent what no one here reads
// (its heartbeats, to a sender that only writes). Closing a socket that
// holds unread bytes, or that bytes reach once closed, makes the kernel
// reset the connection and drop what it has not delivered: a slow peer
// read "connection reset by peer" in the middle of a frame, the end of a
// transfer lost (TestCloseAfterCloseWriteDeliversEverything). A read in
// progress returns at once, and every later one, with net.ErrClosed.
func (c *Conn) Close() error {
	c.endBeats()
	if c.draining.Swap(true) {
		return nil // Abort's drain, or an earlier Close's, owns it
	}
	if c.sentEnd.Load() {
		c.drainThenClose(closeLinger)
		return nil
	}
	return c.tls.Close()
}

// closeLinger bounds how long a connection closed after CloseWrite waits
// for its peer to read what was sent and close: longer than any healthy
// peer takes to read a few MiB of sockets' buffers, as a peer's idle
// timeout is.
const closeLinger = DefaultIdleTimeout

// Abort sends reason to the peer, whose ReadMessage returns it as a
// *PeerError, then closes the connection. Use it to say why a transfer is
// refused rather than let the peer see only a closed connection. A second
// Abort does nothing.
//
// Closing a socket that still holds unread bytes from the peer makes the
// kernel reset the connection, and a reset that overtakes the reason
// destroys it in the peer's receive buffer: the peer would read
// "connection reset" instead. So Abort ends its side cleanly (the reason,
// TLS close_notify, then the TCP FIN) and returns; in the background a
// drain reads and drops what the peer still sends until it closes, for at
// most abortLinger, and only then closes the connection.
//
// From Abort on, the connection belongs to the drain, and no one else
// reads it or closes it: a ReadMessage in progress returns at once, and
// every later one, with an error wrapping ErrAborted (the drain starts
// reading only once no ReadMessage is in progress: two readers of one
// socket would split its bytes between them); Close does nothing. Writes
// fail, as after CloseWrite.
//
// The drain is a goroutine, which ends with the process: a process about
// to exit should call WaitDrains, or its exit resets the connections whose
// peers have not read the reason yet, which is the very case the drain is
// for.
func (c *Conn) Abort(reason string) error {
	if c.draining.Swap(true) {
		return nil // aborted, or closed, before
	}
	c.aborted.Store(true)
	c.endBeats()
	c.wmu.Lock()
	c.writeEnded = true
	err := c.writeLocked(typeError, errorPayload(codeGeneric, reason))
	if err == nil {
		err = c.tls.CloseWrite()
	}
	c.wmu.Unlock()
	if err != nil {
		c.raw.stopReads()
		c.tls.Close()
		return err
	}
	if tc, ok := c.raw.Conn.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	c.drainThenClose(abortLinger)
	return nil
}

// drainThenClose cuts short a ReadMessage in progress, then, in the
// background, reads and drops what the peer still sends until it closes,
// for at most linger, and only then closes the connection. The process
// waits for it before it exits (WaitDrains).
func (c *Conn) drainThenClose(linger time.Duration) {
	c.raw.stopReads()
	drains.started()
	go func() {
		defer drains.ended()
		// Wait for a ReadMessage that stopReads has cut short to let go,
		// then read the socket itself, not the TLS layer above it.
		c.rmu.Lock()
		defer c.rmu.Unlock()
		_ = c.raw.Conn.SetReadDeadline(time.Now().Add(linger))
		_, _ = io.Copy(io.Discard, c.raw.Conn)
		c.tls.Close()
	}()
}

// abortLinger bounds how long an aborted connection waits for its peer to
// read the reason and close.
const abortLinger = 5 * time.Second

// drains counts the drains of aborted connections still running. (Not a
// sync.WaitGroup: a WaitDrains that timed out leaves its Wait behind, and
// a later Abort's Add from zero would race with it.)
var drains drainCount

type drainCount struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0
}

func (d *drainCount) started() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.n == 0 {
		d.idle = make(chan struct{})
	}
	d.n++
}

func (d *drainCount) ended() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.n--; d.n == 0 {
		close(d.idle)
	}
}

// wait returns a channel closed once no drain runs.
func (d *drainCount) wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.n == 0 {
		done := make(chan struct{})
		close(done)
		return done
	}
	return d.idle
}

// WaitDrains waits until the drains of aborted connections have ended
// (each within abortLinger of its Abort), or for at most timeout, and
// reports whether they all did. A process calls it before it exits, so
// that a peer still reading the reason its last Abort sent gets it rather
// than a reset: a live peer reads it and closes within moments, and a dead
// one never will, so a short timeout loses little.
func WaitDrains(timeout time.Duration) bool {
	select {
	case <-drains.wait():
		return true
	case <-time.After(timeout):
		return false
	}
}

const (
	codeGeneric    byte = 0
	codeWrongToken byte = 1
	codeVersion    byte = 2
)

// maxReason bounds the text of an error message on the wire.
const maxReason = 1024

func errorPayload(code byte, reason string) []byte {
	if len(reason) > maxReason {
		reason = reason[:maxReason]
	}
	return append([]byte{code}, reason...)
}

// PeerError is a reason the peer sent before closing the connection.
type PeerError struct {
	Reason string
	code   byte
}

// Error quotes the peer's reason, marked as the peer's.
func (e *PeerError) Error() string { return "peer says: " + e.Reason }

// Unwrap lets errors.Is find ErrWrongToken or ErrProtocolVersion when the
// peer refused for that reason.
func (e *PeerError) Unwrap() error {
	switch e.code {
	case codeWrongToken:
		return ErrWrongToken
	case codeVersion:
		return ErrProtocolVersion
	}
	return nil
}

func parsePeerError(p []byte) *PeerError {
	if len(p) == 0 {
		return &PeerError{Reason: "(no reason given)"}
	}
	return &PeerError{code: p[0], Reason: printable(string(p[1:]), maxReason)}
}

// printable keeps text from the network fit for a terminal or a log line.
func printable(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.Map(func(r rune) rune {
		if r == unicode.ReplacementChar || !unicode.IsPrint(r) {
			return '?'
		}
		return r
	}, s)
}
