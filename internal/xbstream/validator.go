package xbstream

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Validator checks the rules that span chunks, as mbstream -x applies them,
// but turning into errors what mbstream only logs (it exits 0 after failing
// to create a file or to apply a remove):
//
//   - The first chunk of a path (P, S or E) opens it; E closes it. An E alone
//     makes an empty file.
//   - Payload offsets are contiguous per file: each P starts where the
//     previous one ended, or where the last seek of that file pointed. A seek
//     may point anywhere, backwards to overwrite or forwards to leave a hole.
//   - A path that was closed, or that a rename produced, exists in the target:
//     opening it again needs the rewrite flag on the opening chunk, which
//     truncates it (mbstream otherwise fails with "File exists").
//   - Remove and rename apply to closed paths only: neither the path, nor a
//     file below it (a removed directory goes with its content), nor a rename
//     target may be open.
//   - At the end of the stream no file is open.
//
// Callers that decode chunks themselves (from decompressed frames, in stream
// order) use it directly; Reader and Writer use one internally.
type Validator struct {
	open    map[string]uint64   // open path -> offset the next payload must have
	existed map[string]struct{} // closed paths still present in the target
}

// NewValidator returns a Validator at the start of a stream.
func NewValidator() *Validator {
	return &Validator{open: make(map[string]uint64), existed: make(map[string]struct{})}
}

// Check validates c (fields and path rules too) and applies it to the state.
// A rejected chunk leaves the state as it was.
func (v *Validator) Check(c *Chunk) error {
	if err := validateChunk(c); err != nil {
		return fmt.Errorf("xbstream: %w", err)
	}
	if err := v.check(c); err != nil {
		return fmt.Errorf("xbstream: %w", err)
	}
	return nil
}

// check applies an already validated chunk; errors are unprefixed.
func (v *Validator) check(c *Chunk) error {
	switch c.Type {
	case TypePayload:
		next, err := v.opening(c)
		if err != nil {
			return err
		}
		if c.Offset != next {
			return fmt.Errorf("chunk P for %q: payload at file offset %d, expected %d (chunks missing or out of order)", c.Path, c.Offset, next)
		}
		end := c.Offset + uint64(len(c.Payload))
		if end < c.Offset {
			return fmt.Errorf("chunk P for %q: file offset %d plus %d bytes overflows", c.Path, c.Offset, len(c.Payload))
		}
		v.open[c.Path] = end
	case TypeSeek:
		if _, err := v.opening(c); err != nil {
			return err
		}
		v.open[c.Path] = c.Offset
	case TypeEOF:
		if _, err := v.opening(c); err != nil {
			return err
		}
		delete(v.open, c.Path)
		v.existed[c.Path] = struct{}{}
	case TypeRemove:
		if p, ok := v.openAt(c.Path); ok {
			return fmt.Errorf("chunk D for %q: %q is still open (no end chunk yet)", c.Path, p)
		}
		v.forget(c.Path)
	case TypeRename:
		if p, ok := v.openAt(c.Path); ok {
			return fmt.Errorf("chunk R for %q: %q is still open (no end chunk yet)", c.Path, p)
		}
		if p, ok := v.openAt(c.NewPath); ok {
			return fmt.Errorf("chunk R from %q to %q: %q is open", c.Path, c.NewPath, p)
		}
		v.move(c.Path, c.NewPath)
	}
	return nil
}

// opening returns the offset the next payload of c.Path must have, opening
// the path if c is its first chunk.
func (v *Validator) opening(c *Chunk) (uint64, error) {
	if next, ok := v.open[c.Path]; ok {
		return next, nil
	}
	if _, ok := v.existed[c.Path]; ok && c.Flags&FlagRewrite == 0 {
		return 0, fmt.Errorf("chunk %v for %q: the file was already written (ended or renamed to) and this chunk reopens it without the rewrite flag", c.Type, c.Path)
	}
	delete(v.existed, c.Path)
	v.open[c.Path] = 0
	return 0, nil
}

// openAt returns an open path that is p or lies below p.
func (v *Validator) openAt(p string) (string, bool) {
	if _, ok := v.open[p]; ok {
		return p, true
	}
	prefix := p + "/"
	for q := range v.open {
		if strings.HasPrefix(q, prefix) {
			return q, true
		}
	}
	return "", false
}

// forget drops p and everything below it, as mbstream removes a directory
// with its content.
func (v *Validator) forget(p string) {
	delete(v.existed, p)
	prefix := p + "/"
	for q := range v.existed {
		if strings.HasPrefix(q, prefix) {
			delete(v.existed, q)
		}
	}
}

// move records a rename of p (a file or a directory) to q. The target counts
// as existing even when p was unknown, so that writing q afterwards without
// the rewrite flag is refused rather than risked.
func (v *Validator) move(p, q string) {
	prefix := p + "/"
	var moved []string
	for r := range v.existed {
		if strings.HasPrefix(r, prefix) {
			moved = append(moved, r)
		}
	}
	delete(v.existed, p)
	for _, r := range moved {
		delete(v.existed, r)
		v.existed[q+"/"+r[len(prefix):]] = struct{}{}
	}
	v.existed[q] = struct{}{}
}

// maxNamed bounds how many open paths an End error lists.
const maxNamed = 10

// End reports whether the stream may end here: an error naming the files
// still open (a truncated stream, matching io.ErrUnexpectedEOF) if any.
func (v *Validator) End() error {
	if len(v.open) == 0 {
		return nil
	}
	return fmt.Errorf("xbstream: %w", v.openErr())
}

func (v *Validator) openErr() error {
	paths := make([]string, 0, len(v.open))
	for p := range v.open {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	names := make([]string, 0, maxNamed)
	for _, p := range paths[:min(len(paths), maxNamed)] {
		names = append(names, fmt.Sprintf("%q", p))
	}
	more := ""
	if len(paths) > maxNamed {
		more = fmt.Sprintf(" and %d more", len(paths)-maxNamed)
	}
	return fmt.Errorf("stream ended with %d file(s) open (no end chunk): %s%s: %w",
		len(paths), strings.Join(names, ", "), more, io.ErrUnexpectedEOF)
}
