package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/transport"
)

// Sender sends one backup to one or more receivers. It is a backup
// Destination: the backup is committed when the receivers have said
// whether the whole backup arrived and verified, and at least one did
// (Reports tells which).
type Sender struct {
	opt   transport.Options
	peers []*peer
	ended atomic.Bool // Discard told the receivers the backup failed
}

type peer struct {
	addr    string
	control *transport.Conn
	streams []*transport.Conn

	reasonOnce sync.Once
	reason     string
	outcome    *Outcome     // what the receiver told of the backup, once Commit ran
	err        error        // why it did not take the backup, once Commit ran
	sent       atomic.Int64 // stored bytes sent to it
}

func (p *peer) errorf(format string, a ...any) error {
	return fmt.Errorf("receiver %s: %w", p.addr, fmt.Errorf(format, a...))
}

// reasonWait bounds how long a failed write waits for the receiver's
// reason, and a receiver's stream that the sender ended waits for the
// sender's (session.causeOf). A peer that died ends the control
// connection at once, so the wait is this long only for one that is alive
// and silent; a loaded peer can take seconds to say why it gave up.
const reasonWait = 10 * time.Second

// failed explains a failed write to the receiver: a receiver that gives up
// says why on the control connection before it closes, and that reason
// beats "broken pipe".
func (p *peer) failed(err error) error {
	p.reasonOnce.Do(func() {
		got := make(chan error, 1)
		go func() {
			_, _, rerr := p.control.ReadMessage(nil)
			got <- rerr
		}()
		select {
		case rerr := <-got:
			var pe *transport.PeerError
			if errors.As(rerr, &pe) {
				p.reason = pe.Reason
			}
		case <-time.After(reasonWait):
		}
	})
	if p.reason != "" {
		return fmt.Errorf("receiver %s failed: %s (sending: %w)", p.addr, p.reason, err)
	}
	return p.errorf("%w", err)
}

// Dial opens the control connection to every receiver.
func Dial(ctx context.Context, addrs []string, opt transport.Options) (*Sender, error) {
	if len(addrs) == 0 {
		return nil, errors.New("no receiver to send to")
	}
	s := &Sender{opt: opt}
	for _, a := range addrs {
		c, err := transport.Dial(ctx, a, controlPurpose, opt)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("receiver %s: %w", a, err)
		}
		s.peers = append(s.peers, &peer{addr: a, control: c})
	}
	return s, nil
}

// each runs fn for every receiver at once and joins their errors.
func (s *Sender) each(fn func(p *peer) error) error {
	errs := make([]error, len(s.peers))
	var wg sync.WaitGroup
	for i, p := range s.peers {
		wg.Go(func() { errs[i] = fn(p) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Begin sends the header, waits for every receiver to accept it, and opens
// the stream connections.
func (s *Sender) Begin(ctx context.Context, h *archive.Manifest) error {
	data, err := json.Marshal(h)
	if err != nil {
		return err
	}
	return s.each(func(p *peer) error {
		if _, err := p.announce(msgHeader, data, h, false); err != nil {
			return err
		}
		for i := range h.Streams {
			c, err := transport.Dial(ctx, p.addr, streamPurpose(i, h.ID), s.opt)
			if err != nil {
				return p.errorf("stream %d: %w", i, err)
			}
			p.streams = append(p.streams, c)
		}
		return nil
	})
}

// announce sends the header of the backup m (typ: H, being taken, or S,
// stored) and waits for the receiver to accept it, returning what it asks
// of each stream.
func (p *peer) announce(typ byte, header []byte, m *archive.Manifest, stored bool) ([]streamWant, error) {
	if err := p.control.WriteMessage(typ, header); err != nil {
		return nil, p.errorf("%w", err)
	}
	got, plan, err := p.control.ReadMessage(nil)
	if err != nil {
		return nil, p.errorf("refused the backup: %w", err)
	}
	if got != msgAccept {
		return nil, p.errorf("unexpected message %q instead of an acceptance", got)
	}
	wants, err := parsePlan(plan, m, stored)
	if err != nil {
		return nil, p.errorf("%w", err)
	}
	return wants, nil
}

// Output sends stream i over each receiver's connection i.
func (s *Sender) Output(id, hash string) archive.Output { return netOutput{s} }

type netOutput struct{ s *Sender }

func (o netOutput) OpenStream(ctx context.Context, i int, name string) (archive.StreamOutput, error) {
	st := &netStream{num: i}
	for _, p := range o.s.peers {
		if i >= len(p.streams) {
			return nil, p.errorf("no connection for stream %d", i)
		}
		st.peers = append(st.peers, p)
	}
	return st, nil
}

// netStream writes a stream's frames to every receiver in turn: the
// slowest receiver paces the others.
type netStream struct {
	num   int
	peers []*peer
}

func (st *netStream) WriteFrame(f archive.Frame, stored []byte) error {
	rec := frameRecord(f)
	for _, p := range st.peers {
		c := p.streams[st.num]
		if err := c.WriteMessage(msgFrame, rec); err != nil {
			return p.failed(err)
		}
		if err := c.WriteMessage(msgData, stored); err != nil {
			return p.failed(err)
		}
		p.sent.Add(int64(len(stored)))
	}
	return nil
}

func (st *netStream) Close(s archive.Stream) (archive.Stream, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return s, err
	}
	for _, p := range st.peers {
		c := p.streams[st.num]
		if err := c.WriteMessage(msgTrailer, data); err != nil {
			return s, p.failed(err)
		}
		if err := c.CloseWrite(); err != nil {
			return s, p.failed(err)
		}
	}
	return s, nil
}

func (st *netStream) Abort(cause error) {
	for _, p := range st.peers {
		p.streams[st.num].Abort("the sender failed: " + cause.Error())
	}
}

// PutMeta sends a metadata object to every receiver.
func (s *Sender) PutMeta(ctx context.Context, id, name string, data []byte, hash string) (archive.Object, error) {
	o, err := archive.ObjectOf(name, data, hash)
	if err != nil {
		return o, err
	}
	msg := metaMessage(name, data)
	return o, s.each(func(p *peer) error {
		if err := p.control.WriteMessage(msgMeta, msg); err != nil {
			return p.errorf("%w", err)
		}
		return nil
	})
}

// Commit sends the manifest and waits until every receiver reports the
// outcome: the whole backup arrived and verified (and was prepared, or
// committed into its repository, or put into place and started), or why
// not. The receivers finish independently, so the backup exists wherever
// one succeeded: Commit fails only if every receiver failed (with each
// one's error), and otherwise Reports says, receiver by receiver, what it
// reported or why it failed.
func (s *Sender) Commit(ctx context.Context, m *archive.Manifest) error {
	data, err := m.Marshal()
	if err != nil {
		return err
	}
	failed := s.each(func(p *peer) error {
		if p.err = p.commit(ctx, data); p.err != nil {
			return fmt.Errorf("receiver %s: %w", p.addr, p.err)
		}
		return nil
	})
	for _, p := range s.peers {
		if p.err == nil {
			return nil
		}
	}
	return failed
}

// commit sends the manifest to one receiver and reads its result.
func (p *peer) commit(ctx context.Context, manifest []byte) error {
	if err := p.control.WriteMessage(msgCommit, manifest); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		typ, data, err := p.control.ReadMessage(nil)
		if err == nil && typ != msgOutcome {
			err = fmt.Errorf("unexpected message %q instead of the result", typ)
		}
		if err == nil {
			p.outcome, err = parseOutcome(data)
		}
		if err == nil && p.outcome.Status == StatusFailed {
			err = fmt.Errorf("from %s: %w", p.addr, &FailedError{Outcome: p.outcome})
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return err
		}
		// The receiver is done and may have closed already.
		_ = p.control.CloseWrite()
		return nil
	case <-ctx.Done():
		p.control.Abort("the sender was interrupted")
		return ctx.Err()
	}
}

// Reports are the receivers' outcomes after Commit, in the order of the
// receivers: what each told of the backup, or why it failed.
func (s *Sender) Reports() []Report {
	out := make([]Report, len(s.peers))
	for i, p := range s.peers {
		out[i] = Report{Addr: p.addr, Outcome: p.outcome, Err: p.err, SentBytes: p.sent.Load()}
	}
	return out
}

// Report is one receiver's outcome: what it told of the backup (nil if it
// told nothing), and Err if it did not take it or failed after (then a
// FailedError, with the Outcome that says so).
type Report struct {
	Addr      string
	Outcome   *Outcome
	Err       error
	SentBytes int64 // stored bytes sent to it
}

// printable keeps a peer's text to what a terminal shows as text.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || (unicode.IsPrint(r) && r != utf8.RuneError) {
			return r
		}
		return '?'
	}, s)
}

// Discard tells every receiver that the backup failed, which ends the
// session: the Sender takes no other backup (Ended).
func (s *Sender) Discard(ctx context.Context, id string) error {
	s.ended.Store(true)
	for _, p := range s.peers {
		p.control.Abort("the backup failed on the sender")
		for _, c := range p.streams {
			c.Close()
		}
	}
	return nil
}

// Ended reports whether Discard ended the session (archive.Ending).
func (s *Sender) Ended() bool { return s.ended.Load() }

// Close closes every connection.
func (s *Sender) Close() {
	for _, p := range s.peers {
		p.control.Close()
		for _, c := range p.streams {
			c.Close()
		}
	}
}

// Receivers names the receivers, for summaries.
func (s *Sender) Receivers() []string {
	var out []string
	for _, p := range s.peers {
		out = append(out, p.addr)
	}
	return out
}
