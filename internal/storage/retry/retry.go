// Package retry holds backstream's one retry rule and the decorator that
// applies it to a storage.Backend.
//
// The rule (Policy): a failure is retried only if the backend marked it
// storage.Transient, so what is worth retrying is decided where the error
// is understood (an S3 503 or a reset connection is, an access denial or a
// full disk is not); waits grow exponentially from 250 ms to 8 s, each
// jittered (half fixed, half random) so that many streams failing together
// do not come back in lockstep; and retrying stops once the failures of
// one operation have gone on for the retry window (2 minutes by default),
// so that an outage is ridden out but a dead store is reported.
//
// Who retries what: a call that can simply be made again (Stat, List,
// Delete, Open, and a read resumed where it stopped) is retried by the
// decorator, Backend, for every store alike. A request only the store can
// repeat (an upload part re-sent from the bytes it buffered, since the
// caller's reader cannot be read twice) is retried inside the store, with
// Policy.Do: the loop is the same, only the place differs. An error that
// outlasted a window is marked permanent, so two layers never multiply
// their windows.
//
// The package knows errors and objects; it never looks inside an error to
// guess whether it is transient, and knows no store, repository or flag.
package retry

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/backstream/backstream/internal/storage"
)

// DefaultWindow is how long transient failures are retried when a Policy
// sets no window.
const DefaultWindow = 2 * time.Minute

// Backoff bounds: the first retry waits about backoffBase, each further
// one twice as long, never more than backoffMax.
const (
	backoffBase = 250 * time.Millisecond
	backoffMax  = 8 * time.Second
)

// Backoff returns the wait before retry number attempt (0 for the first):
// backoffBase doubled per attempt up to backoffMax, jittered between half
// of that and all of it.
func Backoff(attempt int) time.Duration {
	d := backoffMax
	if attempt < 10 {
		d = min(backoffMax, backoffBase<<attempt)
	}
	return d/2 + rand.N(d/2+1)
}

// Policy is the retry rule with its window. The zero Policy is the
// default rule.
type Policy struct {
	// Window bounds how long one operation's transient failures are
	// retried, from its first attempt; 0 means DefaultWindow.
	Window time.Duration
	// OnRetry, if set, is called before each wait, with the failure about
	// to be retried (for counters and logs).
	OnRetry func(err error, wait time.Duration)
}

func (p Policy) window() time.Duration {
	if p.Window <= 0 {
		return DefaultWindow
	}
	return p.Window
}

// ExhaustedError reports an operation whose transient failures lasted for
// the whole retry window. It is permanent: nothing above retries it again.
type ExhaustedError struct {
	Attempts int
	Elapsed  time.Duration
	Window   time.Duration
	Err      error // the last failure
}

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("still failing after %d attempts in %v (retry window %v): %v",
		e.Attempts, e.Elapsed.Round(time.Millisecond), e.Window, e.Err)
}

func (e *ExhaustedError) Unwrap() error { return e.Err }

// Transient is false: the window is spent.
func (e *ExhaustedError) Transient() bool { return false }

// Do calls fn until it succeeds, fails with an error that is not
// storage.Transient, ctx ends, or its transient failures have gone on for
// the window. It returns nil; fn's permanent error as it is; ctx's error
// when ctx ended (noting the failure being retried, if any); or an
// *ExhaustedError. fn must be safe to call again after a failure.
func (p Policy) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	window := p.window()
	start := time.Now()
	for try := 0; ; try++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := fn(ctx)
		if err == nil {
			return nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if !storage.IsTransient(err) {
			return err
		}
		wait := Backoff(try)
		if elapsed := time.Since(start); elapsed+wait > window {
			return &ExhaustedError{Attempts: try + 1, Elapsed: elapsed, Window: window, Err: err}
		}
		if p.OnRetry != nil {
			p.OnRetry(err, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (while retrying after: %v)", ctx.Err(), err)
		case <-t.C:
		}
	}
}
