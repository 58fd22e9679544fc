// Package physical runs the real mariabackup as a child process (backup and
// prepare) and writes the files of an xbstream into a datadir the way
// `mbstream -x` does. It knows nothing of the repository format: bytes come
// in and go out as io.Readers and xbstream chunks. A backup of a Galera
// node desyncs it for the copy and records its cluster position, which a
// prepared restore writes into grastate.dat.
package physical

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/childenv"
	"github.com/backstream/backstream/internal/mariadb"
)

// Binary is a mariabackup executable and the server version it is built from.
type Binary struct {
	Path    string
	Version string // server version it is built from, e.g. "10.11.19-MariaDB"
	Major   int
	Minor   int
}

// binaryNames are tried in this order in PATH. Debian and upstream ship both
// names since 10.5 (one a symlink); older packages only have mariabackup and
// newer releases may drop it, hence both.
var binaryNames = []string{"mariabackup", "mariadb-backup"}

// versionTimeout bounds `mariabackup --version`, which should be instant; a
// hang there (a wrapper script waiting on a terminal) must not stall a backup.
const versionTimeout = 30 * time.Second

// FindBinary returns the mariabackup to use for a server of major.minor: the
// explicit path if given, else the first of "mariabackup" and
// "mariadb-backup" in PATH whose version matches. mariabackup can only back up
// and prepare the server version it was built from (it embeds that InnoDB), so
// a mismatch is refused rather than tried.
func FindBinary(ctx context.Context, explicit string, major, minor int) (*Binary, error) {
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
			return nil, fmt.Errorf("mariabackup %s is built from MariaDB %s, but the server is MariaDB %s: "+
				"mariabackup only works with the server version it was built from; "+
				"install mariadb-backup %s and pass its path with --mariabackup PATH",
				b.Path, b.Version, want, want)
		}
		return b, nil
	}

	var found []*Binary
	seen := make(map[string]bool)
	for _, name := range binaryNames {
		p, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		b, err := binaryVersion(ctx, p)
		if err != nil {
			return nil, err
		}
		if b.Major == major && b.Minor == minor {
			return b, nil
		}
		if !seen[b.Path] {
			seen[b.Path] = true
			found = append(found, b)
		}
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("no mariabackup found in PATH (looked for %s): "+
			"install the mariadb-backup package for MariaDB %s (Debian/Ubuntu: apt install mariadb-backup; "+
			"RHEL: dnf install MariaDB-backup), or pass its path with --mariabackup PATH",
			strings.Join(binaryNames, " and "), want)
	}
	var have []string
	for _, b := range found {
		have = append(have, fmt.Sprintf("%s is built from MariaDB %s", b.Path, b.Version))
	}
	return nil, fmt.Errorf("the server is MariaDB %s, but %s: "+
		"mariabackup only works with the server version it was built from; "+
		"install mariadb-backup %s and pass its path with --mariabackup PATH",
		want, strings.Join(have, " and "), want)
}

// binaryVersion runs `path --version`. mariabackup prints the line on stderr
// ("mariabackup based on MariaDB server 10.11.19-MariaDB debian-linux-gnu
// (x86_64)"), so both outputs are searched.
func binaryVersion(ctx context.Context, path string) (*Binary, error) {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Env = childenv.Env()
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ctxErr := ctx.Err(); ctxErr != nil {
		return nil, fmt.Errorf("%s --version: %w", path, ctxErr)
	}
	if err != nil {
		return nil, fmt.Errorf("%s --version failed: %w: %s", path, err, truncate(strings.TrimSpace(out.String()), 300))
	}
	b, err := parseVersionOutput(out.String())
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
