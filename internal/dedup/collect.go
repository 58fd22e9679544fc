package dedup

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/storage"
)

// Collected is what Collect removed and kept.
type Collected struct {
	Packs, Bytes   int64 // packs deleted, and what they took where the store says
	KeptPacks      int64
	Repacked       int64 // packs whose blocks that stay were written into new ones
	LiveBlocks     int64
	DroppedEntries int64 // index entries of blocks no backup names any more
}

// Live is the set of the blocks complete backups name, as LiveNames
// gathers it for Collect: the first 16 bytes of each name, sorted (16
// bytes a block, where a map of names takes some 50). A collision of 128
// bits among a repository's blocks is not to be met, and one would keep
// a block no backup names, never lose one a backup names. The zero Live
// is empty.
type Live struct {
	sorted  []prefix
	pending []prefix // added since the last merge
}

// liveMerge is the fewest names added that a Live merges (a variable
// for the tests).
var liveMerge = 1 << 20

// add adds n; names added are merged into the sorted ones once they are
// a quarter of them (at least liveMerge): a backup's recipes name mostly
// the blocks the others do.
func (l *Live) add(n Name) {
	l.pending = append(l.pending, prefix(n[:16]))
	if len(l.pending) >= max(liveMerge, len(l.sorted)/4) {
		l.merge()
	}
}

func (l *Live) merge() {
	if len(l.pending) == 0 {
		return
	}
	slices.SortFunc(l.pending, comparePrefix)
	add := slices.Compact(l.pending)
	out := make([]prefix, 0, len(l.sorted)+len(add))
	i, j := 0, 0
	for i < len(l.sorted) && j < len(add) {
		switch c := comparePrefix(l.sorted[i], add[j]); {
		case c < 0:
			out = append(out, l.sorted[i])
			i++
		case c > 0:
			out = append(out, add[j])
			j++
		default:
			out = append(out, l.sorted[i])
			i, j = i+1, j+1
		}
	}
	l.sorted = append(append(out, l.sorted[i:]...), add[j:]...)
	l.pending = l.pending[:0]
}

// Len is how many blocks l holds.
func (l *Live) Len() int {
	l.merge()
	return len(l.sorted)
}

// find is n's place among l's blocks, once merged.
func (l *Live) find(n Name) (int, bool) {
	return slices.BinarySearchFunc(l.sorted, prefix(n[:16]), comparePrefix)
}

// bits is a set of places in a Live.
type bits []uint64

func newBits(n int) bits      { return make(bits, (n+63)/64) }
func (b bits) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }
func (b bits) set(i int)      { b[i/64] |= 1 << (i % 64) }
func (b bits) clear()         { clear(b) }
func (b bits) firstUnset(n int) int {
	for i := range n {
		if !b.has(i) {
			return i
		}
	}
	return -1
}

// LiveNames reads the recipes of a backup's streams (in its directory
// dir, as its manifest m names them) and adds every block they name.
func (s *Store) LiveNames(ctx context.Context, dir string, m *archive.Manifest, live *Live) error {
	for _, st := range m.Streams {
		sr, err := Input{Store: s, Dir: dir}.stream(ctx, st)
		if err == nil {
			err = sr.each(ctx, allFrames(len(sr.index())), func(r *recipe, _ []int) error {
				for _, f := range r.Frames {
					for _, it := range f.Items {
						if !it.isLit {
							live.add(it.Block)
						}
					}
				}
				return nil
			})
		}
		if err != nil {
			return fmt.Errorf("backup %s: %w", m.ID, err)
		}
	}
	return nil
}

// Collect removes the blocks live does not hold: the caller holds the
// repository's exclusive lock (no backup may claim a block meanwhile) and
// live holds every block of every complete backup. It reads the index
// objects twice: first for what each pack holds and what of it stays,
// then to store, in parts (indexPartBlocks blocks each), the index of the
// blocks that stay, the blocks that stay in packs less than half alive
// moved into new packs first (repacked). Then it removes the index
// objects it replaced, then the packs that hold no block that stays (and
// packs no index names: a backup that never finished wrote them).
// Interrupted at any point, the store still holds every block that
// stays, indexed at least once. What it holds is live's 16 bytes a block,
// a bit a block, a few bytes a pack frame and one part of the index.
func (s *Store) Collect(ctx context.Context, live *Live) (Collected, error) {
	var c Collected
	if err := s.ready(ctx); err != nil {
		return c, err
	}
	names, err := s.indexNames(ctx)
	if err != nil {
		return c, err
	}
	n := live.Len()
	named := newBits(n)
	packs, err := s.survey(ctx, names, live, named, &c)
	if err != nil {
		return c, err
	}
	if i := named.firstUnset(n); i >= 0 {
		return c, archive.Corruptf("block %x, which a backup names, is in no index of the block store: nothing was collected", live.sorted[i][:8])
	}
	sparse := map[string]bool{}
	for name, p := range packs {
		if p.live > 0 && p.live*2 < p.raw() {
			sparse[name] = true
		}
	}
	listed, err := s.Backend.List(ctx, packDir)
	if err != nil {
		return c, fmt.Errorf("list the block store's packs: %w", err)
	}
	var dead []storage.Info
	for _, p := range listed {
		if sv := packs[p.Name]; sv == nil || sv.live == 0 || sparse[p.Name] {
			dead = append(dead, p)
		}
	}
	c.LiveBlocks = int64(n)
	c.KeptPacks = int64(len(listed) - len(dead))
	if c.DroppedEntries == 0 && len(dead) == 0 && oneCollect(names) && len(sparse) == 0 {
		return c, nil // nothing to drop
	}
	named.clear()
	repacked, err := s.rewrite(ctx, names, live, named, packs, sparse)
	if err != nil {
		return c, err
	}
	c.Repacked, c.KeptPacks = int64(len(sparse)), c.KeptPacks+repacked
	for _, name := range names {
		if err := s.Backend.Delete(ctx, name); err != nil {
			return c, fmt.Errorf("delete %s: %w", name, err)
		}
	}
	for _, p := range dead {
		if err := s.Backend.Delete(ctx, p.Name); err != nil {
			return c, fmt.Errorf("delete %s: %w", p.Name, err)
		}
		c.Packs++
		c.Bytes += p.Size
	}
	return c, nil
}

// oneCollect reports whether the index objects names are one object, or
// the parts one Collect wrote (collected-<id>-<k>.idx of one id): a store
// another Collect would only write again.
func oneCollect(names []string) bool {
	if len(names) <= 1 {
		return true
	}
	id, _, _ := strings.Cut(strings.TrimPrefix(names[0], indexDir+"collected-"), "-")
	for _, n := range names {
		rest, ok := strings.CutPrefix(n, indexDir+"collected-"+id+"-")
		if !ok || !strings.HasSuffix(rest, ".idx") {
			return false
		}
	}
	return true
}

// packSurvey is what the index objects say of a pack.
type packSurvey struct {
	size   int64       // as an index says
	frames []frameSpan // each index entry of its frames (a frame may be indexed twice)
	live   int64       // raw bytes of its blocks that stay
}

type frameSpan struct {
	offset int64
	raw    uint32
}

// raw is the raw bytes of the pack's frames, each counted once.
func (p *packSurvey) raw() int64 {
	slices.SortFunc(p.frames, func(a, b frameSpan) int { return cmp.Compare(a.offset, b.offset) })
	p.frames = slices.CompactFunc(p.frames, func(a, b frameSpan) bool { return a.offset == b.offset })
	var n int64
	for _, f := range p.frames {
		n += int64(f.raw)
	}
	return n
}

// survey reads the index objects names for what each pack holds and
// what of it stays: each block of live, the first time an index names
// it, is set in named and counts for its pack; every other entry is
// dropped.
func (s *Store) survey(ctx context.Context, names []string, live *Live, named bits, c *Collected) (map[string]*packSurvey, error) {
	packs := map[string]*packSurvey{}
	of := func(pack string) *packSurvey {
		p := packs[pack]
		if p == nil {
			p = &packSurvey{}
			packs[pack] = p
		}
		return p
	}
	for _, name := range names {
		ix, err := s.readIndex(ctx, name)
		if err != nil {
			return nil, err
		}
		for _, p := range ix.Packs {
			of(p.Name).size = p.Size
		}
		for _, f := range ix.Frames {
			p := of(f.Pack)
			p.frames = append(p.frames, frameSpan{f.Offset, f.Raw})
		}
		for _, k := range ix.Blocks {
			i, ok := live.find(k.Name)
			if !ok || named.has(i) {
				c.DroppedEntries++
				continue
			}
			named.set(i)
			of(ix.Frames[k.Frame].Pack).live += int64(k.Len)
		}
	}
	return packs, nil
}

// rewrite reads the index objects names again and stores the index of
// the blocks that stay (the first entry of each), in parts: a block of a
// sparse pack read, checked against its name and written into a new
// pack, which is stored before a part names it. It returns how many new
// packs it stored.
func (s *Store) rewrite(ctx context.Context, names []string, live *Live, named bits, packs map[string]*packSurvey, sparse map[string]bool) (int64, error) {
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return 0, err
	}
	parts := 0
	storePart := func(ix *index) error {
		name := fmt.Sprintf("%scollected-%s-%05d.idx", indexDir, hex.EncodeToString(id[:]), parts)
		parts++
		if _, err := s.Backend.Put(ctx, name, bytesReader(ix.encode())); err != nil {
			return fmt.Errorf("store %s: %w", name, err)
		}
		return nil
	}
	var newPacks int64
	pk := newPacker(ctx, s.Backend, func(string, int64) { newPacks++ }, storePart)
	// On a failure, what the packer is storing stops before rewrite
	// returns (what it stored stays: no index names it, and the next
	// collect removes it).
	defer pk.abort(context.Canceled)
	kept := newKeptIndex()
	var cached frameRef
	var raw []byte
	for _, name := range names {
		ix, err := s.readIndex(ctx, name)
		if err != nil {
			return newPacks, err
		}
		for _, k := range ix.Blocks {
			i, ok := live.find(k.Name)
			if !ok || named.has(i) {
				continue
			}
			named.set(i)
			fr := ix.Frames[k.Frame]
			if !sparse[fr.Pack] {
				if kept.add(k, fr, packs) >= indexPartBlocks {
					if err := storePart(&kept.ix); err != nil {
						return newPacks, err
					}
					kept = newKeptIndex()
				}
				continue
			}
			if fr != cached || raw == nil {
				if raw, err = s.readFrame(ctx, fr, raw[:0]); err != nil {
					return newPacks, err
				}
				cached = fr
			}
			b := raw[k.Offset : k.Offset+k.Len]
			if err := s.check(k.Name, b, location{Frame: fr, Offset: k.Offset, Len: k.Len}); err != nil {
				return newPacks, err
			}
			if err := pk.add(k.Name, b); err != nil {
				return newPacks, err
			}
		}
	}
	if err := pk.flush(); err != nil {
		return newPacks, err
	}
	for _, ix := range []*index{&pk.ix, &kept.ix} {
		if len(ix.Blocks) > 0 {
			if err := storePart(ix); err != nil {
				return newPacks, err
			}
		}
	}
	return newPacks, nil
}

// keptIndex is a part of the index Collect stores of the blocks that
// stay where they are.
type keptIndex struct {
	ix       index
	frameNum map[frameRef]uint32
	packKept map[string]bool
}

func newKeptIndex() *keptIndex {
	return &keptIndex{frameNum: map[frameRef]uint32{}, packKept: map[string]bool{}}
}

// add adds block k of frame fr and returns how many blocks the part
// holds.
func (p *keptIndex) add(k blockRef, fr frameRef, packs map[string]*packSurvey) int {
	n, ok := p.frameNum[fr]
	if !ok {
		n = uint32(len(p.ix.Frames))
		p.frameNum[fr] = n
		p.ix.Frames = append(p.ix.Frames, fr)
	}
	if !p.packKept[fr.Pack] {
		p.packKept[fr.Pack] = true
		p.ix.Packs = append(p.ix.Packs, packRef{Name: fr.Pack, Size: packs[fr.Pack].size})
	}
	k.Frame = n
	p.ix.Blocks = append(p.ix.Blocks, k)
	return len(p.ix.Blocks)
}

// MissingPacks lists the packs the store's index objects name that the
// store does not hold: every backup holding one of their blocks cannot be
// restored. It reads the index objects and lists the packs, and reads no
// pack.
func (s *Store) MissingPacks(ctx context.Context) ([]string, error) {
	names, err := s.indexNames(ctx)
	if err != nil {
		return nil, err
	}
	named := map[string]bool{}
	for _, name := range names {
		ix, err := s.readIndex(ctx, name)
		if err != nil {
			return nil, err
		}
		for _, f := range ix.Frames {
			named[f.Pack] = true
		}
	}
	packs, err := s.Backend.List(ctx, packDir)
	if err != nil {
		return nil, fmt.Errorf("list the block store's packs: %w", err)
	}
	for _, p := range packs {
		delete(named, p.Name)
	}
	return slices.Sorted(maps.Keys(named)), nil
}
