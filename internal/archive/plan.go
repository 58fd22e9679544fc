package archive

import (
	"context"
	"fmt"
	"slices"
)

// FrameRanger is an Input that fetches chosen frames of a stream without
// the others (a repository: ranged reads located by the frame index).
// Read uses it for the streams of a partial read (ReadOptions.Only).
type FrameRanger interface {
	// OpenFrames yields frames (numbers in ascending order) of stream i,
	// described by s, in that order.
	OpenFrames(ctx context.Context, i int, s Stream, frames []int) (FrameSource, error)
}

// PlanTaker is an Input told, before any of its streams opens, what the
// Read takes of each stream: a sender across the network, which sends
// only the frames asked for; a block store, which locates the blocks of
// them all at once (and holds that table for the Read: PlanMemory).
type PlanTaker interface {
	TakePlan(ctx context.Context, plans []StreamPlan) error
}

// planKey carries the Read's *readBudget in the context given to
// TakePlan.
type planKey struct{}

// PlanMemory takes n bytes of the budget of the Read that called
// TakePlan with ctx, for the rest of that Read: what the Input holds for
// the whole Read beside its frames (what, for the error). It waits for
// them (nothing of this Read is held yet, so only other Reads' frames
// can be in the way). At most half the budget is taken over all the
// calls of a Read (the frames need the rest): more is a
// *PlanMemoryError naming all it would take. Outside a Read's TakePlan
// nothing bounds the Input, and nothing is taken.
func PlanMemory(ctx context.Context, n int64, what string) error {
	b, ok := ctx.Value(planKey{}).(*readBudget)
	if !ok || n <= 0 {
		return nil
	}
	if total := b.plan + n; 2*total > b.mem.size {
		return &PlanMemoryError{What: what, Need: total, Have: b.mem.size}
	}
	if err := b.acquire(ctx, n); err != nil {
		return err
	}
	b.plan += n
	return nil
}

// PlanMemoryError is a budget too small for what an Input holds for a
// whole Read.
type PlanMemoryError struct {
	What       string
	Need, Have int64
}

func (e *PlanMemoryError) Error() string {
	mib := func(n int64) int64 { return (n + 1<<20 - 1) >> 20 }
	return fmt.Sprintf("%s takes %d MiB, more than half of --memory (%d MiB; the rest is for the frames read): give --memory %dMiB or more", e.What, mib(e.Need), e.Have>>20, mib(2*e.Need))
}

// StreamPlan says what a Read takes of one stream.
type StreamPlan struct {
	// Skip: no file of the stream is asked for; nothing is read.
	Skip bool
	// Frames, if not nil, are the only frames read (ascending): those
	// holding the chunks of Files, the stream's files asked for, which
	// alone reach the sink. Nil: the whole stream is read, checked and
	// delivered, as without Only.
	Frames []int
	Files  []File

	want map[string]bool // the paths of Files, when Frames is set
}

// Plan says what Read takes of each stream of m for a partial read: a
// stream none of whose files only accepts is skipped; one whose asked
// files all have frame ranges is read in those frames alone, when the
// input can fetch frames (FrameRanger); any other is read whole (its
// files kept no frame ranges, having removed or renamed paths). Without
// only, or for a backup whose streams meet at barriers, every stream is
// read whole.
func Plan(m *Manifest, in Input, only func(path string) bool) []StreamPlan {
	plans := make([]StreamPlan, len(m.Streams))
	if only == nil || len(m.Barriers) > 0 || m.Detached() {
		return plans
	}
	_, ranged := in.(FrameRanger)
	asked := make([][]File, len(m.Streams))
	for _, f := range m.Files {
		if only(f.Path) {
			asked[f.Stream] = append(asked[f.Stream], f)
		}
	}
	for i, files := range asked {
		if len(files) == 0 {
			plans[i].Skip = true
			continue
		}
		if !ranged || slices.ContainsFunc(files, func(f File) bool { return len(f.Frames) == 0 }) {
			continue
		}
		p := StreamPlan{Frames: []int{}, Files: files, want: make(map[string]bool, len(files))}
		seen := map[int]bool{}
		for _, f := range files {
			p.want[f.Path] = true
			for _, r := range f.Frames {
				for n := r[0]; n <= r[1]; n++ {
					if !seen[n] {
						seen[n] = true
						p.Frames = append(p.Frames, n)
					}
				}
			}
		}
		slices.Sort(p.Frames)
		plans[i] = p
	}
	return plans
}

// planRead is Plan for opt; a backup still arriving is read whole.
func planRead(m *Manifest, opt ReadOptions) []StreamPlan {
	if opt.Final != nil {
		return make([]StreamPlan, len(m.Streams))
	}
	return Plan(m, opt.Input, opt.Only)
}

// frameNum is the stream's frame number of the i-th frame read.
func (p StreamPlan) frameNum(i int) int {
	if p.Frames != nil && i < len(p.Frames) {
		return p.Frames[i]
	}
	return i
}

// delivers reports whether chunks of path reach the sink.
func (p StreamPlan) delivers(path string) bool {
	return p.Frames == nil || p.want[path]
}

// FrameIndexer is an Input that reads a stream's frame index by itself.
type FrameIndexer interface {
	FrameIndex(ctx context.Context, s Stream) ([]Frame, error)
}

// PlannedBytes is how many stored bytes a Read of m's streams from in,
// planned as plans (Plan's), takes: for progress totals. A stream read in
// part counts its planned frames' stored bytes when in reads frame
// indexes (one small read each), otherwise its share of the frames (which
// compress unevenly: the share is a rough guess).
func PlannedBytes(ctx context.Context, m *Manifest, in Input, plans []StreamPlan) int64 {
	var n int64
	ix, indexed := in.(FrameIndexer)
	for i, s := range m.Streams {
		p := plans[i]
		if p.Skip || p.Frames == nil || !indexed {
			n += int64(float64(s.Size) * p.Fraction(s))
			continue
		}
		frames, err := ix.FrameIndex(ctx, s)
		if err != nil {
			// The read will say what is wrong; a total must not fail it.
			n += int64(float64(s.Size) * p.Fraction(s))
			continue
		}
		for _, f := range p.Frames {
			if f >= 0 && f < len(frames) {
				n += int64(frames[f].Stored)
			}
		}
	}
	return n
}

// Fraction is the share of the stream's frames the plan reads, for
// progress totals: 0 for a skipped stream, 1 for a whole one.
func (p StreamPlan) Fraction(s Stream) float64 {
	switch {
	case p.Skip:
		return 0
	case p.Frames == nil || s.Frames == 0:
		return 1
	}
	return float64(len(p.Frames)) / float64(s.Frames)
}

var _ FrameRanger = BackendInput{}
