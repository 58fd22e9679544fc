package toolpath

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// The installations of scripts/versions.sh and the host's are told apart
// by the versions their programs report, mariadb-binlog before 11.x
// through the client beside it; a basedir's programs carry the basedir.
func TestFindByVersion(t *testing.T) {
	ctx := context.Background()
	b105, b118 := sandboxtest.Basedir(t, "10.5"), sandboxtest.Basedir(t, "11.8")
	path := Parse(b118 + ":" + filepath.Join(b105, "bin") + "::")
	if len(path) != 2 {
		t.Fatalf("Parse dropped no empty entry: %q", path)
	}
	for _, c := range []struct {
		names        []string
		major, minor int
		path, base   string
	}{
		{[]string{"mariadb-binlog"}, 10, 5, filepath.Join(b105, "bin", "mariadb-binlog"), ""},
		{[]string{"mariadb-binlog"}, 11, 8, filepath.Join(b118, "bin", "mariadb-binlog"), b118},
		{[]string{"mariadb-binlog"}, 10, 11, "/usr/bin/mariadb-binlog", ""},
		{[]string{"mariadbd"}, 11, 8, filepath.Join(b118, "sbin", "mariadbd"), b118},
		{[]string{"mariadbd"}, 10, 11, "/usr/sbin/mariadbd", ""},
	} {
		got, found, err := path.Find(ctx, c.names, c.major, c.minor, "/usr/sbin")
		if err != nil {
			t.Fatalf("%s %d.%d: %v", c.names[0], c.major, c.minor, err)
		}
		if got == nil {
			t.Fatalf("%s %d.%d: not found among %s", c.names[0], c.major, c.minor, Describe(found))
		}
		if got.Path != c.path || got.Basedir != c.base || got.Major != c.major || got.Minor != c.minor {
			t.Errorf("%s %d.%d: got %+v, want %s in basedir %q", c.names[0], c.major, c.minor, *got, c.path, c.base)
		}
	}
	// 10.5's server is in its sbin, which a bin directory on the path
	// does not bring: 10.5 is not found, and what was is named.
	got, found, err := path.Find(ctx, []string{"mariadbd"}, 10, 5, "/usr/sbin")
	if err != nil || got != nil {
		t.Fatalf("mariadbd 10.5 from a bin directory: %+v, %v", got, err)
	}
	if d := Describe(found); !strings.Contains(d, filepath.Join(b118, "sbin", "mariadbd")+" (MariaDB 11.8.") || !strings.Contains(d, "/usr/sbin/mariadbd (MariaDB 10.11.") {
		t.Errorf("found: %s", d)
	}
}

// A program that prints no MariaDB version, with no client beside it, is
// refused naming it.
func TestProbeNoVersion(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "mariadb-binlog")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'mariadb-binlog Ver 3.5'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Probe(context.Background(), Candidate{Path: fake})
	if err == nil || !strings.Contains(err.Error(), fake) || !strings.Contains(err.Error(), "names no MariaDB version") {
		t.Errorf("Probe of a program without a version: %v", err)
	}
}
