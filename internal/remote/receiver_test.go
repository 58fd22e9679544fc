package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/transport"
)

// A stream the sender ended (reset, cut, aborted) reports the reason the
// sender gives on the control connection when it comes soon after, as it
// does when the sender cancelled that stream because another found
// damage; a failure of the receiver's own (a full disk) is reported at
// once.
func TestStreamEndedBySenderReportsTheSendersReason(t *testing.T) {
	reset := fmt.Errorf("stream 00000: from 127.0.0.1:1: read: %w", syscall.ECONNRESET)
	reason := errors.New("control connection: the sender failed: the stored backup is damaged")
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"reset", reset, reason},
		{"aborted", &transport.PeerError{Reason: "the sender failed: context canceled"}, reason},
		{"cut", fmt.Errorf("payload: %w", io.ErrUnexpectedEOF), reason},
		{"own failure", syscall.ENOSPC, syscall.ENOSPC},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(t.Context())
			defer cancel(nil)
			s := &session{final: make(chan struct{})}
			go func() {
				time.Sleep(100 * time.Millisecond)
				cancel(reason) // as readControl's fail
				close(s.final)
			}()
			start := time.Now()
			got := s.causeOf(ctx, c.err)
			if !errors.Is(got, c.want) {
				t.Errorf("causeOf(%v) = %v, want %v", c.err, got, c.want)
			}
			if c.want != reason && time.Since(start) > 50*time.Millisecond {
				t.Errorf("the receiver's own failure waited %v for the sender", time.Since(start))
			}
		})
	}
}
