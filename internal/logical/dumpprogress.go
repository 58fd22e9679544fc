package logical

import (
	"sync"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/progress"
)

// dumpProgress reports a dump in bytes of data files made (its rows and
// tables the Output counts as it writes or loads them), against a
// total that starts as the tables' size in the server and learns as they
// finish. The size the server reports (data_length) is a page footprint,
// from statistics that may be stale, and the text of the rows is seldom
// as long: a finished table adds what it made, and the tables still to
// come count their size scaled by what the finished ones made of theirs.
// A table under way counts at least what it made, so the total never falls
// below the bytes in and ends as what was made. Safe for concurrent use;
// its methods do nothing on a nil dumpProgress.
type dumpProgress struct {
	tr *progress.Tracker
	mu sync.Mutex
	// open holds what each table started and not finished made so far.
	open map[*tableWork]int64
	// unstarted sums the sizes of the tables not started.
	unstarted int64
	// doneMade and doneSize sum what the finished tables made and their
	// sizes.
	doneMade, doneSize int64
}

// newDumpProgress reports the dump of tables to tr; nil when tr is.
func newDumpProgress(tr *progress.Tracker, tables []*tableWork) *dumpProgress {
	if tr == nil {
		return nil
	}
	d := &dumpProgress{tr: tr, open: map[*tableWork]int64{}}
	for _, t := range tables {
		d.unstarted += t.t.DataBytes
	}
	tr.SetTotal(d.unstarted)
	return d
}

// made counts n bytes of w's data files.
func (d *dumpProgress) made(w *tableWork, n int64) {
	if d == nil {
		return
	}
	d.tr.In(n)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.start(w)
	d.open[w] += n
	d.setTotal()
}

// tableDone counts table w finished.
func (d *dumpProgress) tableDone(w *tableWork) {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.start(w)
	d.doneMade += d.open[w]
	d.doneSize += w.t.DataBytes
	delete(d.open, w)
	d.setTotal()
	d.mu.Unlock()
}

// kept takes table w, which the destination holds already and the dump
// leaves out, from the total.
func (d *dumpProgress) kept(w *tableWork) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.unstarted -= w.t.DataBytes
	d.setTotal()
}

// start moves w's size from the tables not started; d.mu is held.
func (d *dumpProgress) start(w *tableWork) {
	if _, ok := d.open[w]; !ok {
		d.unstarted -= w.t.DataBytes
		d.open[w] = 0
	}
}

// setTotal sets the total from the counts; d.mu is held. The tables under
// way are about as many as the connections, so the sum over them is short.
func (d *dumpProgress) setTotal() {
	scale := 1.0
	if d.doneSize > 0 {
		scale = float64(d.doneMade) / float64(d.doneSize)
	}
	total := float64(d.doneMade) + scale*float64(d.unstarted)
	for w, made := range d.open {
		total += max(float64(made), scale*float64(w.t.DataBytes))
	}
	d.tr.SetTotal(int64(total))
}

// outCounter counts only the bytes a writer stores: the bytes in of a dump
// are its data files' (see dumpProgress), not the schema's or the
// stream's framing.
type outCounter struct{ t *progress.Tracker }

func (o outCounter) In(int64)    {}
func (o outCounter) Out(n int64) { o.t.Out(n) }

var _ archive.Counter = outCounter{}
