package dedup

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"

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

// LiveNames reads the recipes of a backup's streams (in its directory
// dir, as its manifest m names them) and adds every block they name.
func (s *Store) LiveNames(ctx context.Context, dir string, m *archive.Manifest, live map[Name]bool) error {
	for _, st := range m.Streams {
		sr, err := Input{Store: s, Dir: dir}.stream(ctx, st)
		if err == nil {
			err = sr.each(ctx, allFrames(len(sr.index())), func(r *recipe, _ []int) error {
				for _, f := range r.Frames {
					for _, it := range f.Items {
						if !it.isLit {
							live[it.Block] = true
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

// Collect removes the blocks no name of live holds: the caller holds the
// repository's exclusive lock (no backup may claim a block meanwhile) and
// live holds every block of every complete backup. It writes one index
// object of the blocks that stay, then removes the index objects it
// replaces, then the packs that hold no block that stays (and packs no
// index names: a backup that never finished wrote them). Interrupted at
// any point, the store still holds every block that stays, indexed at
// least once. Packs that hold blocks both dead and alive are kept whole.
func (s *Store) Collect(ctx context.Context, live map[Name]bool) (Collected, error) {
	var c Collected
	if err := s.ready(ctx); err != nil {
		return c, err
	}
	names, err := s.indexNames(ctx)
	if err != nil {
		return c, err
	}
	keep := &index{}
	packSize, packKept, frameNum := map[string]int64{}, map[string]bool{}, map[frameRef]uint32{}
	packRaw, frameSeen := map[string]int64{}, map[frameRef]bool{} // what each pack holds, live or not
	named := map[Name]bool{}
	for _, name := range names {
		ix, err := s.readIndex(ctx, name)
		if err != nil {
			return c, err
		}
		for _, p := range ix.Packs {
			packSize[p.Name] = p.Size
		}
		for _, f := range ix.Frames {
			if !frameSeen[f] {
				frameSeen[f] = true
				packRaw[f.Pack] += int64(f.Raw)
			}
		}
		for _, k := range ix.Blocks {
			if !live[k.Name] || named[k.Name] {
				c.DroppedEntries++
				continue
			}
			named[k.Name] = true
			fr := ix.Frames[k.Frame]
			n, ok := frameNum[fr]
			if !ok {
				n = uint32(len(keep.Frames))
				frameNum[fr] = n
				keep.Frames = append(keep.Frames, fr)
			}
			if !packKept[fr.Pack] {
				packKept[fr.Pack] = true
				keep.Packs = append(keep.Packs, packRef{Name: fr.Pack, Size: packSize[fr.Pack]})
			}
			keep.Blocks = append(keep.Blocks, blockRef{Name: k.Name, Frame: n, Offset: k.Offset, Len: k.Len})
		}
	}
	for n := range live {
		if !named[n] {
			return c, archive.Corruptf("block %s, which a backup names, is in no index of the block store: nothing was collected", n)
		}
	}
	repacked, err := s.repack(ctx, keep, packRaw, &c)
	if err != nil {
		return c, err
	}
	packs, err := s.Backend.List(ctx, packDir)
	if err != nil {
		return c, fmt.Errorf("list the block store's packs: %w", err)
	}
	kept := map[string]bool{}
	for _, p := range keep.Packs {
		kept[p.Name] = true
	}
	var dead []storage.Info
	for _, p := range packs {
		if kept[p.Name] {
			c.KeptPacks++
		} else {
			dead = append(dead, p)
		}
	}
	c.LiveBlocks = int64(len(keep.Blocks))
	if c.DroppedEntries == 0 && len(dead) == 0 && len(names) <= 1 && len(repacked) == 0 {
		return c, nil // nothing to drop
	}
	if len(keep.Blocks) > 0 {
		var id [8]byte
		if _, err := rand.Read(id[:]); err != nil {
			return c, err
		}
		name := indexDir + "collected-" + hex.EncodeToString(id[:]) + ".idx"
		if _, err := s.Backend.Put(ctx, name, bytesReader(keep.encode())); err != nil {
			return c, fmt.Errorf("store %s: %w", name, err)
		}
	}
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

// repack rewrites the packs of keep whose blocks that stay take less
// than half of what the pack holds (total: raw bytes of each pack's
// frames): those blocks, read and checked
// against their names, go into new packs, and keep then names those
// instead. It returns the packs it emptied (stored before they go: the
// new packs are stored before the index that names them).
func (s *Store) repack(ctx context.Context, keep *index, total map[string]int64, c *Collected) (map[string]bool, error) {
	live := map[string]int64{}
	for _, k := range keep.Blocks {
		live[keep.Frames[k.Frame].Pack] += int64(k.Len)
	}
	sparse := map[string]bool{}
	for p, t := range total {
		if live[p]*2 < t {
			sparse[p] = true
		}
	}
	if len(sparse) == 0 {
		return nil, nil
	}
	pk := &packer{ctx: ctx, backend: s.Backend}
	// On a failure, what the packer is storing stops before repack returns
	// (what it stored stays: no index names it, and the next collect
	// removes it).
	defer pk.abort(context.Canceled)
	var stay []blockRef
	var cached frameRef
	var raw []byte
	for _, k := range keep.Blocks {
		fr := keep.Frames[k.Frame]
		if !sparse[fr.Pack] {
			stay = append(stay, k)
			continue
		}
		if fr != cached || raw == nil {
			var err error
			if raw, err = s.readFrame(ctx, fr, raw[:0]); err != nil {
				return nil, err
			}
			cached = fr
		}
		b := raw[k.Offset : k.Offset+k.Len]
		if err := s.check(k.Name, b, location{Frame: fr, Offset: k.Offset, Len: k.Len}); err != nil {
			return nil, err
		}
		if err := pk.add(k.Name, b); err != nil {
			return nil, err
		}
	}
	if err := pk.flush(); err != nil {
		return nil, err
	}
	// keep: the blocks that stay where they are, then the repacked ones.
	merged := &index{}
	frameNum := map[uint32]uint32{}
	for _, k := range stay {
		n, ok := frameNum[k.Frame]
		if !ok {
			n = uint32(len(merged.Frames))
			frameNum[k.Frame] = n
			merged.Frames = append(merged.Frames, keep.Frames[k.Frame])
		}
		merged.Blocks = append(merged.Blocks, blockRef{Name: k.Name, Frame: n, Offset: k.Offset, Len: k.Len})
	}
	for _, p := range keep.Packs {
		if !sparse[p.Name] {
			merged.Packs = append(merged.Packs, p)
		}
	}
	base := uint32(len(merged.Frames))
	merged.Frames = append(merged.Frames, pk.ix.Frames...)
	merged.Packs = append(merged.Packs, pk.ix.Packs...)
	for _, k := range pk.ix.Blocks {
		k.Frame += base
		merged.Blocks = append(merged.Blocks, k)
	}
	*keep = *merged
	c.Repacked = int64(len(sparse))
	return sparse, nil
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
