package cli

import (
	"testing"

	"github.com/backstream/backstream/internal/usecasetest"
)

// testRepo is an empty repository on one kind of backend (see
// usecasetest.Repo), with what these tests add to it.
type testRepo struct{ usecasetest.Repo }

// newTestRepo makes an empty repository on the backend of that kind.
func newTestRepo(t *testing.T, kind string) testRepo {
	t.Helper()
	return testRepo{usecasetest.NewRepo(t, kind)}
}

// forEachBackend runs fn as a subtest on every backend.
func forEachBackend(t *testing.T, fn func(t *testing.T, r testRepo)) {
	usecasetest.ForEachBackend(t, func(t *testing.T, r usecasetest.Repo) { fn(t, testRepo{r}) })
}
