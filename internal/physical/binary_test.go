package physical

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/toolpath"
)

func TestFindBinary(t *testing.T) {
	if _, err := exec.LookPath("mariabackup"); err != nil {
		t.Fatalf("mariabackup not installed (scripts/deps.sh installs it): %v", err)
	}
	ctx := context.Background()
	b, err := FindBinary(ctx, "", nil, 10, 11, ForServer)
	if err != nil {
		t.Fatalf("FindBinary 10.11: %v", err)
	}
	if b.Major != 10 || b.Minor != 11 || !strings.HasPrefix(b.Version, "10.11.") || filepath.Base(b.Path) != "mariabackup" {
		t.Errorf("FindBinary 10.11 = %+v", b)
	}
	if _, err := os.Stat(b.Path); err != nil {
		t.Errorf("path %s: %v", b.Path, err)
	}

	explicit, err := FindBinary(ctx, "/usr/bin/mariadb-backup", nil, 10, 11, ForServer)
	if err != nil || explicit.Path != "/usr/bin/mariadb-backup" || explicit.Version != b.Version {
		t.Errorf("explicit path: %+v, %v", explicit, err)
	}

	for _, v := range [][2]int{{10, 6}, {11, 4}} {
		_, err := FindBinary(ctx, "", nil, v[0], v[1], ForServer)
		if err == nil {
			t.Fatalf("FindBinary %d.%d accepted a 10.11 mariabackup", v[0], v[1])
		}
		// mariabackup is a link to mariadb-backup: one program, named once.
		want := []string{b.Version, filepath.Join(filepath.Dir(b.Path), "mariabackup "), "--mariabackup PATH", "--mariadb-path",
			fmt.Sprintf("MariaDB %d.%d", v[0], v[1])}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%d.%d: error lacks %q: %v", v[0], v[1], w, err)
			}
		}
		_, err = FindBinary(ctx, "/usr/bin/mariabackup", nil, v[0], v[1], ForServer)
		if err == nil || !strings.Contains(err.Error(), "/usr/bin/mariabackup") || !strings.Contains(err.Error(), b.Version) || !strings.Contains(err.Error(), "--mariabackup PATH") {
			t.Errorf("explicit %d.%d: %v", v[0], v[1], err)
		}
	}
	t.Logf("mismatch message: %v", func() error { _, err := FindBinary(ctx, "", nil, 10, 6, ForServer); return err }())
}

// TestFindBinaryPath picks by version among the installations of
// scripts/versions.sh on the search path and the host's in PATH, and
// refuses a version none of them is, naming each and the option.
func TestFindBinaryPath(t *testing.T) {
	ctx := context.Background()
	b105, b118 := sandboxtest.Basedir(t, "10.5"), sandboxtest.Basedir(t, "11.8")
	path := toolpath.Path{b118, filepath.Join(b105, "bin")} // a basedir and a bin directory
	for _, c := range []struct {
		major, minor int
		dir          string
	}{{10, 5, filepath.Join(b105, "bin")}, {11, 8, filepath.Join(b118, "bin")}, {10, 11, "/usr/bin"}} {
		b, err := FindBinary(ctx, "", path, c.major, c.minor, ForBackup)
		if err != nil {
			t.Fatalf("%d.%d: %v", c.major, c.minor, err)
		}
		if filepath.Dir(b.Path) != c.dir || b.Major != c.major || b.Minor != c.minor {
			t.Errorf("%d.%d: got %+v, want one in %s", c.major, c.minor, b, c.dir)
		}
	}
	_, err := FindBinary(ctx, "", path, 10, 6, ForBackup)
	for _, w := range []string{"the backup is MariaDB 10.6", filepath.Join(b118, "bin", "mariabackup"), filepath.Join(b105, "bin", "mariabackup"),
		"/usr/bin/mariabackup", "11.8.", "10.5.", "--mariadb-path DIR", "mariadb-path", "BACKSTREAM_MARIADB_PATH", "--mariabackup PATH"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("10.6 not found: error lacks %q: %v", w, err)
		}
	}
	// --mariabackup wins over the path, and is checked the same.
	if _, err := FindBinary(ctx, "/usr/bin/mariabackup", path, 11, 8, ForBackup); err == nil || !strings.Contains(err.Error(), "the backup is MariaDB 11.8") {
		t.Errorf("explicit 10.11 for an 11.8 backup: %v", err)
	}
}

func TestFindBinaryMissing(t *testing.T) {
	ctx := context.Background()
	_, err := FindBinary(ctx, filepath.Join(t.TempDir(), "no-such-mariabackup"), nil, 10, 11, ForServer)
	if err == nil || !strings.Contains(err.Error(), "no-such-mariabackup") || !strings.Contains(err.Error(), "--mariabackup") {
		t.Errorf("missing explicit path: %v", err)
	}

	t.Setenv("PATH", t.TempDir())
	_, err = FindBinary(ctx, "", nil, 10, 11, ForServer)
	if err == nil {
		t.Fatal("found a mariabackup in an empty PATH")
	}
	for _, w := range []string{"mariadb-backup package", "mariabackup and mariadb-backup", "10.11", "--mariadb-path"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q: %v", w, err)
		}
	}

	// Something that runs but is not mariabackup.
	fake := filepath.Join(t.TempDir(), "fake")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = FindBinary(ctx, fake, nil, 10, 11, ForServer)
	if err == nil || !strings.Contains(err.Error(), "based on MariaDB server") {
		t.Errorf("fake binary: %v", err)
	}
}

func TestParseVersionOutput(t *testing.T) {
	cases := []struct {
		out          string
		version      string
		major, minor int
		bad          bool
	}{
		{out: "mariabackup based on MariaDB server 10.11.19-MariaDB debian-linux-gnu (x86_64)\n", version: "10.11.19-MariaDB", major: 10, minor: 11},
		{out: "mariadb-backup based on MariaDB server 11.4.3-MariaDB Linux (x86_64)", version: "11.4.3-MariaDB", major: 11, minor: 4},
		{out: "warning: something\nmariabackup based on MariaDB server 10.6.18-MariaDB Linux (x86_64)\n", version: "10.6.18-MariaDB", major: 10, minor: 6},
		{out: "mariabackup version 2.4 based on MySQL server 5.7", bad: true},
		{out: "", bad: true},
		{out: "mariabackup based on MariaDB server garbage", bad: true},
	}
	for _, c := range cases {
		b, err := parseVersionOutput(c.out)
		if c.bad {
			if err == nil {
				t.Errorf("%q: accepted as %+v", c.out, b)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.out, err)
			continue
		}
		if b.Version != c.version || b.Major != c.major || b.Minor != c.minor {
			t.Errorf("%q: got %+v", c.out, b)
		}
	}
}
