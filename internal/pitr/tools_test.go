package pitr

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/toolpath"
)

// The replay reads binary logs with their server's mariadb-binlog, else a
// newer one, never an older.
func TestFindBinlogAndServer(t *testing.T) {
	ctx := context.Background()
	b118 := sandboxtest.Basedir(t, "11.8")
	with118 := toolpath.Path{b118}
	for _, c := range []struct {
		path    toolpath.Path
		version string
		want    string // the program, or the error's words
		refused bool
	}{
		{nil, "10.11.19-MariaDB-log", "/usr/bin/mariadb-binlog", false},
		{nil, "10.5.23-MariaDB-log", "/usr/bin/mariadb-binlog", false}, // newer reads older
		{with118, "10.5.23-MariaDB-log", "/usr/bin/mariadb-binlog", false},
		{with118, "10.6.1-MariaDB", "/usr/bin/mariadb-binlog", false}, // the nearest newer
		{with118, "11.4.1-MariaDB", filepath.Join(b118, "bin", "mariadb-binlog"), false},
		{with118, "11.8.9-MariaDB", filepath.Join(b118, "bin", "mariadb-binlog"), false},
		{nil, "11.8.9-MariaDB", "the binary logs are MariaDB 11.8's, but the mariadb-binlog found are older: /usr/bin/mariadb-binlog (MariaDB 10.11.", true},
	} {
		got, err := findBinlog(ctx, c.path, c.version)
		switch {
		case c.refused && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--mariadb-path")):
			t.Errorf("mariadb-binlog for %s on %q: %q, %v; want refused with %q", c.version, c.path, got, err, c.want)
		case !c.refused && (err != nil || got != c.want):
			t.Errorf("mariadb-binlog for %s on %q: %q, %v; want %s", c.version, c.path, got, err, c.want)
		}
	}

}
