package sandboxtest

import (
	"os"
	"path/filepath"
	"testing"
)

// Versions are the MariaDB versions besides the host's that
// scripts/versions.sh installs and scripts/test.sh installs before the
// tests: a test that names one fails, never skips, when it is missing.
var Versions = []string{"10.5", "11.8"}

// Basedir is the basedir of MariaDB version (major.minor) as
// scripts/versions.sh installed it, for sandbox.Options.Basedir: in
// $BACKSTREAM_VERSIONS_DIR, else the user's cache directory.
func Basedir(t testing.TB, version string) string {
	t.Helper()
	dir := os.Getenv("BACKSTREAM_VERSIONS_DIR")
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Fatalf("MariaDB %s: %v", version, err)
		}
		dir = filepath.Join(cache, "backstream-versions")
	}
	base := filepath.Join(dir, version, "basedir")
	if _, err := os.Stat(filepath.Join(base, ".ready")); err != nil {
		t.Fatalf("MariaDB %s is not installed in %s (%v): run scripts/versions.sh install %s", version, base, err, version)
	}
	return base
}
