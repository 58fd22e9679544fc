package dedup

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path"
	"sync/atomic"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/xbstream"
)

// Output stores a backup's streams in the store: each stream's recipe in
// the backup's directory Dir (its record's Index names it), the blocks no
// backup stored before in packs, and what they hold in an index object.
// The archive writer must use codec none: its frames are whole xbstream
// chunks.
type Output struct {
	Store *Store
	Dir   string // "backups/<id>"
	Hash  string // digest algorithm of the recipe's record
	known *known
}

// NewOutput is the Output of the backup whose directory is dir: what it
// knows the store holds is read when its first stream opens.
func NewOutput(s *Store, dir, hash string) Output {
	return Output{Store: s, Dir: dir, Hash: hash, known: &known{}}
}

// maxRecipe is the largest recipe object a reader takes whole, once
// decompressed (a variable for the tests): a part of a recipe holds at
// most partTarget bytes and a frame's.
var maxRecipe = archive.MaxSmallObject

// partTarget is the most bytes of recipe (encoded, before compression) a
// stream holds before it stores them as a part (see headMagic): about 25
// GiB of data, 41 bytes a block. A variable for the tests.
var partTarget = 16 << 20

// What a recipe takes (see recipeMagic): its magic, frame count and
// CRC-32C; each frame's size and item count; each item.
const (
	recipeFixedBytes    = len(recipeMagic) + 4 + 4
	recipeFrameBytes    = 4 + 4
	recipeLiteralBytes  = 1 + 4 // and the bytes
	recipeBytesPerBlock = 1 + 32 + 4 + 4
)

// RecipeName is stream i's recipe, in its backup's directory.
func RecipeName(i int) string { return fmt.Sprintf("%s%05d.rcp", recipeDir, i) }

// partName is part k of stream i's recipe, stored in parts.
func partName(i, k int) string { return fmt.Sprintf("%s%05d-%05d.rcp", recipeDir, i, k) }

// OpenStream reads the store's index once per backup (what it holds),
// then takes stream i's frames.
func (o Output) OpenStream(ctx context.Context, i int, name string) (archive.StreamOutput, error) {
	if err := o.known.load(ctx, o.Store); err != nil {
		return nil, err
	}
	s := &streamOut{o: o, ctx: ctx, num: i, name: name, files: map[string]*pending{}, size: recipeFixedBytes}
	s.pipe = newPipeline(ctx, o.Store, o.known, s.started, s.storePart,
		func(ix *index) error { return s.storeIndex(ix, false) })
	s.batch = s.pipe.batch()
	return s, nil
}

// pending is the block of a file being filled: from file offset start.
type pending struct {
	start  int64
	buf    []byte
	handle int
}

type streamOut struct {
	o      Output
	ctx    context.Context
	num    int
	name   string
	frames []recipeFrame // of the recipe's part being written
	size   int           // of that part encoded, so far
	parts  []recipePart  // stored (by the pipeline's collector, until pipe.finish returns)
	// index objects stored before the stream's last (likewise)
	indexParts int
	files      map[string]*pending
	handles    int // blocks begun
	pipe       *pipeline
	batch      *batch // whole blocks not handed to pipe yet
	// what this stream stored, removed by Abort, and what it holds: the
	// pipeline's collector adds to them until pipe.finish returns
	stored []string
	bytes  atomic.Int64 // read by the writer as they grow (StoredSoFar)
}

// WriteFrame cuts the frame's chunks: headers and chunks without payload
// are kept as they are, payloads become slices of their files' blocks.
func (s *streamOut) WriteFrame(f archive.Frame, stored []byte) error {
	if f.Stored != f.Raw || int(f.Raw) != len(stored) {
		return fmt.Errorf("dedup: stream %s: a frame of %d bytes stored as %d: the block store takes frames of codec none", s.name, f.Raw, f.Stored)
	}
	var items []item
	for off := 0; off < len(stored); {
		c, n, err := xbstream.DecodeKnownChunk(stored[off:])
		if err != nil {
			return fmt.Errorf("dedup: stream %s, frame %d: %w", s.name, len(s.frames), err)
		}
		chunk := stored[off : off+n]
		off += n
		if c.Type != xbstream.TypePayload {
			items = append(items, literal(chunk))
			if err := s.finishPath(c.Path); err != nil {
				return err
			}
			if c.Type == xbstream.TypeRename {
				if err := s.finishPath(c.NewPath); err != nil {
					return err
				}
			}
			continue
		}
		items = append(items, literal(chunk[:n-len(c.Payload)]))
		if items, err = s.payload(items, c.Path, int64(c.Offset), c.Payload); err != nil {
			return err
		}
	}
	s.frames = append(s.frames, recipeFrame{Raw: f.Raw, Items: items})
	if s.grow(items) < partTarget {
		return nil
	}
	return s.cut()
}

// grow counts a frame of items into the size of the recipe's part.
func (s *streamOut) grow(items []item) int {
	s.size += recipeFrameBytes
	for _, it := range items {
		if it.isLit {
			s.size += recipeLiteralBytes + len(it.Lit)
		} else {
			s.size += recipeBytesPerBlock
		}
	}
	return s.size
}

// cut ends the recipe's part at the frame written last: the blocks its
// frames began end there (a file's block that goes on past the cut
// becomes two, one each side: a few blocks stored again each 25 GiB) and
// are handed on, and the pipeline's collector stores the part once it
// named them, so that neither the part nor their names stay held.
func (s *streamOut) cut() error {
	for p := range s.files {
		if err := s.finishPath(p); err != nil {
			return err
		}
	}
	if len(s.batch.raw) > 0 {
		if err := s.pipe.submit(s.ctx, s.batch); err != nil {
			return err
		}
		s.batch = s.pipe.batch()
	}
	marker := s.pipe.batch()
	marker.part, marker.handles0 = s.frames, s.handles
	s.frames, s.size = nil, recipeFixedBytes
	return s.pipe.submit(s.ctx, marker)
}

// storeIndex stores ix, the index of packs the stream stored: the last
// as <backup>-<stream>.idx, those before it (a stream that stores more
// than indexPartBlocks blocks) as <backup>-<stream>-<k>.idx, k from 0.
func (s *streamOut) storeIndex(ix *index, last bool) error {
	name := fmt.Sprintf("%s%s-%05d", indexDir, path.Base(s.o.Dir), s.num)
	if !last {
		name += fmt.Sprintf("-%05d", s.indexParts)
		s.indexParts++
	}
	return s.put(name+".idx", ix.encode())
}

// storePart names the blocks of the frames of a part of the recipe and
// stores them as the stream's next part.
func (s *streamOut) storePart(frames []recipeFrame) error {
	data, err := s.seal(frames)
	if err != nil {
		return err
	}
	name := partName(s.num, len(s.parts))
	s.started(s.o.Dir+"/"+name, int64(len(data)))
	obj, err := archive.PutSmall(s.ctx, s.o.Store.Backend, s.o.Dir, name, data, s.o.Hash)
	if err != nil {
		return err
	}
	raw := make([]uint32, len(frames))
	for i, f := range frames {
		raw[i] = f.Raw
	}
	s.parts = append(s.parts, recipePart{Object: obj, Raw: raw})
	return nil
}

func literal(b []byte) item { return item{isLit: true, Lit: append([]byte(nil), b...)} }

// payload adds the payload p of file path at offset off to its blocks,
// as slices of them.
func (s *streamOut) payload(items []item, path string, off int64, p []byte) ([]item, error) {
	pf := s.files[path]
	if pf != nil && pf.start+int64(len(pf.buf)) != off {
		// Not where the file's block stands (a seek, a rewrite): the
		// block ends there, shorter.
		if err := s.finish(pf); err != nil {
			return nil, err
		}
		pf = nil
	}
	for len(p) > 0 {
		if pf == nil {
			pf = &pending{start: off, handle: s.newHandle()} // buf grows as met: a small file takes what it holds, not a block
			s.files[path] = pf
		}
		end := (pf.start/BlockSize + 1) * BlockSize
		k := min(int64(len(p)), end-off)
		items = append(items, item{handle: pf.handle, From: uint32(len(pf.buf)), N: uint32(k)})
		var err error
		if off+k == end && len(pf.buf) == 0 {
			err = s.hand(pf.handle, p[:k]) // whole in this payload: no copy to pf
		} else {
			pf.buf = append(pf.buf, p[:k]...)
			if off+k == end {
				err = s.finish(pf)
			}
		}
		if err != nil {
			return nil, err
		}
		p, off = p[k:], off+k
		if off == end {
			pf.start, pf.buf, pf.handle = end, pf.buf[:0], s.newHandle()
		}
	}
	return items, nil
}

func (s *streamOut) newHandle() int {
	s.handles++
	return s.handles - 1
}

// finish hands the pending block, whole, to the pipeline, which names it
// and stores it if the store lacks it.
func (s *streamOut) finish(pf *pending) error {
	if len(pf.buf) == 0 {
		return nil
	}
	return s.hand(pf.handle, pf.buf)
}

// hand copies the whole block blk, begun as handle h, into the batch and
// submits the batch once it is full.
func (s *streamOut) hand(h int, blk []byte) error {
	b := s.batch
	b.raw = append(b.raw, blk...)
	b.handles, b.sizes = append(b.handles, h), append(b.sizes, len(blk))
	if len(b.raw) < batchTarget {
		return nil
	}
	s.batch = s.pipe.batch()
	return s.pipe.submit(s.ctx, b)
}

// finishPath ends the pending block of a file that ends, is removed or
// renamed.
func (s *streamOut) finishPath(p string) error {
	pf := s.files[p]
	delete(s.files, p)
	if pf == nil {
		return nil
	}
	return s.finish(pf)
}

// Close stores what the stream's frames left pending, its packs, the
// index of its new blocks and then its recipe, which the record names.
func (s *streamOut) Close(st archive.Stream) (archive.Stream, error) {
	for p := range s.files {
		if err := s.finishPath(p); err != nil {
			return st, err
		}
	}
	if len(s.batch.raw) > 0 {
		if err := s.pipe.submit(s.ctx, s.batch); err != nil {
			return st, err
		}
	}
	if err := s.pipe.finish(); err != nil {
		return st, err
	}
	if ix := &s.pipe.packer.ix; len(ix.Blocks) > 0 {
		if err := s.storeIndex(ix, true); err != nil {
			return st, err
		}
	}
	data, err := s.recipeObject()
	if err != nil {
		return st, err
	}
	obj, err := archive.PutSmall(s.ctx, s.o.Store.Backend, s.o.Dir, RecipeName(s.num), data, s.o.Hash)
	if err != nil {
		return st, err
	}
	s.stored = append(s.stored, s.o.Dir+"/"+RecipeName(s.num))
	// The recipe names every block by its keyed hash, which a reader
	// checks: its digest is the stream's (see archive.ContentVerifier).
	st.Index, st.Stored, st.Digest = obj, s.bytes.Load()+obj.Size, obj.Digest
	return st, nil
}

// seal names the blocks of frames (pipeline.resolve) and makes the
// recipe object of them.
func (s *streamOut) seal(frames []recipeFrame) ([]byte, error) {
	if err := s.pipe.resolve(frames); err != nil {
		return nil, fmt.Errorf("dedup: stream %s: %w", s.name, err)
	}
	data, err := (&recipe{Frames: frames}).seal()
	if err != nil {
		return nil, fmt.Errorf("dedup: stream %s: compress its recipe: %w", s.name, err)
	}
	return data, nil
}

// recipeObject is what the stream's record names: its recipe, or, when
// parts of it were stored, the head naming them once its last part is
// stored.
func (s *streamOut) recipeObject() ([]byte, error) {
	if len(s.parts) == 0 {
		return s.seal(s.frames)
	}
	if len(s.frames) > 0 {
		if err := s.storePart(s.frames); err != nil {
			return nil, err
		}
	}
	data := (&head{Parts: s.parts}).encode()
	if len(data) > maxRecipe {
		return nil, fmt.Errorf("dedup: stream %s: the head of its recipe takes %d bytes, more than the %d a restore reads whole: back up with more streams (--parallel)", s.name, len(data), maxRecipe)
	}
	return data, nil
}

// VerifiesContent: the writer need not hash the stream.
func (s *streamOut) VerifiesContent() {}

// VerifiesContent: the writer's files' digests need only check how the
// blocks are put back together (archive.HashXXH3).
func (o Output) VerifiesContent() {}

func (s *streamOut) put(name string, data []byte) error {
	s.started(name, int64(len(data)))
	if _, err := s.o.Store.Backend.Put(s.ctx, name, bytesReader(data)); err != nil {
		return fmt.Errorf("store %s: %w", name, err)
	}
	return nil
}

// started counts an object whose storing began into what the stream
// stored, which Abort removes.
func (s *streamOut) started(name string, size int64) {
	s.stored = append(s.stored, name)
	s.bytes.Add(size)
}

// StoredSoFar is what the stream stored so far, which a backup counts as
// its output (archive.StoredCounter): its packs once each is ended, its
// index objects and recipe parts.
func (s *streamOut) StoredSoFar() int64 { return s.bytes.Load() }

// Abort stops the pipeline and removes what the stream stored.
func (s *streamOut) Abort(cause error) {
	_ = s.pipe.finish()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), time.Minute)
	defer cancel()
	for _, name := range s.stored {
		_ = s.o.Store.Backend.Delete(ctx, name)
	}
}

// packer puts frames of new blocks in packs of about packTarget bytes,
// each frame written on to the backend as it comes (no pack is held
// whole); add compresses blocks into frames of about frameTarget raw
// bytes first (for whoever holds blocks one by one: the repack). A full
// pack's Put completes (a local backend's fsync and rename, an object
// store's last request) while the next pack fills: it is waited for when
// that one is full, or by store. A pack need only be durable once an
// index object names it, so its Put leaves that to syncs (a local
// backend's fsyncs, see storage.DeferSync), done for all packs stored
// before an index object is: the disk flushes once, not once a pack.
type packer struct {
	ctx     context.Context // of the packs' Puts, deferring to syncs
	syncs   *storage.Syncs
	backend storage.Backend
	// started, if set, learns of each pack whose Put ended its data (to
	// remove it if the stream fails): its name and size
	started func(name string, size int64)
	// storeIndex, if set, stores the index of the packs stored so far
	// once it holds indexPartBlocks blocks, which then starts anew (no
	// stream holds the index of all its new blocks); unset, ix holds
	// every pack's
	storeIndex func(*index) error
	raw        []byte
	blocks     []blockRef // of raw
	zbuf       []byte     // raw, compressed
	up         *storage.Upload
	name       string // of the pack being filled
	size       int64  // of the pack being filled
	ending     chan error
	ix         index
}

// newPacker returns a packer of packs stored in backend (see packer for
// started and storeIndex).
func newPacker(ctx context.Context, backend storage.Backend, started func(name string, size int64), storeIndex func(*index) error) *packer {
	ctx, syncs := storage.DeferSync(ctx)
	return &packer{ctx: ctx, syncs: syncs, backend: backend, started: started, storeIndex: storeIndex}
}

func (p *packer) add(n Name, b []byte) error {
	p.blocks = append(p.blocks, blockRef{Name: n, Offset: uint32(len(p.raw)), Len: uint32(len(b))})
	p.raw = append(p.raw, b...)
	if len(p.raw) >= frameTarget {
		return p.compress()
	}
	return nil
}

// compress compresses the blocks add holds into a frame of the pack.
func (p *packer) compress() error {
	if len(p.raw) == 0 {
		return nil
	}
	var err error
	if p.zbuf, err = frameCodec.Compress(p.zbuf[:0], p.raw); err != nil {
		return err
	}
	err = p.frame(p.zbuf, len(p.raw), p.blocks)
	p.raw, p.blocks = p.raw[:0], p.blocks[:0]
	return err
}

// flush stores everything held.
func (p *packer) flush() error {
	if err := p.compress(); err != nil {
		return err
	}
	return p.store()
}

// frame appends a compressed frame of raw bytes holding blocks (their
// offsets are the frame's) to the pack being filled, and ends the pack
// once it is big enough.
func (p *packer) frame(stored []byte, raw int, blocks []blockRef) error {
	if p.up == nil {
		var id [16]byte
		if _, err := rand.Read(id[:]); err != nil {
			return err
		}
		h := hex.EncodeToString(id[:])
		p.name, p.size = packDir+h[:2]+"/"+h+".pack", 0
		p.up = storage.StartUpload(p.ctx, p.backend, p.name)
	}
	p.ix.Frames = append(p.ix.Frames, frameRef{Pack: p.name, Offset: p.size, Stored: uint32(len(stored)), Raw: uint32(raw), CRC: crc32c(stored)})
	for _, k := range blocks {
		k.Frame = uint32(len(p.ix.Frames) - 1)
		p.ix.Blocks = append(p.ix.Blocks, k)
	}
	if _, err := p.up.Write(stored); err != nil {
		return fmt.Errorf("store %s: %w", p.name, err)
	}
	p.size += int64(len(stored))
	if p.size < packTarget {
		return nil
	}
	return p.end()
}

// end ends the pack being filled: once the pack before is stored, its
// Put completes on its own while the next pack fills.
func (p *packer) end() error {
	if err := p.wait(); err != nil {
		return err
	}
	up, name, size := p.up, p.name, p.size
	p.up, p.name = nil, ""
	p.ix.Packs = append(p.ix.Packs, packRef{Name: name, Size: size})
	if p.started != nil {
		p.started(name, size)
	}
	p.ending = make(chan error, 1)
	go func() {
		n, err := up.Close()
		if err == nil && n != size {
			err = fmt.Errorf("backend kept %d bytes of %d", n, size)
		}
		if err != nil {
			err = fmt.Errorf("store %s: %w", name, err)
		}
		p.ending <- err
	}()
	if p.storeIndex == nil || len(p.ix.Blocks) < indexPartBlocks {
		return nil
	}
	// An index object names stored packs only.
	if err := p.durable(); err != nil {
		return err
	}
	if err := p.storeIndex(&p.ix); err != nil {
		return err
	}
	p.ix = index{}
	return nil
}

// wait waits for the pack ended last to be stored.
func (p *packer) wait() error {
	if p.ending == nil {
		return nil
	}
	err := <-p.ending
	p.ending = nil
	return err
}

// durable waits for the pack ended last to be stored and makes every
// pack stored so far durable.
func (p *packer) durable() error {
	if err := p.wait(); err != nil {
		return err
	}
	if err := p.syncs.Sync(p.ctx); err != nil {
		return fmt.Errorf("make the packs durable: %w", err)
	}
	return nil
}

// store ends the pack being filled, if it holds anything, and waits until
// every pack is stored and durable.
func (p *packer) store() error {
	if p.up != nil {
		if err := p.end(); err != nil {
			return err
		}
	}
	return p.durable()
}

// abort ends the pack being filled with cause (nothing of it becomes
// visible) and waits for the pack ended before it.
func (p *packer) abort(cause error) {
	if p.up != nil {
		p.up.Abort(cause)
		p.up, p.name = nil, ""
	}
	_ = p.wait()
}
