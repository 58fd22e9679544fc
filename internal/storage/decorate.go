package storage

import "errors"

// Wrapper is implemented by decorators: backends that add behaviour to
// another (crypt, retry, limit, faulty). Unwrap returns the one wrapped.
type Wrapper interface {
	Unwrap() Backend
}

// Lookup finds the optional interface T (such as LeftoverRemover) of b, a
// backend or a chain of decorators over one. Optional interfaces are what
// the store at the bottom of the chain can do: b has T only if that store
// implements T. The method called is the outermost T along the chain, so
// that a decorator which changes names (crypt) or adds behaviour (retry)
// on the way can implement T itself, forwarding to Lookup of what it
// wraps; a decorator that does not implement T passes it through.
//
// Callers use Lookup, never a type assertion on b: a decorator need not
// implement an optional interface to pass it on, and a decorator that
// implements it does not have it unless the store does.
func Lookup[T any](b Backend) (T, bool) {
	var zero, found T
	have := false
	for {
		if t, ok := b.(T); ok && !have {
			found, have = t, true
		}
		w, ok := b.(Wrapper)
		if !ok {
			break
		}
		b = w.Unwrap()
	}
	if _, ok := b.(T); !ok {
		return zero, false
	}
	return found, have
}

// transience marks an error as worth retrying, or explicitly not.
type transience struct {
	err       error
	transient bool
}

func (e *transience) Error() string   { return e.err.Error() }
func (e *transience) Unwrap() error   { return e.err }
func (e *transience) Transient() bool { return e.transient }

// Transient marks err as a failure that may pass: the same call, made
// again a little later, may succeed (a server restarting or overloaded, a
// connection reset, a request that stalled). Backends mark such errors,
// and only such; the retry decorator retries them. Transient(nil) is nil.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return &transience{err, true}
}

// Permanent marks err as not worth retrying even if it wraps a transient
// one: a failure that already outlasted a retry window. Permanent(nil)
// is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &transience{err, false}
}

// IsTransient reports whether err is worth retrying: whether the
// outermost mark in its chain is Transient. An unmarked error is
// permanent.
func IsTransient(err error) bool {
	var t interface{ Transient() bool }
	return errors.As(err, &t) && t.Transient()
}
