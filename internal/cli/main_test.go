package cli

import (
	"os"
	"testing"

	"github.com/backstream/backstream/internal/usecasetest"
)

func TestMain(m *testing.M) {
	usecasetest.Main(m, func() {
		if built.dir != "" {
			os.RemoveAll(built.dir)
		}
	})
}
