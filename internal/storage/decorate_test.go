package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
)

// store is a Backend that does nothing; decorator wraps one.
type store struct{ Backend }

type keeper struct{ store }

func (keeper) RemoveLeftovers(context.Context, string, LeftoverOptions) (Leftovers, error) {
	return Leftovers{Uploads: 1}, nil
}

type decorator struct {
	Backend
	inner Backend
}

func (d decorator) Unwrap() Backend { return d.inner }

// renaming is a decorator that implements the optional interface itself.
type renaming struct{ decorator }

func (renaming) RemoveLeftovers(context.Context, string, LeftoverOptions) (Leftovers, error) {
	return Leftovers{Uploads: 2}, nil
}

func wrap(b Backend) decorator { return decorator{inner: b} }

func TestLookup(t *testing.T) {
	removes := func(b Backend) int {
		lr, ok := Lookup[LeftoverRemover](b)
		if !ok {
			return 0
		}
		n, _ := lr.RemoveLeftovers(context.Background(), "x/", LeftoverOptions{})
		return n.Count()
	}
	for _, c := range []struct {
		name string
		b    Backend
		want int // leftovers RemoveLeftovers reports; 0: not found
	}{
		{"plain store", store{}, 0},
		{"keeping store", keeper{}, 1},
		{"decorated plain store", wrap(wrap(store{})), 0},
		{"decorated keeping store", wrap(wrap(keeper{})), 1},
		{"intercepted", renaming{wrap(keeper{})}, 2},
		{"intercepted deeper", wrap(renaming{wrap(wrap(keeper{}))}), 2},
		// A decorator that implements the interface does not have it
		// unless the store does.
		{"interceptor over a plain store", renaming{wrap(store{})}, 0},
	} {
		if got := removes(c.b); got != c.want {
			t.Errorf("%s: RemoveLeftovers found reports %d, want %d (0: none found)", c.name, got, c.want)
		}
	}
}

func TestTransient(t *testing.T) {
	base := errors.New("connection reset")
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"unmarked", base, false},
		{"marked", Transient(base), true},
		{"wrapped mark", fmt.Errorf("stat x: %w", Transient(base)), true},
		{"permanent over transient", Permanent(fmt.Errorf("gave up: %w", Transient(base))), false},
		{"transient over permanent", Transient(Permanent(base)), true},
		{"EOF", io.EOF, false},
	} {
		if got := IsTransient(c.err); got != c.want {
			t.Errorf("%s: IsTransient(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
	if Transient(nil) != nil || Permanent(nil) != nil {
		t.Error("marking nil made an error")
	}
	if err := Transient(base); !errors.Is(err, base) || err.Error() != base.Error() {
		t.Errorf("Transient changed the error: %v", err)
	}
}

func TestLeftoversString(t *testing.T) {
	for _, c := range []struct {
		l    Leftovers
		want string
	}{
		{Leftovers{}, "no leftovers"},
		{Leftovers{TempFiles: 1, Bytes: 9}, "1 temporary file"},
		{Leftovers{Uploads: 2}, "2 incomplete uploads"},
		{Leftovers{TempFiles: 3}.Add(Leftovers{Uploads: 1, Bytes: 5}), "3 temporary files, 1 incomplete upload"},
	} {
		if got := c.l.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.l, got, c.want)
		}
	}
	if got := (Leftovers{TempFiles: 3, Bytes: 4}).Add(Leftovers{TempFiles: 1, Uploads: 2, Bytes: 5}); got != (Leftovers{TempFiles: 4, Uploads: 2, Bytes: 9}) || got.Count() != 6 {
		t.Errorf("Add: %+v, count %d", got, got.Count())
	}
}
