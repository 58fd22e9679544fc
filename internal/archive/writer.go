package archive

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/xbstream"
)

// DefaultFrameSize is the uncompressed size at which a frame is cut. Frames
// are the unit of parallel compression and decoding; a few MiB keeps every
// core busy while the compression ratio stays within a percent of one
// continuous stream.
const DefaultFrameSize = 4 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Counter receives byte counts as data moves; a progress tracker fits.
type Counter interface {
	In(n int64)
	Out(n int64)
}

// WriterOptions configure a Writer.
type WriterOptions struct {
	Output    Output // where the streams go (BackendOutput for a repository)
	Streams   int    // stream objects written in parallel
	Workers   int    // compression goroutines; 0 means GOMAXPROCS
	Codec     codec.Codec
	Hash      string // digest algorithm; "" means DefaultHash
	FrameSize int    // 0 means DefaultFrameSize
	Counter   Counter
	// Group, if set, names the group of a new path: every path of a group
	// goes to the stream the group's first path went to, so that files
	// meant to be read one after another (a table's data files) come out
	// of one stream while other streams carry other groups.
	Group func(path string) string
	// Memory, if set, bounds the backup data the writer holds at once (see
	// Writer); Add waits for room. nil: bounded by the queues alone.
	Memory *Memory
}

// Writer fans an xbstream out into stream objects: chunks are bound to a
// stream by path, cut into frames, compressed by a pool of workers and
// written to the backend in order, one Put per stream, all in parallel.
//
// Without a Memory budget, what it holds is bounded by its queues: about
// Streams x (16 queued chunks + Workers+2 frames) x (FrameSize or one
// chunk, whichever is larger: mariabackup's are up to 10 MiB). With one,
// each chunk takes its buffer's size from the budget in Add, before it is
// queued, and only Add waits for room. A chunk copied into a frame keeps
// its bytes' share of the charge for the frame (the rest is given back), a
// chunk that is a frame of its own keeps all of it; the frame keeps the
// charge through its compression (the raw frame is recycled once
// compressed) and gives it back once written. Frames being built hold
// less than FrameSize each and wait for more chunks, so Add never asks
// for more than the budget less a frame per stream: what it waits for
// is always held by something that will give it back without it. What
// lies outside the budget is bounded by the goroutines, not the queues:
// the buffer each compressor writes into, the frame buffers' free room,
// and the chunk the caller is reading.
type Writer struct {
	opt    WriterOptions
	ctx    context.Context
	cancel context.CancelCauseFunc
	g      *errgroup.Group

	jobs     chan *frameJob
	streams  []*streamWriter
	binding  map[string]int // path -> stream, for the whole life of the path
	groups   map[string]int // group -> stream (WriterOptions.Group)
	barriers []Barrier
	load     []int64 // raw bytes routed to each stream
	closed   bool
	fileHash string // the files' digest algorithm
}

// routed is what the router hands a stream's builder: a chunk, or a cut
// for a barrier (see Barrier).
type routed struct {
	c   xbstream.Chunk
	raw []byte
	// charge is what the chunk took from the writer's Memory.
	charge int64
	// alone puts the chunk in a frame of its own (the chunk of a barrier).
	alone bool
	// cut asks the builder to close its current frame and answer with the
	// number of frames it has made; forget, if set, is a path the barrier
	// removes from this stream's files.
	cut    chan int
	forget string
}

type frameJob struct {
	raw    []byte // recycled once compressed
	rawLen int
	out    []byte
	err    error
	done   chan struct{}
	// charge is what the frame holds of the writer's Memory: its chunks'.
	charge int64
}

type streamWriter struct {
	w     *Writer
	num   int
	name  string
	in    chan routed
	order chan *frameJob

	// builder state, owned by the builder goroutine
	frame       []byte
	frameCharge int64 // of the chunks in frame
	frames      int   // frames submitted
	files       *fileTracker

	// set by the writer goroutine
	out    StreamOutput
	result Stream
}

// NewWriter starts the pipeline. The caller feeds it with Add from one
// goroutine, then calls Close; or Abort on failure.
func NewWriter(ctx context.Context, opt WriterOptions) (*Writer, error) {
	if opt.Streams < 1 {
		return nil, fmt.Errorf("archive: need at least one stream, got %d", opt.Streams)
	}
	if opt.Output == nil || opt.Codec == nil {
		return nil, errors.New("archive: a writer needs an output and a codec")
	}
	if opt.Workers < 1 {
		opt.Workers = runtime.GOMAXPROCS(0)
	}
	if opt.FrameSize < 1 {
		opt.FrameSize = DefaultFrameSize
	}
	if opt.Hash == "" {
		opt.Hash = DefaultHash
	}
	if _, err := NewHash(opt.Hash); err != nil {
		return nil, err
	}
	if m := opt.Memory; m != nil && m.Size() < MinWriterMemory(opt.Streams, opt.FrameSize) {
		return nil, &WriterMemoryError{Streams: opt.Streams, Need: MinWriterMemory(opt.Streams, opt.FrameSize), Have: m.Size()}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	g, gctx := errgroup.WithContext(ctx)
	w := &Writer{
		opt:     opt,
		ctx:     gctx,
		cancel:  cancel,
		g:       g,
		jobs:    make(chan *frameJob, opt.Workers*2),
		binding: make(map[string]int),
		groups:  make(map[string]int),
		load:    make([]int64, opt.Streams),
	}
	for range opt.Workers {
		g.Go(w.compressLoop)
	}
	// An output that proves its streams' content gets files' digests
	// that only check their reassembly (HashXXH3).
	w.fileHash = opt.Hash
	if _, ok := opt.Output.(ContentVerifier); ok {
		w.fileHash = HashXXH3
	}
	var builders sync.WaitGroup
	for i := range opt.Streams {
		s := &streamWriter{
			w:     w,
			num:   i,
			name:  StreamName(i, opt.Codec),
			in:    make(chan routed, 16),
			order: make(chan *frameJob, opt.Workers+2),
			files: newFileTracker(w.fileHash),
		}
		w.streams = append(w.streams, s)
		builders.Add(1)
		g.Go(func() error {
			defer builders.Done()
			return s.build()
		})
		g.Go(s.write)
	}
	// The compressors stop once no builder can submit any more.
	go func() {
		builders.Wait()
		close(w.jobs)
	}()
	return w, nil
}

// MinWriterMemory is the smallest Memory a Writer of streams streams of
// frameSize frames (0: DefaultFrameSize) takes: a frame being built for
// each stream and room for two frames more.
func MinWriterMemory(streams, frameSize int) int64 {
	if frameSize < 1 {
		frameSize = DefaultFrameSize
	}
	return int64(streams+2) * int64(frameSize)
}

// WriterMemoryError is a Memory too small for a Writer's streams.
type WriterMemoryError struct {
	Streams    int
	Need, Have int64
}

func (e *WriterMemoryError) Error() string {
	return fmt.Sprintf("a memory budget of %d MiB is too small to write %d streams: it needs at least %d MiB", e.Have>>20, e.Streams, e.Need>>20)
}

// StreamName is the object name of stream i, relative to the backup's dir.
func StreamName(i int, c codec.Codec) string {
	return fmt.Sprintf("streams/%05d.xbs%s", i, c.Suffix())
}

// Streams are the n streams of a backup's header, named for codec c.
func Streams(n int, c codec.Codec) []Stream {
	out := make([]Stream, n)
	for i := range out {
		out[i].Object.Name = StreamName(i, c)
	}
	return out
}

// RenameAcrossStreamsError is a rename chunk onto a path another stream
// holds: the two streams' histories of that path could interleave wrongly
// on restore, so the writer refuses it. mariabackup writes such renames
// only for DDL on non-InnoDB tables during the copy.
type RenameAcrossStreamsError struct {
	Path, NewPath string
	From, To      int // the streams holding Path and NewPath
}

func (e *RenameAcrossStreamsError) Error() string {
	return fmt.Sprintf("archive: rename %q -> %q: target path already bound to stream %d, source to stream %d", e.Path, e.NewPath, e.To, e.From)
}

// IndexName is the object name of stream i's frame index.
func IndexName(i int) string {
	return fmt.Sprintf("streams/%05d.idx", i)
}

// Add routes one chunk to its stream. raw is the chunk's encoding and c
// aliases it; the Writer keeps both until the frame holding them is written.
func (w *Writer) Add(c *xbstream.Chunk, raw []byte) error {
	i, ok := w.binding[c.Path]
	if c.Type == xbstream.TypeRemove {
		// A remove may name a directory: it must travel in the one stream
		// that holds everything below it, or be ordered against others.
		holders := w.holders(c.Path)
		switch {
		case len(holders) > 1:
			return w.barrier(c, raw, holders[0])
		case len(holders) == 1:
			i, ok = holders[0], true
		}
	}
	if !ok {
		i = w.newPathStream(c.Path)
	}
	w.binding[c.Path] = i
	if c.Type == xbstream.TypeRename {
		if j, bound := w.binding[c.NewPath]; bound && j != i {
			// The new name already lives in another stream; streams are
			// applied independently, so the two histories could interleave
			// wrongly on restore.
			return &RenameAcrossStreamsError{Path: c.Path, NewPath: c.NewPath, From: i, To: j}
		}
		w.binding[c.NewPath] = i
	}
	return w.send(i, routed{c: *c, raw: raw})
}

// Paths lists every path the writer routed a chunk of (a removed or
// renamed one too), sorted. Call it from the goroutine that calls Add.
func (w *Writer) Paths() []string {
	return slices.Sorted(maps.Keys(w.binding))
}

// newPathStream picks the stream of a path seen for the first time: its
// group's, or the least loaded.
func (w *Writer) newPathStream(p string) int {
	if w.opt.Group == nil {
		return w.leastLoaded()
	}
	g := w.opt.Group(p)
	i, ok := w.groups[g]
	if !ok {
		i = w.leastLoaded()
		w.groups[g] = i
	}
	return i
}

// send hands r to stream i, a chunk once the budget has room for it.
func (w *Writer) send(i int, r routed) error {
	if r.cut == nil {
		if m := w.opt.Memory; m != nil {
			r.charge = min(int64(cap(r.raw)), m.Size()-int64(len(w.streams)*w.opt.FrameSize))
			if err := m.acquire(w.ctx, r.charge); err != nil {
				return w.err()
			}
		}
		w.load[i] += int64(len(r.raw))
		if w.opt.Counter != nil {
			w.opt.Counter.In(int64(len(r.raw)))
		}
	}
	select {
	case w.streams[i].in <- r:
		return nil
	case <-w.ctx.Done():
		return w.err()
	}
}

// barrier writes a remove whose paths live in several streams: every
// stream closes its current frame, the chunk goes alone into a frame of
// stream owner, and the manifest records where each stream stood, so that
// a reader applies the streams' earlier frames, then the remove, then the
// rest (see Barrier).
func (w *Writer) barrier(c *xbstream.Chunk, raw []byte, owner int) error {
	b := Barrier{Frames: make([]int, len(w.streams)), Stream: owner, Path: c.Path}
	for i := range w.streams {
		r := routed{cut: make(chan int, 1)}
		if i != owner {
			r.forget = c.Path
		}
		if err := w.send(i, r); err != nil {
			return err
		}
		select {
		case b.Frames[i] = <-r.cut:
		case <-w.ctx.Done():
			return w.err()
		}
	}
	w.barriers = append(w.barriers, b)
	w.binding[c.Path] = owner
	return w.send(owner, routed{c: *c, raw: raw, alone: true})
}

// holders lists the streams that hold p or paths below it. A removal
// ending in "*" is a prefix pattern (mariabackup's partition removal).
func (w *Writer) holders(p string) []int {
	var out []int
	seen := map[int]bool{}
	prefix, pattern := strings.CutSuffix(p, "*")
	for q, j := range w.binding {
		hit := q == p || strings.HasPrefix(q, p+"/") || pattern && strings.HasPrefix(q, prefix)
		if hit && !seen[j] {
			seen[j] = true
			out = append(out, j)
		}
	}
	sort.Ints(out)
	return out
}

func (w *Writer) leastLoaded() int {
	best := 0
	for i, l := range w.load {
		if l < w.load[best] {
			best = i
		}
	}
	return best
}

// err reports why the pipeline stopped: the first error of its goroutines,
// the cause given to Abort, or the caller's cancellation. It must not wait
// for the goroutines: the builders end only when their input is closed,
// and the caller that would close it is the one asking.
func (w *Writer) err() error {
	return context.Cause(w.ctx)
}

// Close flushes every stream, waits for all objects to be durable, and
// returns what the manifest needs. On error the streams are discarded.
func (w *Writer) Close() (Result, error) {
	if !w.closed {
		w.closed = true
		for _, s := range w.streams {
			close(s.in)
		}
	}
	if err := w.g.Wait(); err != nil {
		w.removeObjects(err)
		return Result{}, err
	}
	w.cancel(nil)
	res := Result{Barriers: w.barriers}
	if w.fileHash != w.opt.Hash {
		res.FileHash = w.fileHash
	}
	for _, s := range w.streams {
		res.Streams = append(res.Streams, s.result)
		res.Files = append(res.Files, s.files.records(s.num)...)
	}
	sort.Slice(res.Files, func(a, b int) bool { return res.Files[a].Path < res.Files[b].Path })
	return res, nil
}

// Result is what a Writer made, for the manifest: the streams, the files
// sorted by path, and the barriers between streams; FileHash is the
// files' digest algorithm when it is not the writer's Hash.
type Result struct {
	Streams  []Stream
	Files    []File
	Barriers []Barrier
	FileHash string
}

// Abort stops the pipeline with cause and removes every object written.
func (w *Writer) Abort(cause error) {
	if cause == nil {
		cause = errors.New("backup aborted")
	}
	w.cancel(cause)
	if !w.closed {
		w.closed = true
		for _, s := range w.streams {
			close(s.in)
		}
	}
	_ = w.g.Wait()
	w.removeObjects(cause)
}

// removeObjects discards every stream the writer opened.
func (w *Writer) removeObjects(cause error) {
	for _, s := range w.streams {
		if s.out != nil {
			s.out.Abort(cause)
		}
	}
}

// Encode encodes c into a buffer of the Writer's and returns the chunk to
// pass to Add with its encoding: the returned chunk's payload aliases the
// encoding, not c's. It is safe for concurrent use, so producers can encode
// in parallel and leave only Add to one goroutine.
func (w *Writer) Encode(c *xbstream.Chunk) (xbstream.Chunk, []byte, error) {
	raw, err := xbstream.AppendChunk(getBuf(len(c.Payload)+len(c.Path)+64), c)
	if err != nil {
		return xbstream.Chunk{}, nil, err
	}
	out := *c
	out.Payload = raw[len(raw)-len(c.Payload):]
	return out, raw, nil
}

// AddFile adds the whole content of r as the file path, in payload chunks
// of chunkSize, then its end.
func (w *Writer) AddFile(path string, r io.Reader, chunkSize int) error {
	buf := make([]byte, chunkSize)
	var off uint64
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			c, raw, eerr := w.Encode(&xbstream.Chunk{Type: xbstream.TypePayload, Path: path, Offset: off, Payload: buf[:n]})
			if eerr != nil {
				return eerr
			}
			if aerr := w.Add(&c, raw); aerr != nil {
				return aerr
			}
			off += uint64(n)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return err
		}
	}
	c, raw, err := w.Encode(&xbstream.Chunk{Type: xbstream.TypeEOF, Path: path})
	if err != nil {
		return err
	}
	return w.Add(&c, raw)
}

// Buffer returns a buffer with capacity of at least n for a chunk that will
// be passed to Add; the Writer recycles it once the chunk is written. It
// suits xbstream.Reader's Alloc.
func (w *Writer) Buffer(n int) []byte { return getBuf(n) }

func (w *Writer) compressLoop() error {
	_, none := w.opt.Codec.(codec.None)
	for job := range w.jobs {
		job.rawLen = len(job.raw)
		if none {
			// Stored as it is: the raw frame is the stored one, not copied.
			job.out, job.raw = job.raw, nil
			close(job.done)
			continue
		}
		// Room for incompressible data (zstd's bound is n + n/256 + 64 KiB
		// at most), so the codec never has to grow the buffer.
		job.out, job.err = w.opt.Codec.Compress(getBuf(len(job.raw)+len(job.raw)/128+64<<10), job.raw)
		putBuf(job.raw)
		job.raw = nil
		close(job.done)
	}
	return nil
}

// build routes the stream's chunks into frames and keeps the per-file state.
func (s *streamWriter) build() error {
	defer close(s.order)
	fs := s.w.opt.FrameSize
	for r := range s.in {
		if r.cut != nil {
			if err := s.flush(); err != nil {
				return err
			}
			if r.forget != "" {
				s.files.remove(r.forget)
			}
			r.cut <- s.frames
			continue
		}
		// A chunk as large as a frame is a frame of its own (no copy, and
		// a partial read of another file that shares the frame being
		// built does not fetch it too); so is a barrier's.
		alone := r.alone || len(r.raw) >= fs
		if alone {
			if err := s.flush(); err != nil {
				return err
			}
		}
		// The chunk goes into the frame being built, or starts one: frame
		// number s.frames either way.
		if err := s.files.track(&r.c, s.frames); err != nil {
			return err
		}
		if alone {
			if err := s.submit(r.raw, r.charge); err != nil {
				return err
			}
			continue
		}
		if s.frame == nil {
			s.frame = getBuf(fs + fs/4)
		}
		s.frame = append(s.frame, r.raw...)
		kept := min(int64(len(r.raw)), r.charge)
		s.frameCharge += kept
		s.w.opt.Memory.release(r.charge - kept)
		putBuf(r.raw)
		if len(s.frame) >= fs {
			if err := s.flush(); err != nil {
				return err
			}
		}
	}
	return s.flush()
}

// flush submits the frame being built, if any.
func (s *streamWriter) flush() error {
	if len(s.frame) == 0 {
		return nil
	}
	err := s.submit(s.frame, s.frameCharge)
	s.frame, s.frameCharge = nil, 0
	return err
}

// submit queues a frame for compression and writing; charge is what it
// holds of the writer's Memory.
func (s *streamWriter) submit(raw []byte, charge int64) error {
	s.frames++
	job := &frameJob{raw: raw, done: make(chan struct{}), charge: charge}
	select {
	case s.w.jobs <- job:
	case <-s.w.ctx.Done():
		return nil
	}
	select {
	case s.order <- job:
		return nil
	case <-s.w.ctx.Done():
		return nil
	}
}

// write hands the stream's frames to its output in order.
func (s *streamWriter) write() error {
	ctx, opt := s.w.ctx, s.w.opt
	out, err := opt.Output.OpenStream(ctx, s.num, s.name)
	if err != nil {
		return fmt.Errorf("stream %05d: %w", s.num, err)
	}
	s.out = out
	h, err := NewHash(opt.Hash)
	if err != nil {
		return err
	}
	_, verifies := out.(ContentVerifier)
	sc, _ := out.(StoredCounter)
	var stored, raw, counted int64
	frames := 0
	for job := range s.order {
		if err := wait(ctx, job.done); err != nil {
			return err
		}
		if job.err != nil {
			return fmt.Errorf("stream %05d: frame %d: compress: %w", s.num, frames, job.err)
		}
		if job.rawLen > maxFrameBytes || len(job.out) > maxFrameBytes {
			return fmt.Errorf("stream %05d: frame %d: %d bytes exceed the frame limit", s.num, frames, job.rawLen)
		}
		f := Frame{Offset: stored, Stored: uint32(len(job.out)), Raw: uint32(job.rawLen)}
		if !verifies {
			f.CRC = crc32.Checksum(job.out, castagnoli)
			h.Write(job.out)
		}
		if err := out.WriteFrame(f, job.out); err != nil {
			return fmt.Errorf("stream %05d: %w", s.num, err)
		}
		stored += int64(len(job.out))
		raw += int64(job.rawLen)
		frames++
		if opt.Counter != nil {
			if sc == nil {
				opt.Counter.Out(int64(len(job.out)))
			} else if n := sc.StoredSoFar(); n > counted {
				opt.Counter.Out(n - counted)
				counted = n
			}
		}
		putBuf(job.out)
		opt.Memory.release(job.charge)
	}
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	digest := ""
	if !verifies {
		digest = formatDigest(opt.Hash, h)
	}
	res, err := out.Close(Stream{
		Object:  Object{Name: s.name, Size: stored, Digest: digest},
		Frames:  frames,
		RawSize: raw,
	})
	if err != nil {
		return fmt.Errorf("stream %05d: %w", s.num, err)
	}
	if res.Digest == "" {
		return fmt.Errorf("stream %05d: its output gave the stream no digest", s.num)
	}
	if sc != nil && opt.Counter != nil && res.Stored > counted {
		opt.Counter.Out(res.Stored - counted)
	}
	s.result = res
	return nil
}
