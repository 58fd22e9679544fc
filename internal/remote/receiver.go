package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/backupid"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/transport"
)

// Receiver takes one transfer from a Sender, into a datadir or a repository.
type Receiver struct {
	Listener *transport.Listener

	// Into a datadir: restored as it arrives, like restore, with these
	// settings (target, prepare, owner, ...); the receiver provides the
	// links and the progress.
	Datadir *restore.Job
	// Into a repository: stored and verified, then committed.
	Repo *repo.Repo
	// Encryption, when Repo's backend encrypts what it stores, is recorded
	// in the manifests of the backups stored.
	Encryption *archive.Encryption
	// LockRepo, if set, locks the repository for one transfer, once a
	// sender has announced a backup (so that an idle receiver holds no
	// lock). The returned context ends if the lock is lost.
	LockRepo func(ctx context.Context) (context.Context, func(), error)

	Workers  int             // decoding goroutines (repository mode; Datadir has its own)
	Memory   *archive.Memory // the budget of what the reads hold at once (repository mode; nil: archive.DefaultMemory)
	Progress physical.Progress
	// Rejected, if set, hears of connections refused before a transfer
	// (wrong token, not TLS, ...); they do not end Serve.
	Rejected func(error)
	// Finish, if set, runs once a backup has arrived whole and verified,
	// before the sender is told (a datadir put into place, its server
	// started and replicating): the outcome it returns goes to the sender
	// (its Status, Backup and, unless set, Into filled in), with its error
	// as the outcome's Error.
	Finish func(ctx context.Context, m *archive.Manifest) (Outcome, error)
}

// finish runs Finish, if set, and returns the outcome to tell the sender,
// with the error it says failed.
func (rv *Receiver) finish(ctx context.Context, m *archive.Manifest) (Outcome, error) {
	var out Outcome
	var err error
	if rv.Finish != nil {
		out, err = rv.Finish(ctx, m)
	}
	out.Backup, out.Status = m.ID, StatusOK
	if out.Into == "" {
		out.Into = IntoTargetDir
		if rv.Repo != nil {
			out.Into = IntoRepository
		}
	}
	if err != nil {
		err = fmt.Errorf("backup %s arrived and verified, then: %w", m.ID, err)
		out.Status, out.Error = StatusFailed, err.Error()
	}
	return out, err
}

// session is one transfer in progress.
type session struct {
	rv      *Receiver
	control *transport.Conn
	header  *archive.Manifest
	// stored: the sender sends a stored backup, whose header is its
	// complete manifest, and can send parts of it (a resumed receive).
	stored bool
	// ctx is the session's, which ends with it: the goroutines ready
	// starts run under it.
	ctx    context.Context
	cancel context.CancelCauseFunc

	readyOnce sync.Once
	readyErr  error

	slots []chan *transport.Conn

	final     chan struct{} // closed once manifest or finalErr is set
	manifest  *archive.Manifest
	finalErr  error
	meta      map[string][]byte
	trailerMu sync.Mutex
	trailers  []archive.Stream
}

// Serve waits for a sender, takes its backup, and reports the outcome to
// it. It returns the manifest of a backup that arrived whole and verified.
func (rv *Receiver) Serve(ctx context.Context) (*archive.Manifest, error) {
	if (rv.Datadir == nil) == (rv.Repo == nil) {
		return nil, errors.New("receive into either a target directory or a repository")
	}
	control, err := rv.accept(ctx, func(c *transport.Conn) bool { return c.Purpose() == controlPurpose })
	if err != nil {
		return nil, err
	}
	defer control.Close()
	typ, data, err := control.ReadMessage(nil)
	if err != nil {
		return nil, fmt.Errorf("waiting for the backup header: %w", err)
	}
	var h *archive.Manifest
	switch typ {
	case msgHeader:
		h, err = checkHeader(data)
	case msgStored:
		h, err = checkStoredManifest(data)
	default:
		err = fmt.Errorf("control connection: unexpected message %q instead of the backup header", typ)
	}
	if err != nil {
		control.Abort(err.Error())
		return nil, err
	}
	s := &session{rv: rv, control: control, header: h, stored: typ == msgStored, final: make(chan struct{}), meta: map[string][]byte{},
		trailers: make([]archive.Stream, len(h.Streams))}
	for range h.Streams {
		s.slots = append(s.slots, make(chan *transport.Conn, 1))
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s.ctx, s.cancel = ctx, cancel
	defer s.closeUnread()
	m, err := s.run(ctx)
	if err != nil {
		if !strings.Contains(err.Error(), h.ID) {
			err = fmt.Errorf("backup %s: %w", h.ID, err)
		}
		control.Abort(err.Error())
		return nil, err
	}
	out, err := rv.finish(ctx, m)
	msg, merr := encodeOutcome(out)
	if merr != nil {
		return nil, fmt.Errorf("backup %s arrived and verified, but its outcome: %w", h.ID, merr)
	}
	if werr := control.WriteMessage(msgOutcome, msg); werr != nil {
		return nil, errors.Join(err, fmt.Errorf("backup %s arrived and verified, but telling the sender failed: %w", h.ID, werr))
	}
	if err != nil {
		control.CloseWrite()
		return nil, err
	}
	control.CloseWrite()
	return m, nil
}

// accept returns the next connection that want accepts; others are refused.
func (rv *Receiver) accept(ctx context.Context, want func(*transport.Conn) bool) (*transport.Conn, error) {
	for {
		c, err := rv.Listener.Accept(ctx)
		var he *transport.HandshakeError
		if errors.As(err, &he) {
			if rv.Rejected != nil {
				rv.Rejected(he)
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		if want(c) {
			return c, nil
		}
		c.Abort(fmt.Sprintf("unexpected connection %q: this receiver is busy or waits for another", c.Purpose()))
		if rv.Rejected != nil {
			rv.Rejected(fmt.Errorf("refused connection %q from %s", c.Purpose(), c.RemoteAddr()))
		}
	}
}

func (s *session) run(ctx context.Context) (*archive.Manifest, error) {
	if s.rv.Datadir != nil {
		return s.intoDatadir(ctx)
	}
	return s.intoRepo(ctx)
}

// ready tells the sender to go, once, with what to send of each stream
// (plans; nil: every stream whole), then takes the stream connections and
// reads the control connection. Reading calls it (TakePlan): a restore
// reads only once its target is claimed and checked, so the sender starts
// mariabackup only for a receiver that can take the backup.
func (s *session) ready(plans []archive.StreamPlan) error {
	s.readyOnce.Do(func() {
		if plans == nil {
			plans = make([]archive.StreamPlan, len(s.header.Streams))
		}
		var msg []byte
		if msg, s.readyErr = encodePlan(plans); s.readyErr != nil {
			return
		}
		if s.readyErr = s.control.WriteMessage(msgAccept, msg); s.readyErr != nil {
			return
		}
		go s.acceptStreams(s.ctx, plans)
		go s.readControl(s.cancel)
	})
	return s.readyErr
}

// TakePlan tells the sender what the read takes of each stream
// (archive.PlanTaker).
func (s *session) TakePlan(_ context.Context, plans []archive.StreamPlan) error {
	return s.ready(plans)
}

// readControl takes the metadata objects and, last, the manifest.
func (s *session) readControl(cancel context.CancelCauseFunc) {
	fail := func(err error) {
		s.finalErr = err
		cancel(err) // before final: whoever final wakes finds the cause (causeOf)
		close(s.final)
	}
	for {
		typ, data, err := s.control.ReadMessage(nil)
		if err != nil {
			fail(fmt.Errorf("control connection: %w", err))
			return
		}
		switch typ {
		case msgMeta:
			name, content, err := parseMeta(data)
			if err != nil {
				fail(err)
				return
			}
			s.meta[name] = content
		case msgCommit:
			m, err := checkFinal(s.header, data)
			if err != nil {
				fail(err)
				return
			}
			s.manifest = m
			close(s.final)
			return
		default:
			fail(fmt.Errorf("control connection: unexpected message %q", typ))
			return
		}
	}
}

// finalManifest waits for the manifest the sender commits last.
func (s *session) finalManifest(ctx context.Context) (*archive.Manifest, error) {
	select {
	case <-s.final:
		return s.manifest, s.finalErr
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// acceptStreams places each stream connection the plans ask for in its
// slot. A second connection for a stream is refused, also after the first
// has left its slot, and so is one for a stream skipped.
func (s *session) acceptStreams(ctx context.Context, plans []archive.StreamPlan) {
	taken := make([]bool, len(s.slots))
	want := 0
	for i, p := range plans {
		taken[i] = p.Skip
		if !p.Skip {
			want++
		}
	}
	for got := 0; got < want; got++ {
		c, err := s.rv.accept(ctx, func(c *transport.Conn) bool {
			i, id, ok := parseStreamPurpose(c.Purpose())
			return ok && id == s.header.ID && i < len(s.slots) && !taken[i]
		})
		if err != nil {
			if ctx.Err() == nil {
				s.cancel(fmt.Errorf("accepting stream connections: %w", err))
			}
			return
		}
		i, _, _ := parseStreamPurpose(c.Purpose())
		taken[i] = true
		s.slots[i] <- c
	}
}

// OpenStream waits for stream i's connection, sent whole (archive.Input).
func (s *session) OpenStream(ctx context.Context, i int, _ archive.Stream) (archive.FrameSource, error) {
	return s.open(ctx, i, true)
}

// OpenFrames waits for stream i's connection, which brings the frames the
// plan asked for (archive.FrameRanger).
func (s *session) OpenFrames(ctx context.Context, i int, _ archive.Stream, _ []int) (archive.FrameSource, error) {
	return s.open(ctx, i, false)
}

func (s *session) open(ctx context.Context, i int, whole bool) (archive.FrameSource, error) {
	if err := s.ready(nil); err != nil {
		return nil, err
	}
	select {
	case c := <-s.slots[i]:
		// A read waits for the sender without a context: a session that
		// fails (another stream's error, a connection's idle timeout)
		// aborts it, rather than leave it waiting for its own timeout.
		stop := context.AfterFunc(ctx, func() { c.Abort(context.Cause(ctx).Error()) })
		return &netFrames{ctx: ctx, s: s, num: i, c: c, stop: stop, whole: whole}, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// closeUnread closes the stream connections that arrived and were never
// read (a transfer that failed first).
func (s *session) closeUnread() {
	for _, slot := range s.slots {
		select {
		case c := <-slot:
			c.Close()
		default:
		}
	}
}

// messageReader is the side of a connection netFrames uses: a
// *transport.Conn, or in tests a script of messages.
type messageReader interface {
	ReadMessage(buf []byte) (byte, []byte, error)
	Close() error
}

// netFrames reads one stream's frames from its connection.
type netFrames struct {
	ctx context.Context // the reader's, whose memory budget frames take
	s   *session
	num int
	c   messageReader
	// whole: the stream is sent whole, each frame where the last ended;
	// else the frames asked for, ascending.
	whole bool
	off   int64 // where the last frame ended
	n     int
	// stop, if set, ends the abort of c when ctx ends.
	stop func() bool
}

func (f *netFrames) Next() (archive.Frame, []byte, error) {
	typ, data, err := f.c.ReadMessage(nil)
	if err == io.EOF {
		// Only the trailer ends a stream: without it the receiver has no
		// record of the stream to store.
		return archive.Frame{}, nil, fmt.Errorf("the stream ended after %d frames without its trailer", f.n)
	}
	if err != nil {
		return archive.Frame{}, nil, err
	}
	switch typ {
	case msgTrailer:
		var st archive.Stream
		if err := json.Unmarshal(data, &st); err != nil {
			return archive.Frame{}, nil, fmt.Errorf("stream trailer: %w", err)
		}
		if typ, _, err := f.c.ReadMessage(nil); err != io.EOF {
			if err == nil {
				err = fmt.Errorf("message %q", typ)
			}
			return archive.Frame{}, nil, fmt.Errorf("data after the stream trailer: %v", err)
		}
		f.s.trailerMu.Lock()
		f.s.trailers[f.num] = st
		f.s.trailerMu.Unlock()
		return archive.Frame{}, nil, io.EOF
	case msgFrame:
	default:
		return archive.Frame{}, nil, fmt.Errorf("unexpected message %q in a stream", typ)
	}
	fr, err := parseFrameRecord(data)
	if err != nil {
		return archive.Frame{}, nil, err
	}
	if fr.Offset < f.off || (f.whole && fr.Offset != f.off) {
		return fr, nil, fmt.Errorf("frame %d at offset %d: the stream's frames so far end at %d", f.n, fr.Offset, f.off)
	}
	buf, err := archive.FrameBuffer(f.ctx, fr)
	if err != nil {
		return fr, nil, err
	}
	typ, data, err = f.c.ReadMessage(buf[:cap(buf)])
	if err == io.EOF {
		// An end between a frame's record and its data is a truncation,
		// never the end of the stream.
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return fr, nil, fmt.Errorf("frame %d: %w", f.n, err)
	}
	if typ != msgData || len(data) != int(fr.Stored) {
		return fr, nil, fmt.Errorf("frame %d: expected %d bytes of data, got message %q of %d", f.n, fr.Stored, typ, len(data))
	}
	f.off = fr.Offset + int64(fr.Stored)
	f.n++
	return fr, data, nil
}

func (f *netFrames) Close() error {
	if f.stop != nil {
		f.stop()
	}
	return f.c.Close()
}

// intoDatadir restores the backup as it arrives.
func (s *session) intoDatadir(ctx context.Context) (*archive.Manifest, error) {
	if h := s.header; h.Parent != "" {
		// Its parent is not sent with it: refused before the target is
		// claimed.
		return nil, fmt.Errorf("backup %s is an incremental on %s: a target directory takes only a full backup (restore the chain from a repository)", h.ID, h.Parent)
	}
	job := *s.rv.Datadir
	job.Progress = s.rv.Progress
	if !s.stored {
		if job.Resume {
			return nil, fmt.Errorf("--resume continues the receive of a stored backup (send ID --repo R), and this sender takes a new backup as it sends, whose files cannot continue another's: receive it without --resume into an empty target")
		}
		job.Links = []restore.Link{{Manifest: s.header, Input: s, Final: s.finalManifest}}
		if err := restore.Datadir(ctx, job); err != nil {
			return nil, s.causeOf(ctx, err)
		}
		return s.manifest, nil
	}
	// A stored backup's manifest is known from the start: the restore
	// records each file verified, and the files of a resumed one are not
	// sent again. Cut off, it keeps what it wrote for a resume.
	job.Links = []restore.Link{{Manifest: s.header, Input: s}}
	job.KeepCutOff, job.Again = true, "run receive again with --resume, and send the same backup again, to continue it"
	if err := restore.Datadir(ctx, job); err != nil {
		if kept := (*restore.KeptError)(nil); errors.As(err, &kept) {
			kept.Err = s.causeOf(ctx, kept.Err)
			return nil, kept
		}
		return nil, s.causeOf(ctx, err)
	}
	return s.finalManifest(ctx)
}

// causeOf is why ctx was cancelled, when it was with a reason (the control
// connection's: a refused manifest, a failed sender), rather than err,
// which a store or a read interrupted by that cancellation reports as
// "context canceled". A sender that fails cancels its other streams,
// whose connections may end (or say only that the sender was cancelled)
// before its reason arrives on the control connection: a stream that
// failed so waits up to reasonWait for it.
func (s *session) causeOf(ctx context.Context, err error) error {
	if ctx.Err() == nil && senderEnded(err) {
		t := time.NewTimer(reasonWait)
		select {
		case <-s.final:
		case <-t.C:
		}
		t.Stop()
	}
	if ctx.Err() == nil {
		return err
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
		return cause
	}
	return err
}

// senderEnded reports whether err is a stream's connection ended by the
// sender: an abort, a reset, a close in the middle of the stream.
func senderEnded(err error) bool {
	var pe *transport.PeerError
	return errors.As(err, &pe) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// intoRepo stores the backup in a repository as it arrives, checking every
// frame on the way, and commits it once the manifest agrees.
func (s *session) intoRepo(ctx context.Context) (m *archive.Manifest, err error) {
	r, h := s.rv.Repo, s.header
	if s.rv.LockRepo != nil {
		lctx, release, err := s.rv.LockRepo(ctx)
		if err != nil {
			return nil, err
		}
		defer release()
		ctx = lctx
	}
	if existing, _ := r.Resolve(ctx, h.ID); existing != nil {
		return nil, fmt.Errorf("the repository already holds backup %s", h.ID)
	}
	if h.Storage == archive.StorageDedup {
		return nil, fmt.Errorf("backup %s is stored in a deduplicating repository, whose streams' digests are their recipes', which a repository that receives it cannot check: receive it into a datadir (--target-dir or --datadir), or back up into that repository directly", h.ID)
	}
	if r.Dedup() {
		return nil, fmt.Errorf("backup %s: the repository deduplicates, and receive stores a backup's streams as they are sent, compressed, which cannot be cut into blocks: receive into a repository that does not deduplicate (or a datadir), or back up into this one directly", h.ID)
	}
	// An incremental continues a complete backup of this repository:
	// checked before anything is stored; that it starts where the parent
	// ends, once its manifest says where it starts.
	var parent *archive.Manifest
	if h.Parent != "" {
		if !backupid.Valid(h.Parent) {
			return nil, fmt.Errorf("backup %s: parent %q is not a backup id", h.ID, h.Parent)
		}
		if parent, err = r.Resolve(ctx, h.Parent); err != nil {
			return nil, fmt.Errorf("backup %s is an incremental on %s, which this repository cannot give: %w", h.ID, h.Parent, err)
		}
	}
	defer func() {
		if err != nil {
			cleanup, stop := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer stop()
			r.Discard(cleanup, h.ID)
		}
	}()
	if err := s.ready(nil); err != nil {
		return nil, err
	}
	tee := &teeInput{in: s, out: r.Output(h.ID, h.Hash), results: make([]archive.Stream, len(h.Streams))}
	if s.rv.Progress != nil {
		s.rv.Progress.SetBackup(h.ID)
		s.rv.Progress.Stage("receiving")
	}
	err = archive.Read(ctx, archive.ReadOptions{
		Input: tee, Manifest: h, Final: s.finalManifest, Workers: s.rv.Workers, Counter: s.rv.Progress, Memory: s.rv.Memory,
	})
	if err != nil {
		return nil, s.causeOf(ctx, err)
	}
	m, err = s.finalManifest(ctx)
	if err != nil {
		return nil, err
	}
	if parent != nil {
		if err := physical.CheckPositions(m, parent, nil); err != nil {
			return nil, archive.Corruptf("%v", err)
		}
	}
	// The manifest as the repository keeps it: with the indexes written here.
	for i := range m.Streams {
		m.Streams[i].Index = tee.results[i].Index
	}
	for _, o := range m.Meta {
		data, ok := s.meta[o.Name]
		if !ok {
			return nil, fmt.Errorf("metadata object %s is in the manifest but was not sent", o.Name)
		}
		got, err := r.PutMeta(ctx, h.ID, o.Name, data, h.Hash)
		if err != nil {
			return nil, err
		}
		if got != o {
			return nil, fmt.Errorf("metadata object %s: digest %s, manifest says %s", o.Name, got.Digest, o.Digest)
		}
	}
	m.Encryption = s.rv.Encryption
	if err := r.Commit(ctx, m); err != nil {
		return nil, err
	}
	return m, nil
}

// teeInput stores every frame it passes into a repository's stream outputs,
// so a backup received into a repository is checked exactly as a restore
// checks it while being stored.
type teeInput struct {
	in      *session
	out     archive.Output
	results []archive.Stream
}

func (t *teeInput) OpenStream(ctx context.Context, i int, s archive.Stream) (archive.FrameSource, error) {
	src, err := t.in.OpenStream(ctx, i, s)
	if err != nil {
		return nil, err
	}
	out, err := t.out.OpenStream(ctx, i, t.in.header.Streams[i].Name)
	if err != nil {
		src.Close()
		return nil, err
	}
	return &teeFrames{t: t, num: i, src: src.(*netFrames), out: out}, nil
}

type teeFrames struct {
	t    *teeInput
	num  int
	src  *netFrames
	out  archive.StreamOutput
	done bool
}

func (f *teeFrames) Next() (archive.Frame, []byte, error) {
	fr, data, err := f.src.Next()
	switch {
	case err == io.EOF:
		// The stream's record as the sender computed it; the reader checks
		// it against the manifest, the output against the bytes it kept.
		f.t.in.trailerMu.Lock()
		st := f.t.in.trailers[f.num]
		f.t.in.trailerMu.Unlock()
		res, cerr := f.out.Close(st)
		if cerr != nil {
			return fr, nil, cerr
		}
		f.done = true
		f.t.results[f.num] = res
		return fr, nil, io.EOF
	case err != nil:
		return fr, nil, err
	}
	if err := f.out.WriteFrame(fr, data); err != nil {
		return fr, nil, err
	}
	return fr, data, nil
}

func (f *teeFrames) Close() error {
	if !f.done {
		f.out.Abort(errors.New("stream not received whole"))
	}
	return f.src.Close()
}
