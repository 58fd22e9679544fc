package dedup

import (
	"slices"
	"testing"
)

func TestRunsGroupFollowingFramesOfAPack(t *testing.T) {
	f := func(pack string, off int64, stored uint32) frameRef {
		return frameRef{Pack: pack, Offset: off, Stored: stored}
	}
	loads := []frameRef{f("a", 0, 10), f("a", 10, 5), f("a", 15, 7)} // one run
	loads = append(loads, f("a", 40, 3))                             // a gap
	loads = append(loads, f("b", 43, 1))                             // another pack, though the offset follows
	for i := range prefetchDepth {                                   // a run as long as runs go, then one more
		loads = append(loads, f("b", 44+int64(i), 1))
	}
	loads = append(loads, f("a", 0, 10)) // back to a frame read before
	half := uint32(runBytes / 2)
	loads = append(loads, f("c", 0, half), f("c", int64(half), half), f("c", 2*int64(half), 1)) // runBytes, then one more
	loads = append(loads, f("d", 0, 2*runBytes))                                                // a frame alone over runBytes
	got := runs(loads, prefetchDepth)
	d := prefetchDepth
	want := [][]frameRef{loads[0:3], loads[3:4], loads[4 : 4+d], loads[4+d : 5+d], loads[5+d : 6+d],
		loads[6+d : 8+d], loads[8+d : 9+d], loads[9+d : 10+d]}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("runs:\n%v\nwant\n%v", got, want)
	}
	if len(runs(nil, prefetchDepth)) != 0 {
		t.Error("runs of nothing")
	}
}

// A stream's reassembly spends what a Read set aside for it: its frames
// kept and read ahead stay within it once it holds the least that works
// (a frame kept, one read ahead), all of what it wants when given that,
// and everything it may hold when nothing bounds it.
func TestSpendStaysWithinWhatWasGiven(t *testing.T) {
	if got := spend(0, false, frameBuf); got != (spending{cachedBytes, prefetchDepth}) {
		t.Errorf("unbounded: %+v, want all it may hold", got)
	}
	if got := spend(Input{}.SourceWants(), true, frameBuf); got != (spending{cachedBytes, prefetchDepth}) {
		t.Errorf("given what it wants: %+v, want all of it", got)
	}
	for _, unit := range []int64{frameBuf, maxPackFrame} {
		least := (aheadFrames(1) + 1) * unit
		for given := int64(0); given <= 32<<20; given += 96 << 10 {
			sp := spend(given, true, unit)
			held := sp.cache + aheadFrames(sp.depth)*unit
			switch {
			case sp.depth < 1 || sp.depth > prefetchDepth || sp.cache < unit || sp.cache > cachedBytes:
				t.Fatalf("given %d, frames of %d: %+v out of range", given, unit, sp)
			case given >= least && held > given:
				t.Fatalf("given %d, frames of %d: %+v holds %d", given, unit, sp, held)
			case given < least && held != least:
				t.Fatalf("given %d, frames of %d: %+v holds %d, want the least that works, %d", given, unit, sp, held, least)
			}
		}
	}
}
