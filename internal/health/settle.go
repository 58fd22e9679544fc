package health

import (
	"fmt"
	"time"

	"github.com/backstream/backstream/internal/repoaccess"
)

// RefusedError is a check asked wrongly.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// Refused marks the error as a refusal of what was asked.
func (e *RefusedError) Refused() bool { return true }

// Settle sets Now from now, a time as --now gives it (RFC 3339; "" keeps
// the clock's), and refuses a Kind that names no kind of backup.
func (o *Options) Settle(now string) error {
	if now != "" {
		t, err := time.Parse(time.RFC3339, now)
		if err != nil {
			return &RefusedError{fmt.Errorf("--now %q: want a time like 2026-11-30T00:00:00Z or 2026-11-30T01:00:00+01:00", now)}
		}
		o.Now = t
	}
	return repoaccess.CheckKind(o.Kind)
}
