package binlog

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/toolpath"
)

// The archiver copies a server's binary logs with the mariadb-binlog of
// the server's version from --mariadb-path, then PATH, else the nearest
// newer one, and refuses an older one naming what it found; --mariadb-binlog
// is taken as given.
func TestArchiverFindsBinlogByVersion(t *testing.T) {
	ctx := context.Background()
	b118 := sandboxtest.Basedir(t, "11.8")
	in118 := filepath.Join(b118, "bin", "mariadb-binlog")
	for _, c := range []struct {
		name     string
		path     toolpath.Path
		explicit string
		major    int
		minor    int
		want     string // the program, or the refusal's words
		refused  bool
	}{
		{"11.8 from its basedir", toolpath.Path{b118}, "", 11, 8, in118, false},
		{"11.4: the nearest newer", toolpath.Path{b118}, "", 11, 4, in118, false},
		{"10.11: the host's, first in PATH after the path", toolpath.Path{b118}, "", 10, 11, "/usr/bin/mariadb-binlog", false},
		{"10.5: the nearest newer is the host's 10.11", toolpath.Path{b118}, "", 10, 5, "/usr/bin/mariadb-binlog", false},
		{"11.8 with PATH only", nil, "", 11, 8, "the server is MariaDB 11.8, but the mariadb-binlog found are older: /usr/bin/mariadb-binlog (MariaDB 10.11.", true},
		{"12.0 with 11.8 on the path", toolpath.Path{b118}, "", 12, 0, "the server is MariaDB 12.0, but the mariadb-binlog found are older: " + in118 + " (MariaDB 11.8.", true},
		{"--mariadb-binlog as given", nil, "/opt/mariadb-binlog", 11, 8, "/opt/mariadb-binlog", false},
	} {
		a := &Archiver{MariadbPath: c.path, Binary: c.explicit}
		server := &mariadb.Server{Version: "x", Major: c.major, Minor: c.minor}
		got, err := a.findBinary(ctx, server)
		switch {
		case c.refused && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--mariadb-path DIR")):
			t.Errorf("%s: %q, %v; want refused with %q", c.name, got, err, c.want)
		case !c.refused && (err != nil || got != c.want):
			t.Errorf("%s: %q, %v; want %s", c.name, got, err, c.want)
		}
	}

	// A server upgraded between two passes (--follow reconnects) gets
	// its own version's.
	a := &Archiver{MariadbPath: toolpath.Path{b118}}
	for _, c := range []struct {
		server mariadb.Server
		want   string
	}{
		{mariadb.Server{Version: "10.11.19-MariaDB-log", Major: 10, Minor: 11}, "/usr/bin/mariadb-binlog"},
		{mariadb.Server{Version: "11.8.9-MariaDB-log", Major: 11, Minor: 8}, in118},
	} {
		if got, err := a.findBinary(ctx, &c.server); err != nil || got != c.want {
			t.Errorf("after an upgrade to %s: %q, %v; want %s", c.server.Version, got, err, c.want)
		}
	}
}
