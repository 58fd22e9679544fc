// Package throttle bounds the rate of byte streams, so that a backup takes
// no more of a production server's disk and network than it is allowed. It
// knows bytes and time, nothing of what the bytes are.
package throttle

import (
	"context"
	"fmt"
	"io"

	"golang.org/x/time/rate"
)

// minBurst keeps the token bucket from getting so small that every read
// becomes a timer wake-up.
const minBurst = 64 << 10

// Limiter is a byte budget per second, shared by every reader and writer
// given it. A nil *Limiter is no limit and costs nothing.
type Limiter struct{ l *rate.Limiter }

// NewLimiter allows bytesPerSecond on average; 0 or less returns nil, no
// limit. The bucket holds a tenth of a second of bytes (at least 64 KiB):
// enough that a late timer does not lose budget, small enough that no
// tenth of a second runs much over the rate.
func NewLimiter(bytesPerSecond int64) *Limiter {
	if bytesPerSecond <= 0 {
		return nil
	}
	burst := int(min(max(bytesPerSecond/10, minBurst), 1<<40))
	return &Limiter{l: rate.NewLimiter(rate.Limit(bytesPerSecond), burst)}
}

// Wait blocks until n more bytes fit in the budget, in burst-sized steps so
// that n may be any size. It returns early with the context's cause when
// ctx ends.
func (l *Limiter) Wait(ctx context.Context, n int) error {
	if l == nil {
		return nil
	}
	for n > 0 {
		step := min(n, l.l.Burst())
		if err := l.l.WaitN(ctx, step); err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return fmt.Errorf("throttle: %w", err)
		}
		n -= step
	}
	return nil
}

// NewReader returns a reader of r that delivers at most l's rate, waiting
// after each read for the bytes it returned. Each read asks r for at most
// one burst, so a big buffer does not let a burst of many seconds through.
// With a nil l it returns r itself.
func NewReader(ctx context.Context, r io.Reader, l *Limiter) io.Reader {
	if l == nil {
		return r
	}
	return &reader{ctx: ctx, r: r, l: l}
}

type reader struct {
	ctx context.Context
	r   io.Reader
	l   *Limiter
}

func (t *reader) Read(p []byte) (int, error) {
	if err := t.ctx.Err(); err != nil {
		return 0, context.Cause(t.ctx)
	}
	if burst := t.l.l.Burst(); len(p) > burst {
		p = p[:burst]
	}
	n, err := t.r.Read(p)
	if n > 0 {
		// The bytes already read are returned along with a wait's error:
		// the caller sees them, then the error.
		if werr := t.l.Wait(t.ctx, n); werr != nil {
			return n, werr
		}
	}
	return n, err
}
