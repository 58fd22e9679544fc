package usecasetest

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/testkit"
)

// Load runs transactions in the background while a test backs up.
type Load struct {
	stop      chan struct{}
	wg        sync.WaitGroup
	Committed atomic.Int64 // the steps that returned nil
	mu        sync.Mutex
	err       error
}

// StartLoad runs step in workers goroutines, each with its own random
// source, until Finish; every step that returns nil is one commit.
func StartLoad(workers int, step func(rng *rand.Rand) error) *Load {
	l := &Load{stop: make(chan struct{})}
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w)+1, 7))
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				if err := step(rng); err != nil {
					l.mu.Lock()
					l.err = err
					l.mu.Unlock()
					return
				}
				l.Committed.Add(1)
			}
		}()
	}
	return l
}

// More waits until n more transactions have committed, so that the load
// runs before, during and after what a test does however slow the machine;
// a load that failed or stalled for a minute fails the test.
func (l *Load) More(t testing.TB, n int64) {
	t.Helper()
	target := l.Committed.Load() + n
	for deadline := time.Now().Add(time.Minute); l.Committed.Load() < target; time.Sleep(10 * time.Millisecond) {
		l.mu.Lock()
		err := l.err
		l.mu.Unlock()
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("the write load stopped at %d transactions: %v", l.Committed.Load(), err)
		}
	}
}

// Finish stops the load and fails the test if a transaction failed.
func (l *Load) Finish(t testing.TB) {
	t.Helper()
	close(l.stop)
	l.wg.Wait()
	if l.err != nil {
		t.Fatal(l.err)
	}
}

// WaitFor polls cond for up to two minutes.
func WaitFor(t *testing.T, what string, out *testkit.SyncBuffer, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("no %s after two minutes; binlog --follow said:\n%s", what, out.String())
}
