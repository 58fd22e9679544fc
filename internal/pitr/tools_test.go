package pitr

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/restore"
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

// A replay from or to a GTID position of a server older than 10.8 is
// refused before anything: its mariadb-binlog takes byte offsets only, and
// a newer one's output does not load into it (TestVersionsPointInTime
// sees both on 10.5).
func TestCheckGTIDReplay(t *testing.T) {
	for _, c := range []struct {
		version string
		refused bool
	}{
		{"10.5.23-MariaDB-0+deb11u1-log", true},
		{"10.6.18-MariaDB", true},
		{"10.8.1-MariaDB", false},
		{"10.11.19-MariaDB-log", false},
		{"11.8.9-MariaDB", false},
	} {
		err := checkGTIDReplay(c.version, "--until-gtid", "use --until")
		var refused *restore.RefusedError
		switch {
		case c.refused && (!errors.As(err, &refused) || !strings.Contains(err.Error(), "the binary logs are MariaDB "+c.version[:4]+"'s: --until-gtid replays from or to a GTID position, which mariadb-binlog takes from 10.8 on") ||
			!strings.HasSuffix(err.Error(), "; use --until")):
			t.Errorf("%s: %v, want refused naming the version, 10.8 and what to do instead", c.version, err)
		case !c.refused && err != nil:
			t.Errorf("%s: %v, want no refusal", c.version, err)
		}
	}
	if err := checkGTIDReplay("ten", "--apply-to", ""); err == nil {
		t.Error("an unreadable version passed")
	}
}
