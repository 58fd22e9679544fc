package archive

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/backstream/backstream/internal/storage"
)

// Output is where a Writer puts its streams: a repository on a storage
// backend, or (for send) connections to other hosts.
type Output interface {
	// OpenStream starts stream i, to be stored under name (relative to the
	// backup's directory).
	OpenStream(ctx context.Context, i int, name string) (StreamOutput, error)
}

// StreamOutput takes one stream's frames, in order.
type StreamOutput interface {
	// WriteFrame writes one frame; f describes it (sizes and CRC-32C).
	WriteFrame(f Frame, stored []byte) error
	// Close is called after the last frame with the stream's record. It
	// returns once the stream is durable, with the record completed (for a
	// repository: its frame index).
	Close(s Stream) (Stream, error)
	// Abort discards the stream, including a closed one.
	Abort(cause error)
}

// Input provides the frames of each stream of a backup.
type Input interface {
	// OpenStream opens stream i, described by s.
	OpenStream(ctx context.Context, i int, s Stream) (FrameSource, error)
}

// FrameSource yields one stream's frames in order.
type FrameSource interface {
	// Next returns the next frame and its stored bytes, in a buffer the
	// caller owns; io.EOF after the last frame.
	Next() (Frame, []byte, error)
	Close() error
}

// BackendOutput stores streams as objects of a backup's directory in a
// repository, each with its frame index.
type BackendOutput struct {
	Backend storage.Backend
	Dir     string // "backups/<id>"
	Hash    string // digest algorithm of the index records
}

// OpenStream starts a Put of the stream object that lasts until Close.
func (o BackendOutput) OpenStream(ctx context.Context, i int, name string) (StreamOutput, error) {
	pr, pw := io.Pipe()
	s := &backendStream{o: o, ctx: ctx, num: i, name: name, pw: pw, done: make(chan putResult, 1), index: []byte(indexMagic)}
	go func() {
		n, err := o.Backend.Put(ctx, o.Dir+"/"+name, pr)
		closeErr := err
		if closeErr == nil {
			closeErr = errPutReturned
		}
		pr.CloseWithError(closeErr)
		s.done <- putResult{n, err}
	}()
	return s, nil
}

// errPutReturned ends the pipe to a Put that returned before its data did.
var errPutReturned = errors.New("backend stopped reading before the stream ended")

type putResult struct {
	n   int64
	err error
}

type backendStream struct {
	o      BackendOutput
	ctx    context.Context
	num    int
	name   string
	pw     *io.PipeWriter
	done   chan putResult
	index  []byte
	ended  bool
	result putResult
}

func (s *backendStream) WriteFrame(f Frame, stored []byte) error {
	if _, err := s.pw.Write(stored); err != nil {
		return fmt.Errorf("store %s: %w", s.name, err)
	}
	s.index = appendIndexRecord(s.index, f)
	return nil
}

func (s *backendStream) wait() putResult {
	if !s.ended {
		s.ended = true
		s.result = <-s.done
	}
	return s.result
}

func (s *backendStream) Close(st Stream) (Stream, error) {
	s.pw.Close()
	res := s.wait()
	if res.err != nil {
		return st, fmt.Errorf("store %s: %w", s.name, res.err)
	}
	if res.n != st.Size {
		return st, fmt.Errorf("store %s: backend kept %d bytes of %d", s.name, res.n, st.Size)
	}
	idx, err := PutSmall(s.ctx, s.o.Backend, s.o.Dir, IndexName(s.num), s.index, s.o.Hash)
	if err != nil {
		return st, err
	}
	st.Index = idx
	return st, nil
}

func (s *backendStream) Abort(cause error) {
	s.pw.CloseWithError(cause)
	s.wait()
	// The pipeline's context is gone by now; cleaning up gets its own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), time.Minute)
	defer cancel()
	_ = s.o.Backend.Delete(ctx, s.o.Dir+"/"+s.name)
	_ = s.o.Backend.Delete(ctx, s.o.Dir+"/"+IndexName(s.num))
}

// BackendInput reads the streams of a backup from its repository.
type BackendInput struct {
	Backend storage.Backend
	Dir     string
}

// OpenStream reads and checks the stream's index, then opens the object.
func (in BackendInput) OpenStream(ctx context.Context, i int, s Stream) (FrameSource, error) {
	if s.Index.Name == "" {
		return nil, Corruptf("the manifest names no frame index")
	}
	idx, err := GetSmall(ctx, in.Backend, in.Dir, s.Index)
	if err != nil {
		return nil, err
	}
	frames, err := ParseIndex(idx, s.Size)
	if err != nil {
		return nil, Corruptf("%v", err)
	}
	rc, err := in.Backend.Open(ctx, in.Dir+"/"+s.Name, 0, -1)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, missing(in.Dir+"/"+s.Name, err)
	}
	if err != nil {
		return nil, err
	}
	return &objectFrames{ctx: ctx, frames: frames, rc: rc, br: bufio.NewReaderSize(rc, 1<<20)}, nil
}

type objectFrames struct {
	ctx    context.Context // the Read's, for FrameBuffer
	frames []Frame
	next   int
	rc     io.ReadCloser
	br     *bufio.Reader
}

func (o *objectFrames) Next() (Frame, []byte, error) {
	if o.next == len(o.frames) {
		if n, _ := o.br.Read(make([]byte, 1)); n != 0 {
			return Frame{}, nil, Corruptf("data after the last indexed frame (the object is longer than its index)")
		}
		return Frame{}, nil, io.EOF
	}
	f := o.frames[o.next]
	buf, err := FrameBuffer(o.ctx, f)
	if err != nil {
		return f, nil, err
	}
	buf = buf[:f.Stored]
	if _, err := io.ReadFull(o.br, buf); err != nil {
		putBuf(buf)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return f, nil, Corruptf("frame %d at offset %d: object is truncated", o.next, f.Offset)
		}
		return f, nil, fmt.Errorf("frame %d at offset %d: %w", o.next, f.Offset, err)
	}
	o.next++
	return f, buf, nil
}

func (o *objectFrames) Close() error { return o.rc.Close() }
