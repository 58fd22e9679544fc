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

func (keeper) AbortUploads(context.Context, string) (int, error) { return 1, nil }

type decorator struct {
	Backend
	inner Backend
}

func (d decorator) Unwrap() Backend { return d.inner }

// renaming is a decorator that implements the optional interface itself.
type renaming struct{ decorator }

func (renaming) AbortUploads(context.Context, string) (int, error) { return 2, nil }

func wrap(b Backend) decorator { return decorator{inner: b} }

func TestLookup(t *testing.T) {
	aborts := func(b Backend) int {
		ab, ok := Lookup[UploadAborter](b)
		if !ok {
			return 0
		}
		n, _ := ab.AbortUploads(context.Background(), "x")
		return n
	}
	for _, c := range []struct {
		name string
		b    Backend
		want int // uploads AbortUploads reports; 0: not found
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
		if got := aborts(c.b); got != c.want {
			t.Errorf("%s: AbortUploads found reports %d, want %d (0: none found)", c.name, got, c.want)
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
