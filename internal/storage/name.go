package storage

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrInvalidName is matched (errors.Is) by every error that rejects an
// object name or a list prefix, so callers can tell a caller bug from a
// storage failure.
var ErrInvalidName = errors.New("invalid object name")

// CheckName reports whether name is a valid object name: slash-separated,
// valid UTF-8 (as object stores require), non-empty, no leading slash, no
// empty, "." or ".." element, no NUL or backslash. An element that starts with "." and ends with ".tmp" is
// reserved: backends write their in-progress objects under such names and
// hide them, so an object with one could be stored but never listed.
//
// Every backend applies the same rule so that a repository written to one
// backend can be copied to any other, and so that a name can never step
// outside a backend's root however the backend maps names to paths.
func CheckName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty", ErrInvalidName)
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("%w: %q: not UTF-8", ErrInvalidName, name)
	}
	if i := strings.IndexAny(name, "\x00\\"); i >= 0 {
		return fmt.Errorf("%w: %q: NUL or backslash at byte %d", ErrInvalidName, name, i)
	}
	if name[0] == '/' {
		return fmt.Errorf("%w: %q: leading slash", ErrInvalidName, name)
	}
	for elem := range strings.SplitSeq(name, "/") {
		switch {
		case elem == "":
			return fmt.Errorf("%w: %q: empty element", ErrInvalidName, name)
		case elem == "." || elem == "..":
			return fmt.Errorf("%w: %q: element %q", ErrInvalidName, name, elem)
		case IsTempName(elem):
			return fmt.Errorf("%w: %q: element %q is reserved for temporary files", ErrInvalidName, name, elem)
		}
	}
	return nil
}

// CheckPrefix reports whether prefix can begin a valid object name; List
// rejects any other prefix, because a prefix such as "/backups" or
// "a//" can match nothing and is almost certainly a caller's bug. The empty
// prefix (everything) is valid. A prefix must be valid UTF-8 on its own, so
// it may not end inside a multi-byte character.
func CheckPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	// A prefix can begin some valid name exactly when it can begin this one:
	// completing its last partial element with "x" yields a valid element
	// whenever any completion does (the "x" also avoids the ".tmp" suffix).
	if err := CheckName(prefix + "x"); err != nil {
		return fmt.Errorf("%w: prefix %q cannot begin any valid name", ErrInvalidName, prefix)
	}
	return nil
}

// IsTempName reports whether a single name element has the reserved form
// of a temporary file: a leading "." and a ".tmp" suffix.
func IsTempName(elem string) bool {
	return strings.HasPrefix(elem, ".") && strings.HasSuffix(elem, ".tmp")
}

// ErrDamaged is matched (errors.Is) by the errors of a decorator that
// finds an object's stored bytes fail its own checks (an encrypted
// object whose authentication fails), as opposed to a failure to reach
// them: the caller treats the object as damaged.
var ErrDamaged = errors.New("the stored object is damaged")
