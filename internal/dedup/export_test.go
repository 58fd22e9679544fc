package dedup

import "fmt"

// NameOf is s's name of block b, for the tests.
func NameOf(s *Store, b []byte) Name { return s.name(b) }

// SetMaxRecipe sets the largest recipe a backup commits, for the tests;
// it returns the restore.
func SetMaxRecipe(n int) func() {
	old := maxRecipe
	maxRecipe = n
	return func() { maxRecipe = old }
}

// SetPartTarget sets the bytes of recipe a stream holds before it stores
// them as a part, for the tests; it returns the restore.
func SetPartTarget(n int) func() {
	old := partTarget
	partTarget = n
	return func() { partTarget = old }
}

// SetPackTarget sets the bytes of a pack, and SetIndexPartBlocks the new
// blocks a stream holds the index of before it stores it, for the tests;
// each returns the restore.
func SetPackTarget(n int64) func() {
	old := packTarget
	packTarget = n
	return func() { packTarget = old }
}

func SetIndexPartBlocks(n int) func() {
	old := indexPartBlocks
	indexPartBlocks = n
	return func() { indexPartBlocks = old }
}

// LiveOf is a Live of names, merged each few of them, and whether it
// holds each of names.
func LiveOf(names []Name, mergeEach int) (*Live, func(Name) bool) {
	old := liveMerge
	liveMerge = mergeEach
	defer func() { liveMerge = old }()
	l := &Live{}
	for _, n := range names {
		l.add(n)
	}
	l.merge()
	return l, func(n Name) bool { _, ok := l.find(n); return ok }
}

// SwapBlocks rewrites index object data so that its first two blocks
// each point at the other's bytes, as a forger who can fix every CRC-32C
// would: only the blocks' names can tell.
func SwapBlocks(data []byte) ([]byte, error) {
	ix, err := decodeIndex(data)
	if err != nil {
		return nil, err
	}
	a, b := &ix.Blocks[0], &ix.Blocks[1]
	a.Frame, a.Offset, a.Len, b.Frame, b.Offset, b.Len = b.Frame, b.Offset, b.Len, a.Frame, a.Offset, a.Len
	return ix.encode(), nil
}

// RecipeV1 is a recipe object written again as the first recipes were
// (recipeMagicV1, not compressed): frame i with CRC-32C crcs[i].
func RecipeV1(data []byte, crcs []uint32) ([]byte, error) {
	r, err := openRecipe(data)
	if err != nil {
		return nil, err
	}
	if len(crcs) != len(r.Frames) {
		return nil, fmt.Errorf("%d CRCs for %d frames", len(crcs), len(r.Frames))
	}
	for i := range r.Frames {
		r.Frames[i].CRC = crcs[i]
	}
	r.v1 = true
	return r.encode(), nil
}

// RecipeSize is the bytes of the recipe in recipe object data once
// decompressed: what maxRecipe bounds.
func RecipeSize(data []byte) (int, error) {
	r, err := openRecipe(data)
	if err != nil {
		return 0, err
	}
	return len(r.encode()), nil
}

// RecipeNaming is a recipe object whose frames are blocks of 8 bytes
// named names, 16,384 a frame, and its frame count, for the tests: what
// a backup of that many blocks stores without storing them.
func RecipeNaming(names []Name) ([]byte, int, error) {
	var frames []recipeFrame
	for i, n := range names {
		if i%16384 == 0 {
			frames = append(frames, recipeFrame{})
		}
		f := &frames[len(frames)-1]
		f.Raw += 8
		f.Items = append(f.Items, item{Block: n, N: 8})
	}
	data, err := (&recipe{Frames: frames}).seal()
	return data, len(frames), err
}
