// Package toolpath finds the MariaDB programs backstream runs (mariabackup,
// mariadb-binlog, mariadbd) for one MariaDB version, when a host holds
// several installations: in the directories of the search path the user
// gives (--mariadb-path), then in PATH. A tool works only with, or best
// with, the server version it is built from, so each is picked by the
// version it reports. It knows nothing of flags, backups or servers beyond
// running `PROGRAM --version`.
package toolpath

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/childenv"
)

// Path is the search path before PATH: each entry a basedir (its bin and
// sbin are searched) or a directory of programs.
type Path []string

// Parse splits a colon-separated list as PATH is written; empty entries
// are dropped.
func Parse(s string) Path {
	var p Path
	for _, e := range filepath.SplitList(s) {
		if e != "" {
			p = append(p, e)
		}
	}
	return p
}

// String is the list as Parse reads it.
func (p Path) String() string { return strings.Join(p, string(filepath.ListSeparator)) }

// place is a directory searched, and the basedir it belongs to ("" for a
// plain directory of programs).
type place struct{ dir, basedir string }

// places are the search path's directories, then PATH's, then extra.
func (p Path) places(extra ...string) []place {
	var out []place
	for _, e := range p {
		bin, sbin := isDir(filepath.Join(e, "bin")), isDir(filepath.Join(e, "sbin"))
		if !bin && !sbin {
			out = append(out, place{dir: e})
			continue
		}
		if bin {
			out = append(out, place{filepath.Join(e, "bin"), e})
		}
		if sbin {
			out = append(out, place{filepath.Join(e, "sbin"), e})
		}
	}
	for _, d := range append(filepath.SplitList(os.Getenv("PATH")), extra...) {
		if d != "" {
			out = append(out, place{dir: d})
		}
	}
	return out
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// Candidate is one program found on the path.
type Candidate struct {
	Path string
	// Basedir is the search path's entry it was found under when that
	// entry is a basedir (a server needs its share and lib), else "".
	Basedir string
}

// Candidates are the executables named one of names in the search path,
// then in PATH, then in extra, in that order; the same file reached by
// two names or links is listed once.
func (p Path) Candidates(names []string, extra ...string) []Candidate {
	var out []Candidate
	seen := map[string]bool{}
	for _, pl := range p.places(extra...) {
		for _, n := range names {
			path := filepath.Join(pl.dir, n)
			fi, err := os.Stat(path)
			if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
				continue
			}
			real, err := filepath.EvalSymlinks(path)
			if err != nil {
				real = path
			}
			if seen[real] {
				continue
			}
			seen[real] = true
			out = append(out, Candidate{Path: path, Basedir: pl.basedir})
		}
	}
	return out
}

// versionTimeout bounds `PROGRAM --version`, which should be instant; a
// hang there (a wrapper script waiting on a terminal) must not stall a
// backup.
const versionTimeout = 30 * time.Second

// VersionOutput runs `path --version` and returns what it printed, stdout
// and stderr together (mariabackup prints its version on stderr).
func VersionOutput(ctx context.Context, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Env = childenv.Env()
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	// Only a pipe still open after the program exited waits this long (a
	// child it left holding it); a loaded machine once took more than a
	// second to drain mariadb's one line ("WaitDelay expired before I/O
	// complete").
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	if ctxErr := ctx.Err(); ctxErr != nil {
		return "", fmt.Errorf("%s --version: %w", path, ctxErr)
	}
	if err != nil {
		msg := strings.TrimSpace(out.String())
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		return "", fmt.Errorf("%s --version failed: %w: %s", path, err, msg)
	}
	return out.String(), nil
}

// serverVersion is the MariaDB version in a program's --version line:
// "mariadb-binlog Ver 3.5 Distrib 10.11.19-MariaDB", "mariadbd  Ver
// 11.8.5-MariaDB-deb13 for debian-linux-gnu".
var serverVersion = regexp.MustCompile(`\b(\d+)\.(\d+)\.\d+-MariaDB`)

// Tool is a program and the MariaDB version it is built from.
type Tool struct {
	Candidate
	Version      string // e.g. "10.11.19"
	Major, Minor int
}

// clients are the programs whose version a program that prints none
// takes: the client of the same directory, from the same package.
var clients = []string{"mariadb", "mysql"}

// Probe runs the candidate's --version and reads the MariaDB version.
// mariadb-binlog before 11.x prints only its own ("Ver 3.5"): it takes
// the version of the mariadb client beside it.
func Probe(ctx context.Context, c Candidate) (Tool, error) {
	out, err := VersionOutput(ctx, c.Path)
	if err != nil {
		return Tool{}, err
	}
	m := serverVersion.FindStringSubmatch(out)
	for _, name := range clients {
		client := filepath.Join(filepath.Dir(c.Path), name)
		if m != nil || client == c.Path {
			break
		}
		if _, err := os.Stat(client); err != nil {
			continue
		}
		clientOut, err := VersionOutput(ctx, client)
		if err != nil {
			return Tool{}, err
		}
		m = serverVersion.FindStringSubmatch(clientOut)
	}
	if m == nil {
		return Tool{}, fmt.Errorf("%s --version names no MariaDB version, nor does a mariadb client beside it: %q", c.Path, strings.TrimSpace(out))
	}
	t := Tool{Candidate: c, Version: strings.TrimSuffix(m[0], "-MariaDB")}
	t.Major, _ = strconv.Atoi(m[1])
	t.Minor, _ = strconv.Atoi(m[2])
	return t, nil
}

// Find returns the first of the candidates named one of names whose
// version is major.minor, and, when there is none, every one it probed
// (nil when no program of those names is anywhere on the path).
func (p Path) Find(ctx context.Context, names []string, major, minor int, extra ...string) (*Tool, []Tool, error) {
	var found []Tool
	for _, c := range p.Candidates(names, extra...) {
		t, err := Probe(ctx, c)
		if err != nil {
			return nil, nil, err
		}
		if t.Major == major && t.Minor == minor {
			return &t, nil, nil
		}
		found = append(found, t)
	}
	return nil, found, nil
}

// FindReader returns the program, of names, that reads what a server of
// major.minor writes: one of that version, else the oldest newer one (a
// newer mariadb-binlog reads the events of older servers, the nearest
// with the fewest changes since; an older one may not know a newer
// server's events). When there is neither, it returns every one it probed
// (nil when no program of those names is anywhere on the path).
func (p Path) FindReader(ctx context.Context, names []string, major, minor int, extra ...string) (*Tool, []Tool, error) {
	t, found, err := p.Find(ctx, names, major, minor, extra...)
	if err != nil || t != nil {
		return t, nil, err
	}
	var nearest *Tool
	for i, f := range found {
		if Newer(f.Major, f.Minor, major, minor) && (nearest == nil || Newer(nearest.Major, nearest.Minor, f.Major, f.Minor)) {
			nearest = &found[i]
		}
	}
	if nearest != nil {
		return nearest, nil, nil
	}
	return nil, found, nil
}

// Newer reports whether version major.minor is newer than than.thanMinor.
func Newer(major, minor, than, thanMinor int) bool {
	return major > than || major == than && minor > thanMinor
}

// Describe lists tools as "PATH (MariaDB X.Y.Z)", for a message saying
// what was found instead.
func Describe(tools []Tool) string {
	var s []string
	for _, t := range tools {
		s = append(s, fmt.Sprintf("%s (MariaDB %s)", t.Path, t.Version))
	}
	return strings.Join(s, ", ")
}
