package logical

import (
	"context"
	"sync"
)

// fileQueue holds data files read from the streams (or made by a dump)
// until a loader takes them. A loader takes the oldest file whose table
// no other loader is loading, when that table allows only one load at a
// time: one with an AUTO_INCREMENT column (LOAD DATA then holds InnoDB's
// table-level AUTO-INC lock under the default
// innodb_autoinc_lock_mode=1, so a second loader would only wait), and
// any table until a file of it has loaded. Into an empty table InnoDB
// (MariaDB 10.6 and newer) inserts in bulk, locking the whole table for
// the transaction: two first files loading at once wait for each other,
// and can deadlock. Loaders thus spread over tables.
type fileQueue struct {
	mu      sync.Mutex
	cond    *sync.Cond
	pending []*loadFile
	busy    map[*target]int  // files of the table being loaded
	loaded  map[*target]bool // a file of the table has loaded
	limit   int
	closed  bool
	err     error
}

func newFileQueue(ctx context.Context, limit int) *fileQueue {
	q := &fileQueue{busy: map[*target]int{}, loaded: map[*target]bool{}, limit: limit}
	q.cond = sync.NewCond(&q.mu)
	context.AfterFunc(ctx, func() {
		q.mu.Lock()
		q.err = context.Cause(ctx)
		q.mu.Unlock()
		q.cond.Broadcast()
	})
	return q
}

// put adds a complete file, waiting while the queue is full.
func (q *fileQueue) put(f *loadFile) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.pending) >= q.limit && q.err == nil {
		q.cond.Wait()
	}
	if q.err != nil {
		return q.err
	}
	q.pending = append(q.pending, f)
	q.cond.Broadcast()
	return nil
}

// close says no more files come.
func (q *fileQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

// take returns the next file a loader may load, or nil once the queue is
// closed and empty (or the load failed).
func (q *fileQueue) take() *loadFile {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.err == nil {
		for i, f := range q.pending {
			if q.busy[f.t] > 0 && (f.t.serial || !q.loaded[f.t]) {
				continue
			}
			q.pending = append(q.pending[:i], q.pending[i+1:]...)
			q.busy[f.t]++
			q.cond.Broadcast()
			return f
		}
		if q.closed && len(q.pending) == 0 {
			return nil
		}
		q.cond.Wait()
	}
	return nil
}

// done says a loader finished a file of t; loaded, that its rows are in.
func (q *fileQueue) done(t *target, loaded bool) {
	q.mu.Lock()
	q.busy[t]--
	q.loaded[t] = q.loaded[t] || loaded
	q.mu.Unlock()
	q.cond.Broadcast()
}
