package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repo/repotest"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/transport"
	"github.com/backstream/backstream/internal/xbstream"
)

var testToken = []byte("remote-test-token-0123456789")

func testOptions() transport.Options {
	return transport.Options{Token: testToken, HandshakeTimeout: 5 * time.Second, StallTimeout: 10 * time.Second}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func listen(t *testing.T) *transport.Listener {
	t.Helper()
	l, err := transport.Listen(testContext(t), "127.0.0.1:0", testOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// served is what Receiver.Serve returned.
type served struct {
	m   *archive.Manifest
	err error
}

// serve runs rv (into a new repository unless it has one) on a loopback
// listener in the background and returns the listener's address and the
// outcome of one transfer.
func serve(t *testing.T, rv *Receiver) (string, <-chan served) {
	t.Helper()
	rv.Listener = listen(t)
	if rv.Repo == nil {
		rv.Repo = repotest.New(t)
	}
	rv.Workers = 2
	done := make(chan served, 1)
	ctx := testContext(t)
	go func() {
		m, err := rv.Serve(ctx)
		done <- served{m, err}
	}()
	return rv.Listener.Addr().String(), done
}

func outcome(t *testing.T, done <-chan served) served {
	t.Helper()
	select {
	case s := <-done:
		return s
	case <-time.After(time.Minute):
		t.Fatal("the receiver did not finish")
	}
	return served{}
}

// testFile is one file of a synthetic backup.
type testFile struct {
	path string
	data []byte
}

func testFiles(seed uint64) []testFile {
	rng := rand.New(rand.NewPCG(seed, 1))
	var files []testFile
	for i := range 5 {
		b := make([]byte, 50<<10+rng.IntN(200<<10))
		for j := range b {
			if j%5 == 0 {
				b[j] = byte(rng.Uint32())
			} else {
				b[j] = byte(j >> 10)
			}
		}
		files = append(files, testFile{path: fmt.Sprintf("db/t%d.ibd", i), data: b})
	}
	return append(files, testFile{path: "empty"})
}

// chunks encodes files as an xbstream: chunks of up to 32 KiB, files
// interleaved, each file in order and ended.
func chunks(t *testing.T, files []testFile) [][]byte {
	t.Helper()
	var out [][]byte
	add := func(c xbstream.Chunk) {
		raw, err := xbstream.AppendChunk(nil, &c)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, raw)
	}
	offsets := make([]int, len(files))
	for more := true; more; {
		more = false
		for i, f := range files {
			if offsets[i] < len(f.data) {
				end := min(len(f.data), offsets[i]+32<<10)
				add(xbstream.Chunk{Type: xbstream.TypePayload, Path: f.path, Offset: uint64(offsets[i]), Payload: f.data[offsets[i]:end]})
				offsets[i] = end
				more = more || end < len(f.data)
			}
		}
	}
	for _, f := range files {
		add(xbstream.Chunk{Type: xbstream.TypeEOF, Path: f.path})
	}
	return out
}

const metaName = "xtrabackup_checkpoints"

var metaData = []byte("backup_type = full-backuped\nfrom_lsn = 0\nto_lsn = 42\n")

// writeBackup writes files as a backup into dest the way a backup job
// does: header, streams, a metadata object, the manifest.
func writeBackup(ctx context.Context, t *testing.T, dest archive.Destination, files []testFile, streams int) (*archive.Manifest, error) {
	return writeBackupAs(ctx, t, dest, testID, files, streams)
}

// writeBackupAs is writeBackup of a backup with that id.
func writeBackupAs(ctx context.Context, t *testing.T, dest archive.Destination, id string, files []testFile, streams int) (*archive.Manifest, error) {
	c, err := codec.Parse("zstd:1")
	if err != nil {
		t.Fatal(err)
	}
	h := testHeader(streams)
	h.ID = id
	for i := range h.Streams {
		h.Streams[i].Name = archive.StreamName(i, c)
	}
	return archive.WriteTo(ctx, dest, h, func() (*archive.Manifest, error) {
		w, err := archive.NewWriter(ctx, archive.WriterOptions{Output: dest.Output(h.ID, h.Hash), Streams: streams, Workers: 2,
			Codec: c, Hash: h.Hash, FrameSize: 64 << 10})
		if err != nil {
			return nil, err
		}
		for _, raw := range chunks(t, files) {
			ch, _, err := xbstream.DecodeChunk(raw)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Add(&ch, raw); err != nil {
				w.Abort(err)
				return nil, err
			}
		}
		res, err := w.Close()
		if err != nil {
			return nil, err
		}
		o, err := dest.PutMeta(ctx, h.ID, metaName, metaData, h.Hash)
		if err != nil {
			return nil, err
		}
		m := *h
		m.Complete(res)
		m.Meta = []archive.Object{o}
		return &m, dest.Commit(ctx, &m)
	})
}

// checkStored restores backup id from r and compares it with files.
func checkStored(t *testing.T, r *repo.Repo, id string, files []testFile) {
	t.Helper()
	ctx := testContext(t)
	m, err := r.Resolve(ctx, id)
	if err != nil {
		t.Fatalf("the received backup is not in the repository: %v", err)
	}
	dir := t.TempDir()
	w, err := physical.NewDatadirWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = archive.Read(ctx, archive.ReadOptions{Input: r.Input(m), Manifest: m, Sink: w})
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("restoring the received backup: %v", err)
	}
	for _, f := range files {
		if got, err := os.ReadFile(filepath.Join(dir, f.path)); err != nil || !bytes.Equal(got, f.data) {
			t.Errorf("%s: %d bytes restored (%v), want %d bytes as sent", f.path, len(got), err, len(f.data))
		}
	}
	meta, err := r.ReadMeta(ctx, m, metaName)
	if err != nil || !bytes.Equal(meta, metaData) {
		t.Errorf("metadata object: %q, %v; want %q", meta, err, metaData)
	}
}

// backupObjects lists what the repository holds under backups/.
func backupObjects(t *testing.T, r *repo.Repo) []string {
	t.Helper()
	objs, err := r.Backend.List(context.Background(), "backups/")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.Name)
	}
	return names
}

// A backup sent to two receivers arrives whole in both repositories, and
// reads back byte for byte.
func TestSendToRepositories(t *testing.T) {
	ctx := testContext(t)
	var addrs []string
	var dones []<-chan served
	var repos []*repo.Repo
	for range 2 {
		rv := &Receiver{}
		addr, done := serve(t, rv)
		addrs, dones, repos = append(addrs, addr), append(dones, done), append(repos, rv.Repo)
	}
	s, err := Dial(ctx, addrs, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Receivers(); !slices.Equal(got, addrs) {
		t.Errorf("Receivers() = %q, want %q", got, addrs)
	}
	files := testFiles(1)
	sent, err := writeBackup(ctx, t, s, files, 3)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	for i, done := range dones {
		got := outcome(t, done)
		if got.err != nil {
			t.Fatalf("receiver %d: %v", i, got.err)
		}
		if got.m.ID != sent.ID || len(got.m.Streams) != 3 || len(got.m.Files) != len(files) {
			t.Errorf("receiver %d returned %+v, want the manifest sent", i, got.m)
		}
		for j, st := range got.m.Streams {
			if st.Index.Name == "" || st.Digest != sent.Streams[j].Digest {
				t.Errorf("receiver %d stream %d: %+v, want the sender's digest %s and an index", i, j, st, sent.Streams[j].Digest)
			}
		}
		checkStored(t, repos[i], sent.ID, files)
	}
}

// Receivers finish on their own: when one fails after the data arrived
// (its Finish, which puts a datadir into place and starts a server), the
// others still took the backup. The sender's Commit succeeds, and Reports
// gives each receiver's report or error; only when every receiver failed
// does the backup fail.
func TestSendWithAFailedReceiver(t *testing.T) {
	ctx := testContext(t)
	started := Outcome{Into: IntoDatadir, Server: &Server{Address: "/run/x.sock", Datadir: "/x", Version: "11.8.3-MariaDB"},
		Replication: &Replication{Primary: "db1:3306", UsingGTID: true, GTID: "0-1-5"}, Text: "server started\nreplicating from the primary"}
	finish := []func(context.Context, *archive.Manifest) (Outcome, error){
		func(context.Context, *archive.Manifest) (Outcome, error) { return started, nil },
		func(context.Context, *archive.Manifest) (Outcome, error) {
			return Outcome{Into: IntoDatadir, Step: StepStart}, errors.New("starting the server failed: exit status 3")
		},
	}
	var addrs []string
	var dones []<-chan served
	for _, f := range finish {
		addr, done := serve(t, &Receiver{Finish: f})
		addrs, dones = append(addrs, addr), append(dones, done)
	}
	s, err := Dial(ctx, addrs, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := writeBackup(ctx, t, s, testFiles(7), 2); err != nil {
		t.Fatalf("send with one receiver failing: %v, want the backup taken by the other", err)
	}
	rep := s.Reports()
	if len(rep) != 2 || rep[0].Addr != addrs[0] || rep[0].Err != nil || rep[0].Outcome == nil || !rep[0].Outcome.Replicating() {
		t.Fatalf("the receiver that succeeded: %+v", rep)
	}
	want := started
	want.Status, want.Backup = StatusOK, rep[0].Outcome.Backup
	if got := *rep[0].Outcome; want.Backup == "" || !reflect.DeepEqual(got, want) {
		t.Errorf("the receiver that succeeded told %+v, want %+v", got, want)
	}
	var failed *FailedError
	if rep[1].Addr != addrs[1] || !errors.As(rep[1].Err, &failed) || failed.Outcome != rep[1].Outcome ||
		rep[1].Outcome.Status != StatusFailed || rep[1].Outcome.Step != StepStart || rep[1].Outcome.Replicating() ||
		!strings.Contains(rep[1].Err.Error(), "arrived and verified, then: starting the server failed: exit status 3") {
		t.Errorf("the receiver that failed: %+v (%+v), want its reason", rep[1], rep[1].Outcome)
	}
	if got := outcome(t, dones[0]); got.err != nil {
		t.Errorf("receiver 0: %v", got.err)
	}
	if got := outcome(t, dones[1]); got.err == nil {
		t.Error("receiver 1 succeeded")
	}

	// Every receiver fails: the backup fails, naming each.
	addrs, dones = nil, nil
	for range 2 {
		addr, done := serve(t, &Receiver{Finish: finish[1]})
		addrs, dones = append(addrs, addr), append(dones, done)
	}
	s2, err := Dial(ctx, addrs, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	_, err = writeBackup(ctx, t, s2, testFiles(7), 2)
	for _, a := range addrs {
		wantError(t, "send with every receiver failing", err, "receiver "+a+": ")
	}
	for _, d := range dones {
		outcome(t, d)
	}
}

// A receiver that is told to lock its repository does so once a backup is
// announced, and a lock it cannot take refuses the transfer.
func TestReceiverLocksRepository(t *testing.T) {
	ctx := testContext(t)
	var locked, released int
	rv := &Receiver{LockRepo: func(ctx context.Context) (context.Context, func(), error) {
		locked++
		return ctx, func() { released++ }, nil
	}}
	addr, done := serve(t, rv)
	s, err := Dial(ctx, []string{addr}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := writeBackup(ctx, t, s, testFiles(2), 2); err != nil {
		t.Fatal(err)
	}
	if got := outcome(t, done); got.err != nil {
		t.Fatal(got.err)
	}
	if locked != 1 || released != 1 {
		t.Errorf("locked %d times, released %d times; want once each", locked, released)
	}

	rv = &Receiver{LockRepo: func(ctx context.Context) (context.Context, func(), error) {
		return nil, nil, errors.New("repository locked by backup (test)")
	}}
	addr, done = serve(t, rv)
	s, err = Dial(ctx, []string{addr}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = writeBackup(ctx, t, s, testFiles(2), 2)
	wantError(t, "sender to a locked repository", err, "repository locked by backup (test)")
	wantError(t, "receiver of a locked repository", outcome(t, done).err, "repository locked by backup (test)")
	if objs := backupObjects(t, rv.Repo); len(objs) != 0 {
		t.Errorf("a refused transfer left %q", objs)
	}
}

// A backup the repository already holds is refused, and the one there
// stays as it was.
func TestReceiverKeepsExistingBackup(t *testing.T) {
	ctx := testContext(t)
	r := repotest.New(t)
	files := testFiles(3)
	for round := range 2 {
		addr, done := serve(t, &Receiver{Repo: r})
		s, err := Dial(ctx, []string{addr}, testOptions())
		if err != nil {
			t.Fatal(err)
		}
		_, err = writeBackup(ctx, t, s, files, 2)
		s.Close()
		got := outcome(t, done)
		if round == 0 {
			if err != nil || got.err != nil {
				t.Fatalf("first transfer: sender %v, receiver %v", err, got.err)
			}
			continue
		}
		want := "the repository already holds backup " + testID
		wantError(t, "sender of a backup held already", err, want)
		wantError(t, "receiver of a backup held already", got.err, want)
	}
	checkStored(t, r, testID, files)
}

// recording is a backup as a sender would put it on the wire, kept so that
// tests can send it message by message, whole or altered.
type recording struct {
	header, final *archive.Manifest
	streams       []*recordedStream
}

type recordedStream struct {
	frames  []archive.Frame
	data    [][]byte
	trailer archive.Stream
}

// recorder is an archive.Destination that keeps what it is given.
type recorder struct{ rec recording }

func (r *recorder) Begin(ctx context.Context, h *archive.Manifest) error {
	r.rec.header = h
	for range h.Streams {
		r.rec.streams = append(r.rec.streams, &recordedStream{})
	}
	return nil
}
func (r *recorder) Output(id, hash string) archive.Output { return r }
func (r *recorder) OpenStream(ctx context.Context, i int, name string) (archive.StreamOutput, error) {
	return r.rec.streams[i], nil
}
func (r *recorder) PutMeta(ctx context.Context, id, name string, data []byte, hash string) (archive.Object, error) {
	return archive.ObjectOf(name, data, hash)
}
func (r *recorder) Commit(ctx context.Context, m *archive.Manifest) error {
	r.rec.final = m
	return nil
}
func (r *recorder) Discard(ctx context.Context, id string) error { return nil }

func (s *recordedStream) WriteFrame(f archive.Frame, stored []byte) error {
	s.frames = append(s.frames, f)
	s.data = append(s.data, bytes.Clone(stored))
	return nil
}
func (s *recordedStream) Close(st archive.Stream) (archive.Stream, error) {
	s.trailer = st
	return st, nil
}
func (s *recordedStream) Abort(error) {}

func record(t *testing.T, streams int) *recording {
	t.Helper()
	var r recorder
	if _, err := writeBackup(testContext(t), t, &r, testFiles(4), streams); err != nil {
		t.Fatal(err)
	}
	return &r.rec
}

// fakeSender speaks the protocol message by message.
type fakeSender struct {
	t       *testing.T
	addr    string
	opt     transport.Options
	control *transport.Conn
}

func dialFake(t *testing.T, addr string) *fakeSender {
	t.Helper()
	return &fakeSender{t: t, addr: addr, opt: testOptions(), control: dial(t, addr, controlPurpose, testOptions())}
}

func dial(t *testing.T, addr, purpose string, opt transport.Options) *transport.Conn {
	t.Helper()
	c, err := transport.Dial(testContext(t), addr, purpose, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func (f *fakeSender) dial(purpose string) *transport.Conn {
	f.t.Helper()
	return dial(f.t, f.addr, purpose, f.opt)
}

// write sends one message; a receiver that already gave up may have
// closed the connection, which the test then sees in its reason.
func write(c *transport.Conn, typ byte, payload []byte) {
	_ = c.WriteMessage(typ, payload)
}

// announce sends the header and waits for the acceptance.
func (f *fakeSender) announce(h *archive.Manifest) {
	f.t.Helper()
	write(f.control, msgHeader, mustJSON(f.t, h))
	typ, _, err := f.control.ReadMessage(nil)
	if err != nil || typ != msgAccept {
		f.t.Fatalf("waiting for the acceptance: message %q, %v", typ, err)
	}
}

// sendStream sends a recorded stream whole on c, then ends it.
func sendStream(t *testing.T, c *transport.Conn, s *recordedStream) {
	for j, f := range s.frames {
		write(c, msgFrame, frameRecord(f))
		write(c, msgData, s.data[j])
	}
	write(c, msgTrailer, mustJSON(t, s.trailer))
	_ = c.CloseWrite()
}

// reason reads what the peer said before it closed c, or says that it
// said nothing for 20 seconds.
func reason(c *transport.Conn) error {
	got := make(chan error, 1)
	go func() {
		for {
			if _, _, err := c.ReadMessage(nil); err != nil {
				got <- err
				return
			}
		}
	}()
	select {
	case err := <-got:
		return err
	case <-time.After(20 * time.Second):
		return errors.New("the peer said nothing for 20 seconds")
	}
}

// The receiver refuses what a sender may not do, says why to the sender,
// and leaves nothing in the repository.
func TestReceiverRefusesBadMessages(t *testing.T) {
	rec := record(t, 2)
	id := rec.header.ID
	// sendRest sends everything after the header and acceptance.
	sendRest := func(f *fakeSender) {
		write(f.control, msgMeta, metaMessage(metaName, metaData))
		for i, s := range rec.streams {
			sendStream(f.t, f.dial(streamPurpose(i, id)), s)
		}
		write(f.control, msgCommit, mustJSON(f.t, rec.final))
	}
	// streamWith sends the streams with stream 1 replaced by what send does.
	streamWith := func(send func(c *transport.Conn)) func(f *fakeSender) {
		return func(f *fakeSender) {
			f.announce(rec.header)
			write(f.control, msgMeta, metaMessage(metaName, metaData))
			sendStream(f.t, f.dial(streamPurpose(0, id)), rec.streams[0])
			send(f.dial(streamPurpose(1, id)))
			write(f.control, msgCommit, mustJSON(f.t, rec.final))
		}
	}
	s1 := rec.streams[1]
	for _, tt := range []struct {
		name string
		send func(f *fakeSender)
		want string
	}{
		{"header not JSON", func(f *fakeSender) { write(f.control, msgHeader, []byte("hello")) }, "backup header: invalid character"},
		{"header of a logical backup", func(f *fakeSender) {
			h := *rec.header
			h.Kind = archive.KindLogical
			write(f.control, msgHeader, mustJSON(t, &h))
		}, `kind "logical" cannot be received`},
		{"metadata before the header", func(f *fakeSender) {
			write(f.control, msgMeta, mustJSON(t, rec.header))
		}, "unexpected message 'M' instead of the backup header"},
		{"bad metadata message", func(f *fakeSender) {
			f.announce(rec.header)
			write(f.control, msgMeta, []byte{9, 0, 'x'})
		}, "metadata message with a bad name length 9"},
		{"frame on the control connection", func(f *fakeSender) {
			f.announce(rec.header)
			write(f.control, msgFrame, frameRecord(s1.frames[0]))
		}, "control connection: unexpected message 'F'"},
		{"control connection cut", func(f *fakeSender) {
			f.announce(rec.header)
			f.control.Close()
		}, "control connection: from 127.0.0.1:"},
		{"manifest unlike the header", func(f *fakeSender) {
			f.announce(rec.header)
			final := *rec.final
			final.Codec = "lz4:1"
			write(f.control, msgCommit, mustJSON(t, &final))
		}, "the manifest does not match the header it follows"},
		{"invalid manifest", func(f *fakeSender) {
			f.announce(rec.header)
			write(f.control, msgCommit, []byte(`{"format":1}`))
		}, "no backup id"},
		{"metadata object not sent", func(f *fakeSender) {
			f.announce(rec.header)
			for i, s := range rec.streams {
				sendStream(f.t, f.dial(streamPurpose(i, id)), s)
			}
			write(f.control, msgCommit, mustJSON(t, rec.final))
		}, "metadata object " + metaName + " is in the manifest but was not sent"},
		{"metadata object altered", func(f *fakeSender) {
			f.announce(rec.header)
			write(f.control, msgMeta, metaMessage(metaName, []byte("to_lsn = 43\n")))
			for i, s := range rec.streams {
				sendStream(f.t, f.dial(streamPurpose(i, id)), s)
			}
			write(f.control, msgCommit, mustJSON(t, rec.final))
		}, "metadata object " + metaName + ": digest "},
		{"implausible frame record", streamWith(func(c *transport.Conn) {
			write(c, msgFrame, make([]byte, frameRecordLen))
		}), "frame record with implausible sizes (stored 0, raw 0)"},
		{"short frame record", streamWith(func(c *transport.Conn) {
			write(c, msgFrame, frameRecord(s1.frames[0])[:5])
		}), "frame record of 5 bytes, want 20"},
		{"frame data shorter than its record", streamWith(func(c *transport.Conn) {
			write(c, msgFrame, frameRecord(s1.frames[0]))
			write(c, msgData, s1.data[0][:10])
		}), fmt.Sprintf("frame 0: expected %d bytes of data, got message 'D' of 10", s1.frames[0].Stored)},
		{"frame data longer than its record", streamWith(func(c *transport.Conn) {
			write(c, msgFrame, frameRecord(s1.frames[0]))
			write(c, msgData, append(bytes.Clone(s1.data[0]), 0))
		}), fmt.Sprintf("frame 0: expected %d bytes of data, got message 'D' of %d", s1.frames[0].Stored, s1.frames[0].Stored+1)},
		{"frame record instead of data", streamWith(func(c *transport.Conn) {
			write(c, msgFrame, frameRecord(s1.frames[0]))
			write(c, msgFrame, frameRecord(s1.frames[0]))
		}), "frame 0: expected"},
		{"data without a record", streamWith(func(c *transport.Conn) {
			write(c, msgData, s1.data[0])
		}), "unexpected message 'D' in a stream"},
		{"unknown message in a stream", streamWith(func(c *transport.Conn) {
			write(c, 'X', nil)
		}), "unexpected message 'X' in a stream"},
		{"altered frame", streamWith(func(c *transport.Conn) {
			d := bytes.Clone(s1.data[0])
			d[len(d)/2] ^= 1
			write(c, msgFrame, frameRecord(s1.frames[0]))
			write(c, msgData, d)
		}), "frame 0 at offset 0: checksum mismatch"},
		{"stream cut short", streamWith(func(c *transport.Conn) {
			write(c, msgFrame, frameRecord(s1.frames[0]))
			write(c, msgData, s1.data[0])
			_ = c.CloseWrite()
		}), "the stream ended after 1 frames without its trailer"},
		{"stream connection cut", streamWith(func(c *transport.Conn) {
			write(c, msgFrame, frameRecord(s1.frames[0]))
			c.Close()
		}), "connection closed without an end of stream"},
		{"trailer not JSON", streamWith(func(c *transport.Conn) {
			write(c, msgTrailer, []byte("{"))
		}), "stream trailer: unexpected end of JSON input"},
		{"message after the trailer", streamWith(func(c *transport.Conn) {
			for j, f := range s1.frames {
				write(c, msgFrame, frameRecord(f))
				write(c, msgData, s1.data[j])
			}
			write(c, msgTrailer, mustJSON(t, s1.trailer))
			write(c, msgFrame, frameRecord(s1.frames[0]))
		}), "data after the stream trailer: message 'F'"},
		{"trailer with another size", streamWith(func(c *transport.Conn) {
			for j, f := range s1.frames {
				write(c, msgFrame, frameRecord(f))
				write(c, msgData, s1.data[j])
			}
			tr := s1.trailer
			tr.Size++
			write(c, msgTrailer, mustJSON(t, tr))
			_ = c.CloseWrite()
		}), fmt.Sprintf("backend kept %d bytes of %d", s1.trailer.Size, s1.trailer.Size+1)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rv := &Receiver{}
			addr, done := serve(t, rv)
			f := dialFake(t, addr)
			f.t = t
			tt.send(f)
			got := outcome(t, done)
			t.Logf("receiver: %v", got.err)
			wantError(t, "receiver", got.err, tt.want)
			if got.m != nil {
				t.Errorf("the receiver returned a manifest with its error")
			}
			if tt.name != "control connection cut" {
				var pe *transport.PeerError
				if err := reason(f.control); !errors.As(err, &pe) {
					t.Errorf("the sender was not told why: %v", err)
				} else {
					wantError(t, "the reason the sender got", pe, tt.want)
				}
			}
			if objs := backupObjects(t, rv.Repo); len(objs) != 0 {
				t.Errorf("a refused transfer left %q", objs)
			}
		})
	}
	// The recording itself is a transfer the receiver takes.
	t.Run("the recording whole", func(t *testing.T) {
		rv := &Receiver{}
		addr, done := serve(t, rv)
		f := dialFake(t, addr)
		f.announce(rec.header)
		sendRest(f)
		typ, data, err := f.control.ReadMessage(nil)
		if err != nil || typ != msgOutcome {
			t.Fatalf("result: message %q, %v", typ, err)
		}
		if o, err := parseOutcome(data); err != nil || o.Status != StatusOK || o.Into != IntoRepository || o.Backup != id {
			t.Errorf("outcome %+v, %v; want the backup %s ok into the repository", o, err, id)
		}
		if got := outcome(t, done); got.err != nil {
			t.Fatal(got.err)
		}
		checkStored(t, rv.Repo, id, testFiles(4))
	})
}

// Connections that do not belong to the transfer in progress are refused,
// each told why and reported, and the transfer goes on.
func TestReceiverRefusesStrayConnections(t *testing.T) {
	rec := record(t, 2)
	id := rec.header.ID
	var mu sync.Mutex
	var rejected []string
	rv := &Receiver{Rejected: func(err error) {
		mu.Lock()
		defer mu.Unlock()
		rejected = append(rejected, err.Error())
	}}
	addr, done := serve(t, rv)

	// Before a transfer: a stream with no control connection, and a peer
	// with another token.
	stray := dial(t, addr, streamPurpose(0, id), testOptions())
	var pe *transport.PeerError
	if err := reason(stray); !errors.As(err, &pe) || !bytes.Contains([]byte(pe.Reason), []byte("unexpected connection")) {
		t.Errorf("a stream before the transfer: %v, want a refusal", err)
	}
	wrong := testOptions()
	wrong.Token = []byte("another-token-0123456789abcdef")
	if _, err := transport.Dial(testContext(t), addr, controlPurpose, wrong); !errors.Is(err, transport.ErrWrongToken) {
		t.Errorf("a peer with another token: %v, want a wrong token", err)
	}

	f := dialFake(t, addr)
	f.announce(rec.header)
	for _, p := range []string{controlPurpose, streamPurpose(2, id), streamPurpose(0, "20261121T190512Z-0000"), "stream 0", "listener"} {
		c := f.dial(p)
		if err := reason(c); !errors.As(err, &pe) || !bytes.Contains([]byte(pe.Reason), []byte("unexpected connection")) {
			t.Errorf("connection %q during the transfer: %v, want a refusal", p, err)
		}
	}
	write(f.control, msgMeta, metaMessage(metaName, metaData))
	// Two connections for stream 0: the receiver takes the first whose
	// handshake completes (not necessarily the first dialled) and refuses
	// the other, which Rejected names by its address.
	c0, second := f.dial(streamPurpose(0, id)), f.dial(streamPurpose(0, id))
	var refused *transport.Conn
	for deadline := time.Now().Add(20 * time.Second); refused == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		for _, r := range rejected {
			switch {
			case strings.HasSuffix(r, " from "+c0.LocalAddr().String()):
				refused, c0 = c0, second
			case strings.HasSuffix(r, " from "+second.LocalAddr().String()):
				refused = second
			}
		}
		mu.Unlock()
	}
	if refused == nil {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("two connections for stream 0: the receiver refused neither (%q)", rejected)
	}
	if err := reason(refused); !errors.As(err, &pe) {
		t.Errorf("a second connection for stream 0: %v, want a refusal", err)
	}
	sendStream(t, c0, rec.streams[0])
	sendStream(f.t, f.dial(streamPurpose(1, id)), rec.streams[1])
	write(f.control, msgCommit, mustJSON(t, rec.final))
	if got := outcome(t, done); got.err != nil {
		t.Fatalf("the transfer after refused connections: %v", got.err)
	}
	checkStored(t, rv.Repo, id, testFiles(4))
	mu.Lock()
	defer mu.Unlock()
	// Every refusal is reported: the early stream, the wrong token, five
	// strays and the duplicate.
	if len(rejected) != 8 {
		t.Errorf("%d rejections reported, want 8:\n%q", len(rejected), rejected)
	}
}

// fakeReceiver accepts a sender's connections and answers with reply.
func fakeReceiver(t *testing.T, reply func(control *transport.Conn, streams <-chan *transport.Conn)) string {
	t.Helper()
	l := listen(t)
	go func() {
		ctx := testContext(t)
		control, err := l.Accept(ctx)
		if err != nil {
			return
		}
		defer control.Close()
		streams := make(chan *transport.Conn, 16)
		go func() {
			for {
				c, err := l.Accept(ctx)
				if err != nil {
					close(streams)
					return
				}
				streams <- c
			}
		}()
		reply(control, streams)
	}()
	return l.Addr().String()
}

// readHeader reads the sender's header.
func readHeader(c *transport.Conn) {
	_, _, _ = c.ReadMessage(nil)
}

// The sender fails with the receiver's reason or a clear message when the
// receiver refuses or answers out of turn.
func TestSenderHandlesBadReceivers(t *testing.T) {
	h := testHeader(2)
	for _, tt := range []struct {
		name  string
		reply func(control *transport.Conn, streams <-chan *transport.Conn)
		// commit goes on to send the streams and the manifest
		commit bool
		want   string
	}{
		{"refusal", func(c *transport.Conn, _ <-chan *transport.Conn) {
			readHeader(c)
			c.Abort("target directory /x is not empty")
		}, false, "refused the backup: from "},
		{"refusal reason", func(c *transport.Conn, _ <-chan *transport.Conn) {
			readHeader(c)
			c.Abort("target directory /x is not empty")
		}, false, "peer says: target directory /x is not empty"},
		{"answer out of turn", func(c *transport.Conn, _ <-chan *transport.Conn) {
			readHeader(c)
			write(c, msgOutcome, nil)
		}, false, "unexpected message 'R' instead of an acceptance"},
		{"silence then close", func(c *transport.Conn, _ <-chan *transport.Conn) {
			readHeader(c)
			c.Close()
		}, false, "refused the backup: from "},
		{"result out of turn", func(c *transport.Conn, streams <-chan *transport.Conn) {
			readHeader(c)
			write(c, msgAccept, nil)
			drain(c, streams)
			write(c, msgAccept, nil)
		}, true, "unexpected message 'A' instead of the result"},
		{"failure after the data", func(c *transport.Conn, streams <-chan *transport.Conn) {
			readHeader(c)
			write(c, msgAccept, nil)
			drain(c, streams)
			c.Abort("prepare failed: mariabackup exited 1")
		}, true, "peer says: prepare failed: mariabackup exited 1"},
		{"part of a backup being taken asked for", func(c *transport.Conn, _ <-chan *transport.Conn) {
			readHeader(c)
			write(c, msgAccept, []byte(`{"streams":[{"skip":true},{}]}`))
		}, false, "part of stream 0 asked for, of a backup being taken"},
		{"failure during the data", func(c *transport.Conn, streams <-chan *transport.Conn) {
			readHeader(c)
			write(c, msgAccept, nil)
			s := <-streams
			_, _, _ = s.ReadMessage(nil)
			c.Abort("disk full")
			s.Close()
			for s := range streams {
				s.Close()
			}
		}, true, "disk full"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			addr := fakeReceiver(t, tt.reply)
			s, err := Dial(ctx, []string{addr}, testOptions())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if !tt.commit {
				err := s.Begin(ctx, h)
				wantError(t, "Begin", err, tt.want)
				wantError(t, "Begin", err, "receiver "+addr)
				return
			}
			_, err = writeBackup(ctx, t, s, testFiles(5), 2)
			wantError(t, "send", err, tt.want)
			wantError(t, "send", err, "receiver "+addr)
		})
	}
}

// drain reads the metadata, every stream to its end and the manifest.
func drain(c *transport.Conn, streams <-chan *transport.Conn) {
	var wg sync.WaitGroup
	for range 2 {
		s := <-streams
		wg.Go(func() {
			for {
				if _, _, err := s.ReadMessage(nil); err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	for {
		typ, _, err := c.ReadMessage(nil)
		if err != nil || typ == msgCommit {
			return
		}
	}
}

// A sender whose context ends while it waits for the result tells the
// receiver and fails.
func TestSenderInterrupted(t *testing.T) {
	committed := make(chan struct{})
	got := make(chan error, 1)
	addr := fakeReceiver(t, func(c *transport.Conn, streams <-chan *transport.Conn) {
		readHeader(c)
		write(c, msgAccept, nil)
		drain(c, streams)
		close(committed)
		got <- reason(c)
	})
	s, err := Dial(testContext(t), []string{addr}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(testContext(t))
	go func() {
		<-committed
		cancel()
	}()
	_, err = writeBackup(ctx, t, s, testFiles(6), 2)
	wantError(t, "send", err, context.Canceled.Error())
	select {
	case err := <-got:
		wantError(t, "what the receiver heard", err, "the sender was interrupted")
	case <-time.After(30 * time.Second):
		t.Fatal("the receiver heard nothing")
	}
}

func TestDial(t *testing.T) {
	ctx := testContext(t)
	if _, err := Dial(ctx, nil, testOptions()); err == nil || err.Error() != "no receiver to send to" {
		t.Errorf("Dial without receivers: %v", err)
	}
	// A port nobody listens on, after one that answers: the sender names
	// the one it could not reach, and closes the other.
	l := listen(t)
	accepted := make(chan *transport.Conn, 1)
	go func() {
		c, _ := l.Accept(ctx)
		accepted <- c
	}()
	closed := listen(t)
	dead := closed.Addr().String()
	closed.Close()
	_, err := Dial(ctx, []string{l.Addr().String(), dead}, testOptions())
	wantError(t, "Dial to a dead port", err, "receiver "+dead+": ")
	c := <-accepted
	if c == nil {
		t.Fatal("the live receiver saw no connection")
	}
	defer c.Close()
	if _, _, err := c.ReadMessage(nil); err == nil {
		t.Error("the connection to the live receiver is still open after Dial failed")
	}
}

// A backup that names a parent is checked before anything is stored or
// restored: a target directory refuses it (its parent does not come
// with it), a repository refuses it unless the parent is one of its
// complete backups, and refuses one that does not start at the parent's
// to_lsn as damage naming both values, committing nothing.
func TestReceiverChecksIncrementalChain(t *testing.T) {
	rec := record(t, 2)
	id := rec.header.ID
	sendAll := func(f *fakeSender, h, final *archive.Manifest) {
		f.announce(h)
		write(f.control, msgMeta, metaMessage(metaName, metaData))
		for i, s := range rec.streams {
			sendStream(f.t, f.dial(streamPurpose(i, id)), s)
		}
		write(f.control, msgCommit, mustJSON(f.t, final))
	}
	incremental := func(parent *archive.Manifest, fromLSN uint64) (h, final *archive.Manifest) {
		h, final = new(archive.Manifest), new(archive.Manifest)
		*h, *final = *rec.header, *rec.final
		h.Parent, final.Parent, final.Depth = parent.ID, parent.ID, 1
		final.Positions.FromLSN, final.Positions.ToLSN = fromLSN, fromLSN+1000
		return h, final
	}

	t.Run("target directory", func(t *testing.T) {
		target := filepath.Join(t.TempDir(), "target")
		rv := &Receiver{Listener: listen(t), Datadir: &restore.Job{TargetDir: target}}
		done := make(chan error, 1)
		go func() { _, err := rv.Serve(testContext(t)); done <- err }()
		f := dialFake(t, rv.Listener.Addr().String())
		h, _ := incremental(&archive.Manifest{ID: "20261120T030000Z-0001"}, 0)
		write(f.control, msgHeader, mustJSON(t, h))
		want := "backup " + id + " is an incremental on 20261120T030000Z-0001: a target directory takes only a full backup"
		wantError(t, "sender", reason(f.control), want)
		wantError(t, "receiver", <-done, want)
		if _, err := os.Stat(target); err == nil {
			t.Errorf("the refused incremental claimed %s", target)
		}
	})

	t.Run("repository", func(t *testing.T) {
		r := repotest.New(t)
		parent := repotest.Store(t, r, repotest.Backup{ID: "20261120T030000Z-0001", Files: map[string]string{"f": "a"}})
		held := backupObjects(t, r)
		for _, tt := range []struct {
			name    string
			send    func(f *fakeSender)
			want    string
			corrupt bool
		}{
			{"parent not in the repository", func(f *fakeSender) {
				h, _ := incremental(&archive.Manifest{ID: "20261119T030000Z-0009"}, 0)
				write(f.control, msgHeader, mustJSON(t, h))
			}, "is an incremental on 20261119T030000Z-0009, which this repository cannot give", false},
			{"from_lsn not the parent's to_lsn", func(f *fakeSender) {
				h, final := incremental(parent, parent.Positions.ToLSN+1)
				sendAll(f, h, final)
			}, fmt.Sprintf("backup %s starts at from_lsn %d, but its parent %s ends at last_lsn %d (to_lsn %d)", id, parent.Positions.ToLSN+1, parent.ID, parent.Positions.ToLSN, parent.Positions.ToLSN), true},
			{"manifest naming another parent", func(f *fakeSender) {
				h, final := incremental(parent, parent.Positions.ToLSN)
				final.Parent = ""
				sendAll(f, h, final)
			}, "the manifest does not match the header it follows", false},
		} {
			t.Run(tt.name, func(t *testing.T) {
				addr, done := serve(t, &Receiver{Repo: r})
				f := dialFake(t, addr)
				f.t = t
				tt.send(f)
				got := outcome(t, done)
				wantError(t, "receiver", got.err, tt.want)
				if archive.IsCorrupt(got.err) != tt.corrupt {
					t.Errorf("receiver: %v is damage: %v, want %v", got.err, archive.IsCorrupt(got.err), tt.corrupt)
				}
				wantError(t, "the reason the sender got", reason(f.control), tt.want)
				if objs := backupObjects(t, r); !slices.Equal(objs, held) {
					t.Errorf("a refused incremental left %q", objs)
				}
			})
		}
		// One that joins its parent is taken.
		addr, done := serve(t, &Receiver{Repo: r})
		f := dialFake(t, addr)
		h, final := incremental(parent, parent.Positions.ToLSN)
		sendAll(f, h, final)
		if got := outcome(t, done); got.err != nil || got.m.Parent != parent.ID {
			t.Fatalf("an incremental that joins its parent: %+v, %v", got.m, got.err)
		}
		checkStored(t, r, id, testFiles(4))
	})
}

// A sender that stops mid-transfer (SIGSTOP) sends no heartbeat either:
// each connection's idle timeout ends the session, whose failure aborts
// the other streams' reads at once, and the receiver leaves no partial
// target or stored backup.
func TestReceiverGivesUpOnSilentSender(t *testing.T) {
	rec := record(t, 2)
	id := rec.header.ID
	const limit = 2 * time.Second
	recvOpt := testOptions()
	recvOpt.IdleTimeout = limit
	silent := testOptions()
	silent.Heartbeat = -1
	// stop sends the header, the metadata and the first frame of each
	// stream, then nothing more, holding every connection open.
	stop := func(addr string) *fakeSender {
		f := &fakeSender{t: t, addr: addr, opt: silent, control: dial(t, addr, controlPurpose, silent)}
		f.announce(rec.header)
		write(f.control, msgMeta, metaMessage(metaName, metaData))
		for i, s := range rec.streams {
			c := f.dial(streamPurpose(i, id))
			write(c, msgFrame, frameRecord(s.frames[0]))
			write(c, msgData, s.data[0])
		}
		return f
	}
	check := func(t *testing.T, start time.Time, err error) {
		t.Helper()
		took := time.Since(start)
		wantError(t, "receiver", err, fmt.Sprintf("no message for %s (idle timeout)", limit))
		// Not the transport's stall timeout (10 s): the idle one, once.
		if took < limit || took > limit+3*time.Second {
			t.Errorf("the receiver gave up after %s, want about %s", took, limit)
		}
	}
	listenIdle := func(t *testing.T) *transport.Listener {
		l, err := transport.Listen(testContext(t), "127.0.0.1:0", recvOpt)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}

	// giveUp serves rv to a sender that goes silent and checks that it
	// gives up after the idle timeout.
	giveUp := func(t *testing.T, rv *Receiver) {
		t.Helper()
		done := make(chan error, 1)
		go func() { _, err := rv.Serve(testContext(t)); done <- err }()
		start := time.Now()
		stop(rv.Listener.Addr().String())
		var err error
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the receiver still waits for a silent sender after 30 s")
		}
		check(t, start, err)
	}

	t.Run("target directory", func(t *testing.T) {
		target := filepath.Join(t.TempDir(), "target")
		giveUp(t, &Receiver{Listener: listenIdle(t), Datadir: &restore.Job{TargetDir: target}})
		if left, _ := os.ReadDir(target); len(left) > 0 {
			t.Errorf("the partial target %s holds %d entries", target, len(left))
		}
	})

	t.Run("repository", func(t *testing.T) {
		r := repotest.New(t)
		giveUp(t, &Receiver{Listener: listenIdle(t), Repo: r, Workers: 2})
		if held := backupObjects(t, r); len(held) > 0 {
			t.Errorf("the repository holds %v of the abandoned backup", held)
		}
	})
}
