// Package physical runs the real mariabackup as a child process (backup and
// prepare) and writes the files of an xbstream into a datadir the way
// `mbstream -x` does. It knows nothing of the repository format: bytes come
// in and go out as io.Readers and xbstream chunks. A backup of a Galera
// node desyncs it for the copy and records its cluster position, which a
// prepared restore writes into grastate.dat.
package physical

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/toolpath"
)

// Binary is a mariabackup executable and the server version it is built from.
type Binary struct {
	Path    string
	Version string // server version it is built from, e.g. "10.11.19-MariaDB"
	Major   int
	Minor   int
}

// binaryNames are tried in this order. Debian and upstream ship both
// names since 10.5 (one a symlink); older packages only have mariabackup
// and newer releases may drop it, hence both.
var binaryNames = []string{"mariabackup", "mariadb-backup"}

// Whose version a mariabackup must match, for FindBinary's messages: a
// backup runs against the server, a prepare on the backup's files.
const (
	ForServer = "server"
	ForBackup = "backup"
)

// FindBinary returns the mariabackup to use for a server or backup (whose)
// of major.minor: the explicit path if given, else the first of
// "mariabackup" and "mariadb-backup" in the search path, then PATH, whose
// version matches. mariabackup can only back up and prepare the server
// version it was built from (it embeds that InnoDB), so a mismatch is
// refused rather than tried, naming what was found.
func FindBinary(ctx context.Context, explicit string, path toolpath.Path, major, minor int, whose string) (*Binary, error) {
	want := fmt.Sprintf("%d.%d", major, minor)
	if explicit != "" {
		p, err := exec.LookPath(explicit)
		if err != nil {
			return nil, fmt.Errorf("mariabackup %q (from --mariabackup) cannot be run: %w", explicit, err)
		}
		b, err := binaryVersion(ctx, p)
		if err != nil {
			return nil, err
		}
		if b.Major != major || b.Minor != minor {
			return nil, fmt.Errorf("mariabackup %s is built from MariaDB %s, but the %s is MariaDB %s: "+
				"mariabackup only works with the server version it was built from; "+
				"pass the path of mariadb-backup %s with --mariabackup PATH, or leave --mariabackup out and "+
				"put its installation on --mariadb-path DIR",
				b.Path, b.Version, whose, want, want)
		}
		return b, nil
	}

	var found []*Binary
	for _, c := range path.Candidates(binaryNames) {
		b, err := binaryVersion(ctx, c.Path)
		if err != nil {
			return nil, err
		}
		if b.Major == major && b.Minor == minor {
			return b, nil
		}
		found = append(found, b)
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("no mariabackup found in --mariadb-path or PATH (looked for %s): "+
			"install the mariadb-backup package for MariaDB %s (Debian/Ubuntu: apt install mariadb-backup; "+
			"RHEL: dnf install MariaDB-backup), or put its directory on --mariadb-path DIR",
			strings.Join(binaryNames, " and "), want)
	}
	var have []string
	for _, b := range found {
		have = append(have, fmt.Sprintf("%s is built from MariaDB %s", b.Path, b.Version))
	}
	return nil, fmt.Errorf("the %s is MariaDB %s, but %s (searched --mariadb-path, then PATH): "+
		"mariabackup only works with the server version it was built from; "+
		"install mariadb-backup %s and put its installation (a basedir or its bin directory) on "+
		"--mariadb-path DIR (option-file key mariadb-path, or $BACKSTREAM_MARIADB_PATH), or pass its path with --mariabackup PATH",
		whose, want, strings.Join(have, " and "), want)
}

// binaryVersion runs `path --version`. mariabackup prints the line on stderr
// ("mariabackup based on MariaDB server 10.11.19-MariaDB debian-linux-gnu
// (x86_64)").
func binaryVersion(ctx context.Context, path string) (*Binary, error) {
	out, err := toolpath.VersionOutput(ctx, path)
	if err != nil {
		return nil, err
	}
	b, err := parseVersionOutput(out)
	if err != nil {
		return nil, fmt.Errorf("%s --version: %w", path, err)
	}
	b.Path = path
	return b, nil
}

const versionMarker = "based on MariaDB server "

var errNoVersion = errors.New("no \"based on MariaDB server X.Y.Z\" in the output; is this mariabackup?")

// parseVersionOutput finds the server version in mariabackup --version output.
func parseVersionOutput(out string) (*Binary, error) {
	for _, line := range strings.Split(out, "\n") {
		i := strings.Index(line, versionMarker)
		if i < 0 {
			continue
		}
		v := strings.TrimSpace(line[i+len(versionMarker):])
		if j := strings.IndexAny(v, " \t"); j >= 0 {
			v = v[:j]
		}
		maj, min, _, err := mariadb.ParseVersion(v)
		if err != nil {
			return nil, fmt.Errorf("version %q: %w", v, err)
		}
		return &Binary{Version: v, Major: maj, Minor: min}, nil
	}
	return nil, fmt.Errorf("%w: %q", errNoVersion, truncate(strings.TrimSpace(out), 200))
}
