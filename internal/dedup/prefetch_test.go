package dedup

import (
	"slices"
	"testing"
)

func TestRunsGroupFollowingFramesOfAPack(t *testing.T) {
	f := func(pack string, off int64, stored uint32) frameRef {
		return frameRef{Pack: pack, Offset: off, Stored: stored}
	}
	loads := []frameRef{
		f("a", 0, 10), f("a", 10, 5), f("a", 15, 7), // one run
		f("a", 40, 3),                                              // a gap
		f("b", 43, 1),                                              // another pack, though the offset follows
		f("b", 44, 1), f("b", 45, 1), f("b", 46, 1), f("b", 47, 1), // a run of four, then one more
		f("a", 0, 10), // back to a frame read before
	}
	got := runs(loads)
	want := [][]frameRef{loads[0:3], loads[3:4], loads[4:8], loads[8:9], loads[9:10]}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("runs:\n%v\nwant\n%v", got, want)
	}
	if len(runs(nil)) != 0 {
		t.Error("runs of nothing")
	}
}
