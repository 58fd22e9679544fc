// Package refusal marks the errors that refuse what was asked (options
// that contradict each other, a value that cannot be right) rather than
// report a failure of doing it: the command reports them as usage errors
// (exit code 2), and a package that refuses a request returns one of
// these instead of a type of its own.
package refusal

import (
	"errors"
	"fmt"
)

// Error is a refusal of what was asked.
type Error struct{ Err error }

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Refused marks the error as a refusal: any error with this method is one.
func (e *Error) Refused() bool { return true }

// Errorf is a refusal with fmt.Errorf's message.
func Errorf(format string, a ...any) error { return &Error{fmt.Errorf(format, a...)} }

// New is a refusal with the message text.
func New(text string) error { return &Error{errors.New(text)} }
