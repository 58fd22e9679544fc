package archive

import (
	"errors"
	"fmt"

	"github.com/backstream/backstream/internal/storage"
)

// CorruptError reports stored data that does not match its checksums or
// structure: the backup (or that part of it) cannot be trusted.
type CorruptError struct{ msg string }

func (e *CorruptError) Error() string { return e.msg }

// Corruptf makes a CorruptError: data that fails a check.
func Corruptf(format string, a ...any) error {
	return &CorruptError{msg: fmt.Sprintf(format, a...)}
}

// IsCorrupt reports whether err, or an error it wraps, is a CorruptError
// or a storage decorator's storage.ErrDamaged.
func IsCorrupt(err error) bool {
	var ce *CorruptError
	return errors.As(err, &ce) || errors.Is(err, storage.ErrDamaged)
}

// missing reports an object the manifest names that the storage does not
// hold: damage of the backup, naming the object.
func missing(name string, err error) error {
	return Corruptf("object %s, named by the manifest, is missing: %v", name, err)
}
