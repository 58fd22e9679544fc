package archive

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"
	"strings"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/xbstream"
)

// Sink receives a backup's chunks in stream order. Chunk is called from one
// goroutine per stream: concurrently for different streams, and so for
// different paths, but never concurrently for one path. The chunk and its
// payload are valid only during the call: the buffer is reused afterwards.
type Sink interface {
	Chunk(c *xbstream.Chunk) error
}

// ReadOptions configure Read.
type ReadOptions struct {
	Input Input // where the streams come from (BackendInput for a repository)
	// Manifest describes the backup. When the backup is still arriving
	// (received over the network), it is only a header: codec, hash and the
	// streams' names; Final then provides the complete manifest, waiting
	// for it if need be, and each stream is checked against it at its end.
	Manifest *Manifest
	Final    func(ctx context.Context) (*Manifest, error)
	Workers  int  // decoding goroutines; 0 means GOMAXPROCS
	Sink     Sink // nil: check everything, deliver nothing
	Counter  Counter
	// Memory bounds the frames held at once, across every stream and
	// worker, and of every other Read given the same; nil means a budget
	// of DefaultMemory for this Read alone.
	Memory *Memory
	// Only, if set, asks for the files it accepts (paths as the manifest
	// lists them) and lets Read skip the others where it can (see Plan).
	Only func(path string) bool
	// Verified, if set, is called with the path of each file whose
	// content, at the chunk that ended it, equals the manifest's record
	// of the file (size and digest), once the sink has taken that chunk:
	// the file as the sink wrote it is then the backup's, whatever the
	// stream does later (a later incarnation of the path has the same
	// digest). Only for a backup whose manifest is known when the read
	// starts (no Final) and has no barriers, and only in streams that
	// never removed or renamed a path (their files carry frame ranges):
	// elsewhere a file's history spans more than its own chunks. A file
	// whose manifest record has no digest is never reported. Calls come
	// from the streams' goroutines, several at once.
	Verified func(path string)
}

// Of is o reading the backup m from in: how a caller reads (workers,
// counter, memory) given once for every backup it reads.
func (o ReadOptions) Of(in Input, m *Manifest) ReadOptions {
	o.Input, o.Manifest = in, m
	return o
}

// Read reads every stream of a backup in parallel, decodes frames in
// parallel, and checks every byte: the CRC-32C of each stored frame, each
// xbstream chunk's CRC-32, the stream rules, each object's digest, and each
// file's size and digest against the manifest. Chunks reach the sink in
// stream order. Errors name the object, frame and offset or the file.
func Read(ctx context.Context, opt ReadOptions) error {
	m := opt.Manifest
	if m.Detached() {
		return errDetached(m)
	}
	c, err := codec.Parse(m.Codec)
	if err != nil {
		return fmt.Errorf("manifest codec: %w", err)
	}
	if opt.Workers < 1 {
		opt.Workers = runtime.GOMAXPROCS(0)
	}
	final := opt.Final
	if final == nil {
		final = func(context.Context) (*Manifest, error) { return m, nil }
	}
	budget := &readBudget{mem: opt.Memory}
	if budget.mem == nil {
		budget.mem = NewMemory(DefaultMemory)
	}
	// Frames dropped on a failure are given back all at once.
	defer budget.releaseAll()
	syncs := make([]*barrierSync, len(m.Barriers))
	for i := range syncs {
		syncs[i] = &barrierSync{left: int32(len(m.Streams)), all: make(chan struct{}), applied: make(chan struct{})}
	}
	plans := planRead(m, opt)
	if pt, ok := opt.Input.(PlanTaker); ok {
		if err := pt.TakePlan(context.WithValue(ctx, planKey{}, budget), plans); err != nil {
			return err
		}
	}
	g, ctx := errgroup.WithContext(ctx)
	jobs := make(chan *decodeJob, opt.Workers*2)
	decoders := errgroup.Group{}
	for range opt.Workers {
		decoders.Go(func() error {
			for job := range jobs {
				job.raw, job.err = c.Decompress(getBuf(int(job.frame.Raw)), job.stored, int(job.frame.Raw))
				putBuf(job.stored)
				budget.release(job.charge.stored)
				close(job.done)
			}
			return nil
		})
	}
	var readers []*streamReader
	for i, s := range m.Streams {
		if !plans[i].Skip {
			readers = append(readers, &streamReader{opt: opt, num: i, s: s, codec: c, jobs: jobs, final: final,
				order: make(chan *decodeJob, opt.Workers+2), barriers: m.Barriers, syncs: syncs,
				budget: budget, charge: &streamCharge{budget: budget}, plan: plans[i]})
		}
	}
	if mu, ok := opt.Input.(MemoryUser); ok && len(readers) > 0 {
		// Set aside before any stream reads: what is free then.
		each := budget.mem.size / sourceShare / int64(len(readers))
		for _, r := range readers {
			r.charge.source = budget.setAside(mu.SourceWants(), each)
		}
	}
	for _, r := range readers {
		checked := make(chan checkedFrame, 2)
		g.Go(func() error { return r.fetch(ctx) })
		g.Go(func() error { return r.check(ctx, checked) })
		g.Go(func() error { return r.deliver(ctx, checked) })
	}
	err = g.Wait()
	close(jobs)
	decoders.Wait()
	return err
}

type decodeJob struct {
	num    int
	frame  Frame
	stored []byte
	raw    []byte
	err    error
	done   chan struct{}
	charge frameCharge // taken from the budget
}

type streamReader struct {
	opt   ReadOptions
	num   int
	s     Stream
	codec codec.Codec
	jobs  chan *decodeJob
	order chan *decodeJob
	final func(context.Context) (*Manifest, error)

	barriers []Barrier // known up front: a repository's backup
	syncs    []*barrierSync

	budget *readBudget
	charge *streamCharge // what the source took for its last frame, and was set aside for it

	plan StreamPlan
}

// barrierSync is one barrier as the streams meet at it.
type barrierSync struct {
	left    int32         // streams still to arrive
	all     chan struct{} // closed when every stream arrived
	applied chan struct{} // closed when the owner applied the barrier's chunk
}

func (b *barrierSync) arrive() {
	if atomic.AddInt32(&b.left, -1) == 0 {
		close(b.all)
	}
}

func wait(ctx context.Context, ch chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// expected returns what the complete manifest says about this stream: its
// record and its files.
func (r *streamReader) expected(ctx context.Context) (Stream, []File, error) {
	m, err := r.final(ctx)
	if err != nil {
		return Stream{}, nil, err
	}
	if len(m.Barriers) != len(r.barriers) {
		// Only a transfer learns of barriers this late.
		return Stream{}, nil, fmt.Errorf("the backup orders its streams around removals (DDL on non-InnoDB tables during the backup), which a transfer cannot follow yet: back up into a repository and restore from it")
	}
	if len(m.Streams) != len(r.opt.Manifest.Streams) {
		return Stream{}, nil, Corruptf("the manifest lists %d streams, %d were read", len(m.Streams), len(r.opt.Manifest.Streams))
	}
	s := m.Streams[r.num]
	if s.Name != r.s.Name {
		return Stream{}, nil, Corruptf("%s: the manifest names it %s", r.where(), s.Name)
	}
	var files []File
	for _, f := range m.Files {
		if f.Stream == r.num {
			files = append(files, f)
		}
	}
	return s, files, nil
}

func (r *streamReader) where() string {
	return fmt.Sprintf("stream %05d (%s)", r.num, r.s.Name)
}

// fetch reads the stream's frames in order, checks each frame's CRC and the
// object's digest, and hands frames to the decoders in order.
func (r *streamReader) fetch(ctx context.Context) error {
	defer close(r.order)
	defer r.budget.release(r.charge.source) // set aside for its source: back once the source is closed
	if !strings.HasSuffix(r.s.Name, ".xbs"+r.codec.Suffix()) {
		return fmt.Errorf("%s: name does not match codec %s", r.where(), r.codec)
	}
	alg := r.opt.Manifest.Hash
	h, err := NewHash(alg)
	if err != nil {
		return fmt.Errorf("%s: %w", r.where(), err)
	}
	sctx := context.WithValue(ctx, chargeKey{}, r.charge)
	var src FrameSource
	if r.plan.Frames != nil {
		src, err = r.opt.Input.(FrameRanger).OpenFrames(sctx, r.num, r.s, r.plan.Frames)
	} else {
		src, err = r.opt.Input.OpenStream(sctx, r.num, r.s)
	}
	if err != nil {
		return wrapWhere(r.where(), err)
	}
	defer src.Close()
	// A stream whose digest is its recipe's (StorageDedup) is proven by
	// whoever reads its blocks: dedup's Input, which checks every block
	// against its name; sent on, the sender's, and then here the frames'
	// CRC-32C and the chunks' and the files' digests, as for part of a
	// stream.
	_, inputChecks := r.opt.Input.(ContentVerifier)
	verifies := inputChecks || r.opt.Manifest.Storage == StorageDedup
	var size int64
	frames := 0
	gate := 0 // the next barrier fetching may have to wait for
	for i := 0; ; i++ {
		// Frames after a barrier are read only once it is applied: the
		// frames read ahead hold memory that the streams still to reach
		// the barrier may need.
		for ; gate < len(r.barriers) && i < r.s.Frames; gate++ {
			b := r.barriers[gate]
			first := b.Frames[r.num] // the first frame after the barrier
			if b.Stream == r.num {
				first++
			}
			if i < first {
				break
			}
			if err := wait(ctx, r.syncs[gate].applied); err != nil {
				return err
			}
		}
		r.charge.charged = false
		f, buf, err := src.Next()
		if err == io.EOF {
			frames = i
			break
		}
		if err != nil {
			return wrapWhere(r.where(), err)
		}
		num := r.plan.frameNum(i)
		charge := chargeOf(f, r.budget.mem.size)
		if !r.charge.charged {
			// A source that allocated on its own (not with FrameBuffer):
			// charged late.
			if err := r.budget.acquire(ctx, charge.total()); err != nil {
				return err
			}
		}
		if !inputChecks && crc32.Checksum(buf, castagnoli) != f.CRC {
			putBuf(buf)
			return Corruptf("%s: frame %d at offset %d: checksum mismatch, the stored data is corrupt", r.where(), num, f.Offset)
		}
		if !verifies {
			h.Write(buf)
		}
		size += int64(len(buf))
		job := &decodeJob{num: num, frame: f, stored: buf, done: make(chan struct{}), charge: charge}
		select {
		case r.jobs <- job:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		select {
		case r.order <- job:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	if r.plan.Frames != nil {
		// Part of the object: each frame's CRC-32C, from the frame index
		// whose digest the manifest holds, stands for the object's digest.
		if frames != len(r.plan.Frames) {
			return Corruptf("%s: %d of the %d frames asked for", r.where(), frames, len(r.plan.Frames))
		}
		return nil
	}
	want, _, err := r.expected(ctx)
	if err != nil {
		return err
	}
	if frames != want.Frames {
		return Corruptf("%s: %d frames, manifest says %d", r.where(), frames, want.Frames)
	}
	if size != want.Size {
		return Corruptf("%s: %d bytes, manifest says %d", r.where(), size, want.Size)
	}
	if got := formatDigest(alg, h); !verifies && got != want.Digest {
		return Corruptf("%s: object digest %s, manifest says %s", r.where(), got, want.Digest)
	}
	return nil
}

// wrapWhere prefixes err with the stream, keeping a corruption a corruption.
func wrapWhere(where string, err error) error {
	if IsCorrupt(err) {
		return Corruptf("%s: %v", where, err)
	}
	return fmt.Errorf("%s: %w", where, err)
}

// checkedFrame is a decoded frame whose chunks all passed the checks.
type checkedFrame struct {
	num    int
	buf    []byte
	chunks []xbstream.Chunk // nil: decode buf again to deliver it
	ended  []string         // files the frame ended as the manifest records them (ReadOptions.Verified)
	stored int64
	charge int64 // of the budget, given back with buf
}

// check walks the decoded frames in order and checks every chunk and the
// stream rules and keeps the file digests. Frames that pass go on to the
// sink stage: a frame with a bad chunk reaches the sink not at all, and
// hashing runs beside the writes instead of before them.
func (r *streamReader) check(ctx context.Context, out chan<- checkedFrame) error {
	defer close(out)
	v := xbstream.NewValidator()
	t := newFileTracker(r.opt.Manifest.FileDigests())
	final := r.finalRecords()
	var raw int64
	frames := 0
	next := 0 // the next barrier to pass
	forget := func(frame int) {
		for ; next < len(r.barriers) && r.barriers[next].Frames[r.num] <= frame; next++ {
			if b := r.barriers[next]; b.Stream != r.num {
				t.remove(b.Path)
			}
		}
	}
	for job := range r.order {
		if err := wait(ctx, job.done); err != nil {
			return err
		}
		if job.err != nil {
			return Corruptf("%s: frame %d at offset %d: decode: %v", r.where(), job.num, job.frame.Offset, job.err)
		}
		forget(job.num)
		b := job.raw
		// Chunk records take at most their share of the frame's charge;
		// a frame of more chunks is decoded again on delivery.
		keep := int(int64(job.frame.Raw) / chunkRecordShare / chunkRecordSize)
		chunks := make([]xbstream.Chunk, 0, min(keep, 64))
		var ended []string
		for pos := 0; pos < len(b); {
			c, n, err := xbstream.DecodeChunk(b[pos:])
			if err != nil {
				return Corruptf("%s: frame %d, byte %d of the frame: %v", r.where(), job.num, pos, err)
			}
			if !r.plan.delivers(c.Path) {
				// Another file's chunk in a frame fetched for the chosen
				// ones: its CRC is checked by decoding, nothing else.
				pos += n
				continue
			}
			if err := v.Check(&c); err != nil {
				return Corruptf("%s: frame %d: %v", r.where(), job.num, err)
			}
			if err := t.track(&c, -1); err != nil {
				return err
			}
			if c.Type == xbstream.TypeEOF && final != nil && t.endedAs(c.Path, final[c.Path]) {
				ended = append(ended, c.Path)
			}
			if chunks != nil && len(chunks) < keep {
				chunks = append(chunks, c)
			} else {
				chunks = nil
			}
			pos += n
		}
		raw += int64(len(b))
		frames++
		select {
		case out <- checkedFrame{num: job.num, buf: b, chunks: chunks, ended: ended, stored: int64(job.frame.Stored), charge: job.charge.raw}:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	if err := context.Cause(ctx); err != nil {
		return err
	}
	forget(frames)
	if r.plan.Frames != nil {
		if frames != len(r.plan.Frames) {
			return nil // fetch's error is the one to report
		}
		if err := v.End(); err != nil {
			return Corruptf("%s: %v", r.where(), err)
		}
		if err := t.compare(r.num, r.plan.Files); err != nil {
			return Corruptf("%s: %v", r.where(), err)
		}
		return nil
	}
	want, files, err := r.expected(ctx)
	if err != nil {
		return err
	}
	if frames != want.Frames {
		// fetch stopped early or saw a different count; its error is the one to report.
		return nil
	}
	if raw != want.RawSize {
		return Corruptf("%s: decoded %d bytes, manifest says %d", r.where(), raw, want.RawSize)
	}
	if err := v.End(); err != nil {
		return Corruptf("%s: %v", r.where(), err)
	}
	if err := t.compare(r.num, files); err != nil {
		return Corruptf("%s: %v", r.where(), err)
	}
	return nil
}

// finalRecords returns the manifest's records of the stream's files by
// path when the read reports verified files (ReadOptions.Verified) and
// the stream qualifies; nil otherwise.
func (r *streamReader) finalRecords() map[string]File {
	m := r.opt.Manifest
	if r.opt.Verified == nil || r.opt.Final != nil || len(m.Barriers) > 0 {
		return nil
	}
	files := map[string]File{}
	for _, f := range m.Files {
		if f.Stream != r.num {
			continue
		}
		if len(f.Frames) == 0 {
			return nil // the stream removed or renamed a path
		}
		files[f.Path] = f
	}
	return files
}

// deliver feeds the checked chunks to the sink, in order.
func (r *streamReader) deliver(ctx context.Context, in <-chan checkedFrame) error {
	next := 0 // the next barrier to meet
	// meet waits at every barrier placed before frame n of this stream; it
	// reports whether frame n is this stream's barrier chunk, whose
	// barrier the caller completes after delivering it. It is called
	// before frame n arrives: fetch reads no frame past a barrier until it
	// is applied, so that frames read ahead cannot hold the memory the
	// other streams need to reach it.
	meet := func(n int) (*barrierSync, error) {
		for ; next < len(r.barriers) && r.barriers[next].Frames[r.num] == n; next++ {
			b, bs := r.barriers[next], r.syncs[next]
			bs.arrive()
			if b.Stream == r.num {
				if err := wait(ctx, bs.all); err != nil {
					return nil, err
				}
				next++
				return bs, nil
			}
			if err := wait(ctx, bs.applied); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	owned, err := meet(0)
	if err != nil {
		return err
	}
	for f := range in {
		if r.opt.Sink != nil {
			if err := r.sink(ctx, f); err != nil {
				return err
			}
		}
		for _, p := range f.ended {
			r.opt.Verified(p)
		}
		if owned != nil {
			close(owned.applied)
		}
		if r.opt.Counter != nil {
			r.opt.Counter.In(f.stored)
			r.opt.Counter.Out(int64(len(f.buf)))
		}
		putBuf(f.buf)
		r.budget.release(f.charge)
		if owned, err = meet(f.num + 1); err != nil {
			return err
		}
	}
	return context.Cause(ctx)
}

// sink hands a checked frame's chunks to the sink, decoding them again
// when check did not keep their records.
func (r *streamReader) sink(ctx context.Context, f checkedFrame) error {
	deliver := func(c *xbstream.Chunk) error {
		if err := context.Cause(ctx); err != nil {
			return err
		}
		if err := r.opt.Sink.Chunk(c); err != nil {
			return fmt.Errorf("%s: file %s: %w", r.where(), c.Path, err)
		}
		return nil
	}
	if f.chunks != nil || len(f.buf) == 0 {
		for i := range f.chunks {
			if err := deliver(&f.chunks[i]); err != nil {
				return err
			}
		}
		return nil
	}
	for pos := 0; pos < len(f.buf); {
		c, n, err := xbstream.DecodeChunk(f.buf[pos:])
		if err != nil {
			return Corruptf("%s: frame %d, byte %d of the frame: %v", r.where(), f.num, pos, err)
		}
		pos += n
		if !r.plan.delivers(c.Path) {
			continue
		}
		if err := deliver(&c); err != nil {
			return err
		}
	}
	return nil
}

// readBudget is one Read's share of a Memory: what it holds, so that a
// Read that fails gives back what its dropped frames held.
type readBudget struct {
	mem  *Memory
	held atomic.Int64
	plan int64 // of held, what TakePlan took (PlanMemory; before any stream reads)
}

func (b *readBudget) acquire(ctx context.Context, n int64) error {
	if err := b.mem.acquire(ctx, n); err != nil {
		return err
	}
	b.held.Add(n)
	return nil
}

func (b *readBudget) release(n int64) {
	b.held.Add(-n)
	b.mem.release(n)
}

// releaseAll gives back what is still held, once every goroutine of the
// Read has ended.
func (b *readBudget) releaseAll() { b.release(b.held.Load()) }
