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
	got := runs(loads)
	d := prefetchDepth
	want := [][]frameRef{loads[0:3], loads[3:4], loads[4 : 4+d], loads[4+d : 5+d], loads[5+d : 6+d],
		loads[6+d : 8+d], loads[8+d : 9+d], loads[9+d : 10+d]}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("runs:\n%v\nwant\n%v", got, want)
	}
	if len(runs(nil)) != 0 {
		t.Error("runs of nothing")
	}
}
