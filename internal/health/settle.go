package health

import (
	"time"

	"github.com/backstream/backstream/internal/refusal"
	"github.com/backstream/backstream/internal/repoaccess"
)

// Settle sets Now from now, a time as --now gives it (RFC 3339; "" keeps
// the clock's), and refuses a Kind that names no kind of backup.
func (o *Options) Settle(now string) error {
	if now != "" {
		t, err := time.Parse(time.RFC3339, now)
		if err != nil {
			return refusal.Errorf("--now %q: want a time like 2026-11-30T00:00:00Z or 2026-11-30T01:00:00+01:00", now)
		}
		o.Now = t
	}
	return repoaccess.CheckKind(o.Kind)
}
