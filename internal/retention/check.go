package retention

import (
	"github.com/backstream/backstream/internal/refusal"
	"github.com/backstream/backstream/internal/repoaccess"
)

// Check refuses, before anything is opened, a request that names no kind
// of backup, that would delete everything, or that counts below zero.
func (req Request) Check() error {
	p := req.Policy
	if err := repoaccess.CheckKind(p.Kind); err != nil {
		return err
	}
	if p.Empty() && !req.PruneIncomplete {
		return refusal.New("give at least one of --keep-last, --keep-within, --keep-daily, --keep-weekly, --keep-monthly, --keep-yearly, --keep-pitr, or only --prune-incomplete (expire never deletes everything)")
	}
	if p.KeepLast < 0 || p.KeepDaily < 0 || p.KeepWeekly < 0 || p.KeepMonthly < 0 || p.KeepYearly < 0 || p.KeepWithin < 0 || p.KeepPITR < 0 {
		return refusal.New("retention counts and durations must not be negative")
	}
	return nil
}
