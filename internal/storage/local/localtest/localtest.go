// Package localtest gives tests a local backend in a temporary directory,
// the real store the decorators' tests wrap. Only tests import it.
package localtest

import (
	"testing"

	"github.com/backstream/backstream/internal/storage/local"
)

// New returns a backend on a fresh temporary directory, closed when the
// test ends.
func New(t testing.TB) *local.Backend {
	t.Helper()
	b, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}
