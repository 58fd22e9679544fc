package pitr

import (
	"context"
	"fmt"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/toolpath"
)

// binlogNames are mariadb-binlog's names, new and old.
var binlogNames = []string{"mariadb-binlog", "mysqlbinlog"}

// findBinlog returns the mariadb-binlog that reads the binary logs of a
// server of version: its own version's, else the oldest newer one
// (toolpath.FindReader); never an older one, which may not know a newer
// server's events.
func findBinlog(ctx context.Context, path toolpath.Path, version string) (string, error) {
	major, minor, _, err := mariadb.ParseVersion(version)
	if err != nil {
		return "", fmt.Errorf("the binary logs' server version %q: %w", version, err)
	}
	t, found, err := path.FindReader(ctx, binlogNames, major, minor)
	if err != nil {
		return "", err
	}
	if t != nil {
		return t.Path, nil
	}
	if len(found) == 0 {
		return "", fmt.Errorf("no mariadb-binlog found in --mariadb-path or PATH: install the MariaDB %d.%d client (Debian: apt-get install mariadb-client), or put its directory on --mariadb-path DIR", major, minor)
	}
	return "", fmt.Errorf("the binary logs are MariaDB %d.%d's, but the mariadb-binlog found are older: %s (searched --mariadb-path, then PATH); "+
		"put the installation of MariaDB %d.%d on --mariadb-path DIR (option-file key mariadb-path, or $BACKSTREAM_MARIADB_PATH)",
		major, minor, toolpath.Describe(found), major, minor)
}

// gtidMajor.gtidMinor is the first mariadb-binlog that takes GTID
// positions (--start-position and --stop-position as D-S-N).
const gtidMajor, gtidMinor = 10, 8

// checkGTIDReplay refuses a replay from or to a GTID position (what says
// which: --until-gtid, --apply-to) of the binary logs of a server of
// version older than 10.8. Its mariadb-binlog takes byte offsets only
// (10.5's stops on "Unknown suffix '-' used for variable
// 'start-position'"), and a newer one's output does not load into it
// (10.11's sets system_versioning_insert_history, which 10.5 does not
// know).
func checkGTIDReplay(version, what, instead string) error {
	major, minor, _, err := mariadb.ParseVersion(version)
	if err != nil {
		return fmt.Errorf("the binary logs' server version %q: %w", version, err)
	}
	if !toolpath.Newer(gtidMajor, gtidMinor, major, minor) {
		return nil
	}
	return &restore.RefusedError{Err: fmt.Errorf("the binary logs are MariaDB %d.%d's: %s replays from or to a GTID position, which mariadb-binlog takes from %d.%d on (older ones take byte offsets only), "+
		"and a newer mariadb-binlog's output does not load into a MariaDB %d.%d server; %s",
		major, minor, what, gtidMajor, gtidMinor, major, minor, instead)}
}
