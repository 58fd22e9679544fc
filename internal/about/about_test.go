package about

import (
	"context"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/toolpath"
)

func TestParseVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ out, want string }{
		{"mariabackup based on MariaDB server 10.11.19-MariaDB debian-linux-gnu (x86_64)\n", "10.11.19-MariaDB"},
		{"mariadb  Ver 15.1 Distrib 10.11.19-MariaDB, for debian-linux-gnu (x86_64) using  EditLine wrapper\n", "10.11.19-MariaDB"},
		{"mariadb from 11.8.3-MariaDB, client 15.2 for debian-linux-gnu (x86_64) using  EditLine wrapper\n", "11.8.3-MariaDB"},
		{"/usr/sbin/mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)\n", "10.11.19-MariaDB-0+deb12u1"},
		{"\n  mariadb-binlog Ver 3.5 for debian-linux-gnu at x86_64\n", "mariadb-binlog Ver 3.5 for debian-linux-gnu at x86_64"},
	} {
		got, err := parseVersion(tc.out)
		if err != nil || got != tc.want {
			t.Errorf("parseVersion(%q) = %q, %v; want %q", tc.out, got, err, tc.want)
		}
	}
	if _, err := parseVersion(" \n"); err == nil {
		t.Error("parseVersion of nothing succeeded")
	}
}

func TestFromBuildInfo(t *testing.T) {
	t.Parallel()
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/backstream/backstream", Version: "v0.0.0-20261124101500-62bdd13abcde+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "arm64"},
			{Key: "vcs.revision", Value: "62bdd13abcde0123456789abcdef0123456789ab"},
			{Key: "vcs.time", Value: "2026-11-24T10:15:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	for _, tc := range []struct {
		linked, want string
	}{
		{"dev", "v0.0.0-20261124101500-62bdd13abcde+dirty"}, // no link-time version: the module's
		{"", "v0.0.0-20261124101500-62bdd13abcde+dirty"},
		{"1.4.0", "1.4.0"}, // a release's own name wins
	} {
		info := fromBuildInfo(tc.linked, bi)
		if info.Version != tc.want {
			t.Errorf("version %q: got %q, want %q", tc.linked, info.Version, tc.want)
		}
		if info.Revision != "62bdd13abcde0123456789abcdef0123456789ab" || !info.Modified || info.RevisionTime == nil ||
			info.RevisionTime.Format("2006-01-02T15:04:05Z") != "2026-11-24T10:15:00Z" || info.Go != "go1.26.8" || info.Platform != "linux/arm64" ||
			info.Module != "github.com/backstream/backstream" {
			t.Errorf("from the build info: %+v", info)
		}
	}
	// A build without VCS stamping, and none at all.
	bi = &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/backstream/backstream", Version: "(devel)"}}
	if info := fromBuildInfo("dev", bi); info.Version != "dev" || info.Revision != "" || info.RevisionTime != nil || info.Modified {
		t.Errorf("unstamped build: %+v", info)
	}
	if info := fromBuildInfo("dev", nil); info.Version != "dev" || info.Go == "" || info.Platform == "" {
		t.Errorf("no build info: %+v", info)
	}
}

// Tools finds this host's mariabackup and mariadbd (scripts/deps.sh
// installs them) and reports the version they print themselves.
func TestTools(t *testing.T) {
	t.Parallel()
	tools := Tools(context.Background(), nil)
	byName := map[string]Tool{}
	for _, tool := range tools {
		byName[tool.Name] = tool
	}
	if len(byName) != len(toolNames) {
		t.Fatalf("Tools returned %+v", tools)
	}
	for _, name := range []string{"mariabackup", "mariadb", "mariadbd"} {
		tool := byName[name]
		if tool.Path == "" || tool.Error != "" || !strings.Contains(tool.Version, "-MariaDB") {
			t.Errorf("%s: %+v", name, tool)
			continue
		}
		out, err := exec.Command(tool.Path, "--version").CombinedOutput()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), tool.Version) {
			t.Errorf("%s: version %q is not in its --version output %q", name, tool.Version, out)
		}
	}
	if tool := byName["mariadb-binlog"]; tool.Path == "" || tool.Version == "" {
		t.Errorf("mariadb-binlog: %+v", tool)
	}
}

func TestToolsReportsWhatIsMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, tool := range tools(context.Background(), nil, nil) {
		if tool.Path != "" || !strings.Contains(tool.Error, "not found") {
			t.Errorf("with an empty PATH: %+v", tool)
		}
	}
}

// With an installation on the path, its programs are listed before the
// host's, each with its own version.
func TestToolsOnThePath(t *testing.T) {
	t.Parallel()
	b118 := sandboxtest.Basedir(t, "11.8")
	var backups []Tool
	for _, tool := range Tools(context.Background(), toolpath.Path{b118}) {
		if tool.Name == "mariabackup" {
			backups = append(backups, tool)
		}
	}
	if len(backups) != 2 || backups[0].Path != filepath.Join(b118, "bin", "mariabackup") || !strings.HasPrefix(backups[0].Version, "11.8.") ||
		!strings.HasPrefix(backups[1].Version, "10.11.") {
		t.Errorf("mariabackup with 11.8 on the path: %+v", backups)
	}
}
