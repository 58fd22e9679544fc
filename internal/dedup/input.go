package dedup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/recycle"
)

// Input reads a backup's streams from the store: each stream's frames
// made again from its recipe (in the backup's directory Dir, checked
// against the manifest's digest) and the blocks it names, every frame of
// a pack read checked against its CRC-32C, every block against its
// keyed hash (and, from a recipe of recipeMagicV1, every frame made
// against the recipe's CRC-32C), so that what comes back is the very
// frames the backup wrote; their CRC-32C is the recipe's (0 but from a
// recipe of recipeMagicV1). That is the
// stream's proof: the reader does not hash the stream again (see
// archive.ContentVerifier).
type Input struct {
	Store *Store
	Dir   string
	// planned, set by NewInput, is what TakePlan found
	planned *planned
}

// VerifiesContent: each block is checked against its name.
func (in Input) VerifiesContent() {}

// SourceWants is what a stream's reassembly holds of decoded pack frames
// at most: cachedBytes kept and prefetchDepth frames a run read ahead
// (see spend); a Read sets aside what it can of it (archive.MemoryUser).
func (Input) SourceWants() int64 { return cachedBytes + aheadFrames(prefetchDepth)*frameBuf }

// OpenStream yields all of stream i's frames.
func (in Input) OpenStream(ctx context.Context, i int, s archive.Stream) (archive.FrameSource, error) {
	return in.open(ctx, i, s, nil)
}

// OpenFrames yields the frames numbered nums (ascending) of stream i.
func (in Input) OpenFrames(ctx context.Context, i int, s archive.Stream, nums []int) (archive.FrameSource, error) {
	return in.open(ctx, i, s, nums)
}

// FrameIndex describes stream s's frames from its recipe (a head says
// each part's frame sizes: no part is read).
func (in Input) FrameIndex(ctx context.Context, s archive.Stream) ([]archive.Frame, error) {
	sr, err := in.stream(ctx, s)
	if err != nil {
		return nil, err
	}
	return sr.index(), nil
}

// streamRecipe is a stream's recipe as its record names it: one recipe,
// or a head whose parts are read when reached (see headMagic).
type streamRecipe struct {
	in     Input
	name   string // the stream's
	object string // the record's, in in.Dir
	whole  *recipe
	head   *head
}

func (in Input) stream(ctx context.Context, s archive.Stream) (*streamRecipe, error) {
	if s.Index.Name == "" {
		return nil, archive.Corruptf("the manifest names no recipe of stream %s", s.Name)
	}
	data, err := archive.GetSmall(ctx, in.Store.Backend, in.Dir, s.Index)
	if err != nil {
		return nil, err
	}
	if err := newerFormat(data, recipeMagicV1, recipeMagic, recipeZMagic, headMagic); err != nil {
		return nil, fmt.Errorf("recipe %s/%s: %w", in.Dir, s.Index.Name, err)
	}
	sr := &streamRecipe{in: in, name: s.Name, object: s.Index.Name}
	if bytes.HasPrefix(data, []byte(headMagic)) {
		if sr.head, err = decodeHead(data); err != nil {
			return nil, archive.Corruptf("recipe %s/%s is damaged: %v", in.Dir, s.Index.Name, err)
		}
		return sr, nil
	}
	if sr.whole, err = openRecipe(data); err != nil {
		return nil, archive.Corruptf("recipe %s/%s is damaged: %v", in.Dir, s.Index.Name, err)
	}
	return sr, nil
}

// index lists the stream's frames.
func (sr *streamRecipe) index() []archive.Frame {
	if sr.whole != nil {
		return frameIndex(sr.whole)
	}
	var out []archive.Frame
	var off int64
	for _, p := range sr.head.Parts {
		for _, raw := range p.Raw {
			out = append(out, archive.Frame{Offset: off, Stored: raw, Raw: raw})
			off += int64(raw)
		}
	}
	return out
}

// each reads, in order, the parts holding frames of nums (ascending),
// and calls fn with each and the numbers of those frames in it.
func (sr *streamRecipe) each(ctx context.Context, nums []int, fn func(r *recipe, local []int) error) error {
	if sr.whole != nil {
		if len(nums) == 0 {
			return nil
		}
		return fn(sr.whole, nums)
	}
	first := 0
	for k, p := range sr.head.Parts {
		end := first + len(p.Raw)
		var local []int
		for len(nums) > 0 && nums[0] < end {
			local, nums = append(local, nums[0]-first), nums[1:]
		}
		if len(local) > 0 {
			r, err := sr.part(ctx, k)
			if err != nil {
				return err
			}
			if err := fn(r, local); err != nil {
				return err
			}
		}
		first = end
	}
	return nil
}

// part reads part k of the head, checked against it.
func (sr *streamRecipe) part(ctx context.Context, k int) (*recipe, error) {
	p := sr.head.Parts[k]
	data, err := archive.GetSmall(ctx, sr.in.Store.Backend, sr.in.Dir, p.Object)
	if err != nil {
		return nil, fmt.Errorf("stream %s, part %d of its recipe: %w", sr.name, k, err)
	}
	if err := newerFormat(data, recipeMagicV1, recipeMagic, recipeZMagic); err != nil {
		return nil, fmt.Errorf("recipe %s/%s: %w", sr.in.Dir, p.Object.Name, err)
	}
	r, err := openRecipe(data)
	if err == nil && len(r.Frames) != len(p.Raw) {
		err = fmt.Errorf("%d frames, its head %s says %d", len(r.Frames), sr.object, len(p.Raw))
	}
	for i := 0; err == nil && i < len(r.Frames); i++ {
		if r.Frames[i].Raw != p.Raw[i] {
			err = fmt.Errorf("frame %d of %d bytes, its head %s says %d", i, r.Frames[i].Raw, sr.object, p.Raw[i])
		}
	}
	if err != nil {
		return nil, archive.Corruptf("recipe %s/%s is damaged: %v", sr.in.Dir, p.Object.Name, err)
	}
	return r, nil
}

func frameIndex(r *recipe) []archive.Frame {
	out := make([]archive.Frame, len(r.Frames))
	var off int64
	for i, f := range r.Frames {
		out[i] = archive.Frame{Offset: off, Stored: f.Raw, Raw: f.Raw, CRC: f.CRC}
		off += int64(f.Raw)
	}
	return out
}

// allFrames is every frame number of a stream of n frames.
func allFrames(n int) []int {
	nums := make([]int, n)
	for i := range nums {
		nums[i] = i
	}
	return nums
}

// frameNums is nums, checked against a stream of n frames, or every
// frame of it when nums is nil.
func frameNums(nums []int, n int, stream string) ([]int, error) {
	if nums == nil {
		return allFrames(n), nil
	}
	for k, f := range nums {
		if f < 0 || f >= n || k > 0 && f <= nums[k-1] {
			return nil, archive.Corruptf("frame %d: not among the %d frames of %s's recipe", f, n, stream)
		}
	}
	return nums, nil
}

// need adds the blocks of frames nums of the stream to where.
func (sr *streamRecipe) need(ctx context.Context, nums []int, where *locations) error {
	return sr.each(ctx, nums, func(r *recipe, local []int) error {
		for _, n := range local {
			for _, it := range r.Frames[n].Items {
				if !it.isLit {
					where.need(it.Block)
				}
			}
		}
		return nil
	})
}

// TakePlan locates at once the blocks of the frames a Read takes of
// every stream (archive.PlanTaker), for an Input of NewInput: the index
// objects are read once a Read, not once a stream.
func (in Input) TakePlan(ctx context.Context, plans []archive.StreamPlan) error {
	p := in.planned
	if p == nil || len(plans) != len(p.m.Streams) {
		return nil
	}
	if err := in.Store.ready(ctx); err != nil {
		return err
	}
	where := &locations{}
	recipes := map[int]*streamRecipe{}
	for i, st := range p.m.Streams {
		if plans[i].Skip {
			continue
		}
		sr, err := in.stream(ctx, st)
		if err != nil {
			return err
		}
		nums, err := frameNums(plans[i].Frames, len(sr.index()), st.Name)
		if err == nil {
			err = sr.need(ctx, nums, where)
		}
		if err != nil {
			return err
		}
		recipes[i] = sr
	}
	where.sort()
	// The table is held for the whole Read: within its budget, the
	// names first (most of it), the frames once located.
	what := fmt.Sprintf("locating the %d blocks backup %s needs", len(where.keys), p.m.ID)
	if err := archive.PlanMemory(ctx, where.keysSize(), what); err != nil {
		return err
	}
	if err := in.Store.locate(ctx, "backup "+p.m.ID, where); err != nil {
		return err
	}
	if err := archive.PlanMemory(ctx, where.framesSize(), what); err != nil {
		return err
	}
	p.where, p.recipes = where, recipes
	return nil
}

// planned is what TakePlan found for a Read of backup m: the recipes of
// the streams it takes, and where their blocks are.
type planned struct {
	m       *archive.Manifest
	where   *locations
	recipes map[int]*streamRecipe
}

// NewInput is the Input of backup m, in the store's directory dir, that
// locates the blocks of all the streams a Read takes at once.
func NewInput(s *Store, dir string, m *archive.Manifest) Input {
	return Input{Store: s, Dir: dir, planned: &planned{m: m}}
}

// locations returns stream i's recipe and where the blocks of its frames
// nums are: what TakePlan found, or found for this stream alone.
func (in Input) locations(ctx context.Context, i int, s archive.Stream, nums []int) (*streamRecipe, []int, *locations, error) {
	if p := in.planned; p != nil && p.recipes[i] != nil && p.m.Streams[i].Index == s.Index {
		sr := p.recipes[i]
		nums, err := frameNums(nums, len(sr.index()), s.Name)
		return sr, nums, p.where, err
	}
	sr, err := in.stream(ctx, s)
	if err != nil {
		return nil, nil, nil, err
	}
	nums, err = frameNums(nums, len(sr.index()), s.Name)
	if err != nil {
		return nil, nil, nil, err
	}
	where := &locations{}
	if err := sr.need(ctx, nums, where); err != nil {
		return nil, nil, nil, err
	}
	where.sort()
	return sr, nums, where, in.Store.locate(ctx, "stream "+s.Name, where)
}

func (in Input) open(ctx context.Context, i int, s archive.Stream, nums []int) (archive.FrameSource, error) {
	if err := in.Store.ready(ctx); err != nil {
		return nil, err
	}
	sr, nums, where, err := in.locations(ctx, i, s, nums)
	if err != nil {
		return nil, err
	}
	index := sr.index()
	given, bounded := archive.SourceMemory(ctx)
	sp := spend(given, bounded, where.largestFrame())
	f := &frames{in: in, ctx: ctx, stream: s.Name, index: index, nums: nums, where: where,
		cache: frameCache{limit: sp.cache}, parts: make(chan part, 1)}
	f.pre = startPrefetch(ctx, in.Store, sp.depth, func(ctx context.Context, yield func([]frameRef) bool) {
		defer close(f.parts)
		plan := frameCache{limit: sp.cache}
		stopped := errors.New("stopped")
		first := 0 // of the part, in nums
		err := sr.each(ctx, nums, func(r *recipe, local []int) error {
			select {
			case f.parts <- part{r: r, base: nums[first] - local[0], end: first + len(local)}:
			case <-ctx.Done():
				return stopped
			}
			first += len(local)
			if !yield(plan.loads(r, local, where)) {
				return stopped
			}
			return nil
		})
		if err != nil && err != stopped {
			select {
			case f.parts <- part{err: err}:
			case <-ctx.Done():
			}
		}
	})
	return f, nil
}

// spending is how a stream's reassembly holds decoded pack frames: up to
// cache bytes kept, and runs of up to depth frames read ahead.
type spending struct {
	cache int64
	depth int
}

// aheadFrames is about how many frames reading ahead runs of depth holds
// at once: two runs being read, the queue of depth frames, the one the
// queue waits to take, and two stored frames being decoded.
func aheadFrames(depth int) int64 { return int64(2*depth + 3) }

// spend is how a reassembly spends given bytes (what a Read set aside for
// it; not bounded outside a Read) on frames of up to unit bytes: half
// reads ahead, the rest is kept; at least one frame is kept and one read
// ahead at a time, even when nothing was set aside.
func spend(given int64, bounded bool, unit int64) spending {
	if !bounded {
		return spending{cache: cachedBytes, depth: prefetchDepth}
	}
	depth := int(min(max((given/2/unit-3)/2, 1), prefetchDepth))
	cache := min(max(given-aheadFrames(depth)*unit, unit), cachedBytes)
	return spending{cache: cache, depth: depth}
}

// loads lists the pack frames the reassembly of frames nums of r loads,
// in order: each time a block lies in a frame its cache (frames.cache,
// under the same policy, which c plays through part after part) does not
// hold.
func (c *frameCache) loads(r *recipe, nums []int, where *locations) []frameRef {
	var out []frameRef
	for _, n := range nums {
		for _, it := range r.Frames[n].Items {
			if it.isLit {
				continue
			}
			if loc, _ := where.find(it.Block); !c.has(loc.Frame) {
				out = append(out, loc.Frame)
				c.put(loc.Frame, nil)
			}
		}
	}
	return out
}

// cachedBytes is the most of the decoded pack frames a stream's
// reassembly keeps (at least the frame used last; see spend): a backup's blocks come
// from the frames of several nights, and of files that mariabackup copied
// side by side in another order than the night their blocks were stored,
// so it comes back to a frame it left.
const cachedBytes = 8 << 20

// frameCache holds the pack frames used last, the least recently used
// dropped first.
type frameCache struct {
	entries []cachedFrame // the most recently used last
	bytes   int64         // the frames' decoded bytes
	limit   int64         // of bytes, past the frame used last
}

type cachedFrame struct {
	fr  frameRef
	raw []byte
}

// has reports whether fr is held, and makes it the most recently used.
func (c *frameCache) has(fr frameRef) bool {
	for i, e := range c.entries {
		if e.fr == fr {
			copy(c.entries[i:], c.entries[i+1:])
			c.entries[len(c.entries)-1] = e
			return true
		}
	}
	return false
}

// put holds fr, decoded as raw (fr.Raw bytes), dropping the least
// recently used past its limit (their buffers go back to getFrameBuf's).
func (c *frameCache) put(fr frameRef, raw []byte) {
	c.entries = append(c.entries, cachedFrame{fr, raw})
	c.bytes += int64(fr.Raw)
	for c.bytes > c.limit && len(c.entries) > 1 {
		putFrameBuf(c.entries[0].raw)
		c.bytes -= int64(c.entries[0].fr.Raw)
		c.entries = append(c.entries[:0], c.entries[1:]...)
	}
}

// frameBufs recycles the buffers of pack frames read and decoded.
var frameBufs recycle.List

// frameBuf is the room of getFrameBuf's buffers: a frame of a pack as
// this version writes them, decoded, or stored as most are (a larger one,
// written with another frameTarget, grows its buffer).
const frameBuf = frameTarget + BlockSize

// getFrameBuf returns an empty buffer with room for a frame of a pack.
func getFrameBuf() []byte {
	if b := frameBufs.Get(); b != nil {
		return b[:0]
	}
	return make([]byte, 0, frameBuf)
}

func putFrameBuf(b []byte) {
	if cap(b) >= frameBuf {
		frameBufs.Put(b[:0])
	}
}

// last is the frame has or put made the most recently used.
func (c *frameCache) last() []byte { return c.entries[len(c.entries)-1].raw }

// frames makes a stream's frames again, one after another.
type frames struct {
	in     Input
	ctx    context.Context
	stream string
	index  []archive.Frame
	nums   []int
	next   int
	where  *locations
	pre    *prefetch // reads the frames of packs ahead, in loads' order
	cache  frameCache
	parts  chan part // the recipe's parts, as the prefetch's feed reads them
	cur    part
}

// part is a part of a stream's recipe read for its reassembly: r's frame
// 0 is the stream's frame base, and its frames are those of nums up to
// end; or the error reading it failed with.
type part struct {
	r         *recipe
	base, end int
	err       error
}

// nextPart takes the part holding the frames from nums[f.next].
func (f *frames) nextPart() error {
	var p part
	var ok bool
	select {
	case p, ok = <-f.parts:
	case <-f.ctx.Done():
		return context.Cause(f.ctx)
	}
	switch {
	case !ok:
		return fmt.Errorf("dedup: stream %s: its recipe's parts ended before frame %d", f.stream, f.nums[f.next])
	case p.err != nil:
		return p.err
	}
	f.cur = p
	return nil
}

func (f *frames) Next() (archive.Frame, []byte, error) {
	if f.next == len(f.nums) {
		return archive.Frame{}, nil, io.EOF
	}
	if f.cur.r == nil || f.next >= f.cur.end {
		if err := f.nextPart(); err != nil {
			return archive.Frame{}, nil, err
		}
	}
	n := f.nums[f.next]
	f.next++
	rf := f.cur.r.Frames[n-f.cur.base]
	buf, err := archive.FrameBuffer(f.ctx, f.index[n])
	if err != nil {
		return archive.Frame{}, nil, err
	}
	out := buf[:0]
	for _, it := range rf.Items {
		if it.isLit {
			out = append(out, it.Lit...)
			continue
		}
		b, err := f.block(it.Block)
		if err != nil {
			return archive.Frame{}, nil, err
		}
		if uint64(it.From)+uint64(it.N) > uint64(len(b)) {
			return archive.Frame{}, nil, archive.Corruptf("stream %s, frame %d: its recipe takes bytes %d..%d of block %s, which has %d", f.stream, n, it.From, it.From+it.N, it.Block, len(b))
		}
		out = append(out, b[it.From:it.From+it.N]...)
	}
	if len(out) != int(rf.Raw) {
		return archive.Frame{}, nil, archive.Corruptf("stream %s, frame %d: made again from its blocks it has %d bytes, the recipe says %d", f.stream, n, len(out), rf.Raw)
	}
	if f.cur.r.v1 {
		if got := crc32c(out); got != rf.CRC {
			return archive.Frame{}, nil, archive.Corruptf("stream %s, frame %d: made again from its blocks it has CRC-32C %08x, the recipe says %08x", f.stream, n, got, rf.CRC)
		}
	}
	return f.index[n], out, nil
}

// block returns the bytes of the block named n.
func (f *frames) block(n Name) ([]byte, error) {
	loc, ok := f.where.find(n)
	if !ok {
		return nil, fmt.Errorf("dedup: stream %s: block %s was not located before the stream was read", f.stream, n)
	}
	if !f.cache.has(loc.Frame) {
		raw, err := f.pre.next(f.ctx, loc.Frame)
		if err != nil {
			return nil, err
		}
		f.cache.put(loc.Frame, raw)
	}
	raw := f.cache.last()
	if uint64(loc.Offset)+uint64(loc.Len) > uint64(len(raw)) {
		return nil, archive.Corruptf("block %s: bytes %d..%d of a frame of %d in %s", n, loc.Offset, loc.Offset+loc.Len, len(raw), loc.Frame.Pack)
	}
	b := raw[loc.Offset : loc.Offset+loc.Len]
	return b, f.in.Store.check(n, b, loc)
}

// check checks block b, read from loc, against its name n.
func (s *Store) check(n Name, b []byte, loc location) error {
	if s.name(b) != n {
		return archive.Corruptf("block %s in %s at offset %d (frame at %d) does not match its name: the pack is damaged", n, loc.Frame.Pack, loc.Offset, loc.Frame.Offset)
	}
	return nil
}

// readFrame reads one zstd frame of a pack, checks its CRC-32C and
// decodes it into dst.
func (s *Store) readFrame(ctx context.Context, fr frameRef, dst []byte) ([]byte, error) {
	rc, err := s.openRange(ctx, fr.Pack, fr.Offset, int64(fr.Stored))
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return s.nextFrame(rc, fr, dst)
}

// openRange opens length bytes of pack from offset.
func (s *Store) openRange(ctx context.Context, pack string, offset, length int64) (io.ReadCloser, error) {
	rc, err := s.Backend.Open(ctx, pack, offset, length)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, archive.Corruptf("pack %s is missing: %v", pack, err)
	}
	return rc, err
}

// nextFrame reads frame fr from r, where it starts, checks it against
// its CRC-32C and decodes it into dst.
func (s *Store) nextFrame(r io.Reader, fr frameRef, dst []byte) ([]byte, error) {
	stored := slices.Grow(getFrameBuf(), int(fr.Stored))[:fr.Stored]
	defer putFrameBuf(stored)
	if _, err := io.ReadFull(r, stored); err != nil {
		return nil, fmt.Errorf("read pack %s at %d: %w", fr.Pack, fr.Offset, err)
	}
	if got := crc32c(stored); got != fr.CRC {
		return nil, archive.Corruptf("pack %s: the frame at offset %d has CRC-32C %08x, the index says %08x", fr.Pack, fr.Offset, got, fr.CRC)
	}
	raw, err := frameCodec.Decompress(dst, stored, int(fr.Raw))
	if err != nil {
		return nil, archive.Corruptf("pack %s: the frame at offset %d does not decode to its %d bytes: %v", fr.Pack, fr.Offset, fr.Raw, err)
	}
	return raw, nil
}

func (f *frames) Close() error {
	f.pre.stop()
	return nil
}
