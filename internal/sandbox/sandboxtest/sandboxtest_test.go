package sandboxtest

import (
	"errors"
	"os"
	"testing"

	"github.com/backstream/backstream/internal/sandbox"
)

func TestStartClosesWithTheTest(t *testing.T) {
	var s *sandbox.Server
	t.Run("server", func(t *testing.T) {
		s = Start(t, sandbox.Options{NoBinlog: true})
		if _, err := s.Version(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
	if s == nil {
		t.Fatal("no server")
	}
	if _, err := os.Stat(s.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("working dir %s left after the test: %v", s.Dir, err)
	}
	if err := s.DB().PingContext(t.Context()); err == nil {
		t.Errorf("server still answers after the test")
	}
}
