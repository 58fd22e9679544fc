package retention

import (
	"errors"

	"github.com/backstream/backstream/internal/repoaccess"
)

// RefusedError is a request that cannot be right: the command was called
// wrongly.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// Refused marks the error as a refusal of what was asked.
func (e *RefusedError) Refused() bool { return true }

// Check refuses, before anything is opened, a request that names no kind
// of backup, that would delete everything, or that counts below zero.
func (req Request) Check() error {
	p := req.Policy
	if err := repoaccess.CheckKind(p.Kind); err != nil {
		return err
	}
	if p.Empty() && !req.PruneIncomplete {
		return &RefusedError{errors.New("give at least one of --keep-last, --keep-within, --keep-daily, --keep-weekly, --keep-monthly, --keep-yearly, --keep-pitr, or only --prune-incomplete (expire never deletes everything)")}
	}
	if p.KeepLast < 0 || p.KeepDaily < 0 || p.KeepWeekly < 0 {
		return &RefusedError{errors.New("retention counts must not be negative")}
	}
	return nil
}
