// Package about says which backstream this is: its version and the VCS
// revision it was built from (the build info Go records in the binary),
// the Go it was built with, and the MariaDB tools it runs (mariabackup,
// mariadb, mariadb-binlog, mariadbd) as this host has them, with their
// versions. It knows nothing of backups, repositories or flags.
package about

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/toolpath"
)

// Info is what `backstream version` prints.
type Info struct {
	// Version is what this build calls itself: the version set at link
	// time (-X main.version=...), else the main module's version from the
	// build info (a tag, or Go's pseudo-version of the commit), else "dev".
	Version string `json:"version"`
	// Module and ModuleVersion are the main module as the build info has
	// it; ModuleVersion is "(devel)" for a build without VCS stamping.
	Module        string `json:"module,omitempty"`
	ModuleVersion string `json:"module_version,omitempty"`
	// Revision is the VCS commit the binary was built from, RevisionTime
	// its time, and Modified says the work tree had uncommitted changes;
	// all absent when the build recorded no VCS information
	// (-buildvcs=false, or no repository).
	Revision     string     `json:"revision,omitempty"`
	RevisionTime *time.Time `json:"revision_time,omitempty"`
	Modified     bool       `json:"modified,omitempty"`
	// Go is the Go release the binary was built with; Platform its
	// GOOS/GOARCH.
	Go       string `json:"go"`
	Platform string `json:"platform"`
	// Tools are the MariaDB programs backstream runs, as found here.
	Tools []Tool `json:"tools"`
}

// Tool is one MariaDB program as found on this host.
type Tool struct {
	// Name is what backstream calls it: mariabackup, mariadb,
	// mariadb-binlog or mariadbd.
	Name string `json:"name"`
	// Path is where it was found; "" when it was not.
	Path string `json:"path,omitempty"`
	// Version is the MariaDB version it is built from (10.11.19-MariaDB;
	// for mariadb-binlog before 11.x, its client's), or, for a tool that
	// does not print one, the first line of its --version output.
	Version string `json:"version,omitempty"`
	// Error says why it was not found, or why its version is unknown.
	Error string `json:"error,omitempty"`
}

// Gather is Build with the Tools this host has: all `backstream version`
// prints.
func Gather(ctx context.Context, version string, path toolpath.Path) Info {
	info := Build(version)
	info.Tools = Tools(ctx, path)
	return info
}

// Build describes this binary: version is the link-time version (main's
// "dev" when none was set).
func Build(version string) Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuildInfo(version, bi)
}

// fromBuildInfo is Build for a given build info (nil: none recorded).
func fromBuildInfo(version string, bi *debug.BuildInfo) Info {
	info := Info{Version: version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		info.Module, info.ModuleVersion = bi.Main.Path, bi.Main.Version
		if bi.GoVersion != "" {
			info.Go = bi.GoVersion
		}
		var goos, goarch string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Revision = s.Value
			case "vcs.time":
				if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
					info.RevisionTime = &t
				}
			case "vcs.modified":
				info.Modified = s.Value == "true"
			case "GOOS":
				goos = s.Value
			case "GOARCH":
				goarch = s.Value
			}
		}
		if goos != "" && goarch != "" {
			info.Platform = goos + "/" + goarch
		}
	}
	if info.Version == "" || info.Version == "dev" {
		switch v := info.ModuleVersion; {
		case v != "" && v != "(devel)":
			info.Version = v
		default:
			info.Version = "dev"
		}
	}
	return info
}

// toolNames are the programs Tools looks for: per tool, the names tried
// in PATH in order (the MariaDB name, then the older one).
var toolNames = []struct {
	name  string
	names []string
}{
	{"mariabackup", []string{"mariabackup", "mariadb-backup"}},
	{"mariadb", []string{"mariadb", "mysql"}},
	{"mariadb-binlog", []string{"mariadb-binlog", "mysqlbinlog"}},
	{"mariadbd", []string{"mariadbd", "mysqld"}},
}

// serverDirs are searched for mariadbd after PATH: packages install it in
// an sbin directory, which an ordinary account's PATH often lacks.
var serverDirs = []string{"/usr/sbin", "/usr/local/sbin", "/usr/local/mysql/bin"}

// Tools finds each MariaDB program backstream runs, in the installations
// of path (--mariadb-path), then PATH (and, for the server, sbin
// directories), and asks each its version. Every one found is listed: on
// a host with several MariaDB versions the one backstream takes depends on
// the server or backup at hand. A program that is missing or fails is
// reported in a Tool, never as an error: the answer is what this host has.
func Tools(ctx context.Context, path toolpath.Path) []Tool { return tools(ctx, path, serverDirs) }

// tools is Tools, looking for mariadbd in sbin after PATH.
func tools(ctx context.Context, path toolpath.Path, sbin []string) []Tool {
	var out []Tool
	for _, t := range toolNames {
		var dirs []string
		if t.name == "mariadbd" {
			dirs = sbin
		}
		found := path.Candidates(t.names, dirs...)
		if len(found) == 0 {
			where := "--mariadb-path and PATH"
			if len(dirs) > 0 {
				where = "--mariadb-path, PATH and " + strings.Join(dirs, ", ")
			}
			out = append(out, Tool{Name: t.name, Error: fmt.Sprintf("not found (looked for %s in %s)", strings.Join(t.names, " and "), where)})
			continue
		}
		for _, c := range found {
			tool := Tool{Name: t.name, Path: c.Path}
			v, err := toolVersion(ctx, c.Path)
			if err == nil && !mariadbVersion.MatchString(v) {
				// mariadb-binlog before 11.x prints only its own
				// version: backstream goes by its client's.
				if p, perr := toolpath.Probe(ctx, c); perr == nil {
					v = p.Version + "-MariaDB"
				}
			}
			if err != nil {
				tool.Error = err.Error()
			} else {
				tool.Version = v
			}
			out = append(out, tool)
		}
	}
	return out
}

// toolVersion runs `path --version` and reads the version it prints.
func toolVersion(ctx context.Context, path string) (string, error) {
	out, err := toolpath.VersionOutput(ctx, path)
	if err != nil {
		return "", err
	}
	return parseVersion(out)
}

// mariadbVersion is a MariaDB version as the tools print it:
// "10.11.19-MariaDB", "11.4.5-MariaDB-0+deb13u1", "10.11.19-MariaDB-log".
var mariadbVersion = regexp.MustCompile(`\b\d+\.\d+\.\d+-MariaDB[A-Za-z0-9.+~_-]*`)

var errNoOutput = errors.New("--version printed nothing")

// parseVersion finds the MariaDB version in a tool's --version output, or
// else returns its first line.
func parseVersion(out string) (string, error) {
	if v := mariadbVersion.FindString(out); v != "" {
		return v, nil
	}
	for _, line := range strings.Split(out, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return line, nil
		}
	}
	return "", errNoOutput
}
