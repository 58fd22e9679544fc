package restoredserver

import (
	"context"
	"fmt"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/toolpath"
)

// serverNames are the server's names, new and old.
var serverNames = []string{"mariadbd", "mysqld"}

// FindServer returns the mariadbd of the backup's version (e.g.
// "11.8.5-MariaDB") on the search path, then PATH and /usr/sbin, for
// Start: a server of another version would upgrade the restored
// datadir, or refuse it, instead of showing what the backup holds. Nil
// when there is no server anywhere: starting one then fails as the
// sandbox does on a host without MariaDB.
func FindServer(ctx context.Context, path toolpath.Path, version string) (*toolpath.Tool, error) {
	major, minor, _, err := mariadb.ParseVersion(version)
	if err != nil {
		return nil, fmt.Errorf("the backup's server version %q: %w", version, err)
	}
	t, found, err := path.Find(ctx, serverNames, major, minor, "/usr/sbin")
	if err != nil || t != nil || len(found) == 0 {
		return t, err
	}
	return nil, fmt.Errorf("the backup is MariaDB %d.%d, but the servers found are %s (searched --mariadb-path, then PATH and /usr/sbin): "+
		"a server of another version would upgrade the restored datadir or refuse it; "+
		"put the installation of MariaDB %d.%d (its basedir) on --mariadb-path DIR (option-file key mariadb-path, or $BACKSTREAM_MARIADB_PATH)",
		major, minor, toolpath.Describe(found), major, minor)
}
