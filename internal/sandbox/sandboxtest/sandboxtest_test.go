package sandboxtest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// Each other version starts from its own basedir and is the version it
// says, with its own plugins and messages, and its tools run beside it.
func TestOtherVersionsStart(t *testing.T) {
	for _, v := range Versions {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			base := Basedir(t, v)
			s := Start(t, sandbox.Options{Basedir: base})
			version, err := s.Version(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(version, v+".") {
				t.Fatalf("the server from %s is MariaDB %s, want %s", base, version, v)
			}
			var pluginDir string
			if err := s.DB().QueryRowContext(t.Context(), "SELECT @@plugin_dir").Scan(&pluginDir); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(pluginDir, base+"/") {
				t.Errorf("plugin_dir %s is not the version's (%s)", pluginDir, base)
			}
			// A statement that fails reads the version's own error messages:
			// the host's file would have another count and fail the start.
			if _, err := s.DB().ExecContext(t.Context(), "SELECT * FROM no_such_db.t"); err == nil || !strings.Contains(err.Error(), "no_such_db") {
				t.Errorf("an error names no database: %v", err)
			}
			out, err := exec.Command(filepath.Join(base, "bin", "mariabackup"), "--version").CombinedOutput()
			if err != nil || !strings.Contains(string(out), "MariaDB server "+v+".") {
				t.Errorf("mariabackup of %s: %v: %s", v, err, out)
			}
		})
	}
}
