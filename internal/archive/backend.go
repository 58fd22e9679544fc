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

// ContentVerifier is an Input, an Output or a StreamOutput whose streams'
// content is proven otherwise than by the digest of their bytes: a
// deduplicating repository's recipe names every block by a keyed hash,
// which reading checks. A Writer does not hash what it writes to one (the
// output's Close sets the record's digest) nor compute its frames'
// CRC-32C (they get 0), and a Reader does not hash what it reads from
// one, nor check its frames' CRC-32C: the Input proves every byte it
// gives, and its frames may carry no CRC (whoever passes them on computes
// it). A Writer to such an Output gives the files XXH3 digests
// (HashXXH3, Manifest.FileHash), which check that the blocks were put
// back together as cut: hashing every byte a second time with a
// cryptographic hash would prove nothing more.
type ContentVerifier interface{ VerifiesContent() }

// StoredCounter is a StreamOutput that stores other bytes than the frames
// it is given (a deduplicating repository: the new blocks alone): a
// Writer counts what it stored so far as the stream's output (Counter.Out)
// as it grows, and the record's Stored at the end, not the frames.
type StoredCounter interface{ StoredSoFar() int64 }

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
	up := storage.StartUpload(ctx, o.Backend, o.Dir+"/"+name)
	return &backendStream{o: o, ctx: ctx, num: i, name: name, up: up, index: []byte(indexMagic)}, nil
}

type backendStream struct {
	o     BackendOutput
	ctx   context.Context
	num   int
	name  string
	up    *storage.Upload
	index []byte
}

func (s *backendStream) WriteFrame(f Frame, stored []byte) error {
	if _, err := s.up.Write(stored); err != nil {
		return fmt.Errorf("store %s: %w", s.name, err)
	}
	s.index = appendIndexRecord(s.index, f)
	return nil
}

func (s *backendStream) Close(st Stream) (Stream, error) {
	n, err := s.up.Close()
	if err != nil {
		return st, fmt.Errorf("store %s: %w", s.name, err)
	}
	if n != st.Size {
		return st, fmt.Errorf("store %s: backend kept %d bytes of %d", s.name, n, st.Size)
	}
	idx, err := PutSmall(s.ctx, s.o.Backend, s.o.Dir, IndexName(s.num), s.index, s.o.Hash)
	if err != nil {
		return st, err
	}
	st.Index = idx
	return st, nil
}

func (s *backendStream) Abort(cause error) {
	s.up.Abort(cause)
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
	frames, err := in.index(ctx, s)
	if err != nil {
		return nil, err
	}
	o := &objectFrames{ctx: ctx, frames: frames, open: in.opener(ctx, s)}
	if err := o.openRun(0, -1); err != nil {
		return nil, err
	}
	return o, nil
}

// OpenFrames reads and checks the stream's index, then reads the frames
// asked for, each run of adjacent ones with one ranged read.
func (in BackendInput) OpenFrames(ctx context.Context, i int, s Stream, nums []int) (FrameSource, error) {
	all, err := in.index(ctx, s)
	if err != nil {
		return nil, err
	}
	frames := make([]Frame, len(nums))
	for k, n := range nums {
		if n < 0 || n >= len(all) || k > 0 && n <= nums[k-1] {
			return nil, Corruptf("frame %d: not in the frame index of %d frames", n, len(all))
		}
		frames[k] = all[n]
	}
	return &objectFrames{ctx: ctx, frames: frames, nums: nums, open: in.opener(ctx, s)}, nil
}

// FrameIndex reads and parses stream s's frame index.
func (in BackendInput) FrameIndex(ctx context.Context, s Stream) ([]Frame, error) {
	return in.index(ctx, s)
}

// index reads and parses stream s's frame index.
func (in BackendInput) index(ctx context.Context, s Stream) ([]Frame, error) {
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
	return frames, nil
}

// opener opens length bytes (< 0: to the end) of s's object from off.
func (in BackendInput) opener(ctx context.Context, s Stream) func(off, length int64) (io.ReadCloser, error) {
	name := in.Dir + "/" + s.Name
	return func(off, length int64) (io.ReadCloser, error) {
		rc, err := in.Backend.Open(ctx, name, off, length)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, missing(name, err)
		}
		return rc, err
	}
}

// objectFrames yields frames of a stream object: all of them, read front
// to back with one open; or some (nums set), each run of frames adjacent
// in the object with one ranged open.
type objectFrames struct {
	ctx    context.Context // the Read's, for FrameBuffer
	frames []Frame
	nums   []int // the frames' numbers in the stream; nil: all, in order
	next   int
	open   func(off, length int64) (io.ReadCloser, error)
	rc     io.ReadCloser
	br     *bufio.Reader
	pos    int64 // where br stands in the object
}

// openRun opens the object at off for length bytes (< 0: to the end).
func (o *objectFrames) openRun(off, length int64) error {
	if o.rc != nil {
		o.rc.Close()
		o.rc = nil
	}
	rc, err := o.open(off, length)
	if err != nil {
		return err
	}
	o.rc, o.pos = rc, off
	if o.br == nil {
		o.br = bufio.NewReaderSize(rc, 1<<20)
	} else {
		o.br.Reset(rc)
	}
	return nil
}

// num is the stream's number of the i-th frame yielded.
func (o *objectFrames) num(i int) int {
	if o.nums != nil {
		return o.nums[i]
	}
	return i
}

func (o *objectFrames) Next() (Frame, []byte, error) {
	if o.next == len(o.frames) {
		if o.nums == nil {
			if n, _ := o.br.Read(make([]byte, 1)); n != 0 {
				return Frame{}, nil, Corruptf("data after the last indexed frame (the object is longer than its index)")
			}
		}
		return Frame{}, nil, io.EOF
	}
	f := o.frames[o.next]
	if o.rc == nil || o.pos != f.Offset {
		// The next run of adjacent frames.
		end := o.next + 1
		for end < len(o.frames) && o.frames[end].Offset == o.frames[end-1].Offset+int64(o.frames[end-1].Stored) {
			end++
		}
		last := o.frames[end-1]
		if err := o.openRun(f.Offset, last.Offset+int64(last.Stored)-f.Offset); err != nil {
			return f, nil, err
		}
	}
	buf, err := FrameBuffer(o.ctx, f)
	if err != nil {
		return f, nil, err
	}
	buf = buf[:f.Stored]
	if _, err := io.ReadFull(o.br, buf); err != nil {
		putBuf(buf)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return f, nil, Corruptf("frame %d at offset %d: object is truncated", o.num(o.next), f.Offset)
		}
		return f, nil, fmt.Errorf("frame %d at offset %d: %w", o.num(o.next), f.Offset, err)
	}
	o.pos += int64(f.Stored)
	o.next++
	return f, buf, nil
}

func (o *objectFrames) Close() error {
	if o.rc == nil {
		return nil
	}
	return o.rc.Close()
}
