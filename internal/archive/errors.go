package archive

import (
	"errors"
	"fmt"
)

// CorruptError reports stored data that does not match its checksums or
// structure: the backup (or that part of it) cannot be trusted.
type CorruptError struct{ msg string }

func (e *CorruptError) Error() string { return e.msg }

// Corruptf makes a CorruptError: data that fails a check.
func Corruptf(format string, a ...any) error {
	return &CorruptError{msg: fmt.Sprintf(format, a...)}
}

// IsCorrupt reports whether err, or an error it wraps, is a CorruptError.
func IsCorrupt(err error) bool {
	var ce *CorruptError
	return errors.As(err, &ce)
}
