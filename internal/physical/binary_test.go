package physical

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindBinary(t *testing.T) {
	if _, err := exec.LookPath("mariabackup"); err != nil {
		t.Fatalf("mariabackup not installed (scripts/deps.sh installs it): %v", err)
	}
	ctx := context.Background()
	b, err := FindBinary(ctx, "", 10, 11)
	if err != nil {
		t.Fatalf("FindBinary 10.11: %v", err)
	}
	if b.Major != 10 || b.Minor != 11 || !strings.HasPrefix(b.Version, "10.11.") || filepath.Base(b.Path) != "mariabackup" {
		t.Errorf("FindBinary 10.11 = %+v", b)
	}
	if _, err := os.Stat(b.Path); err != nil {
		t.Errorf("path %s: %v", b.Path, err)
	}

	explicit, err := FindBinary(ctx, "/usr/bin/mariadb-backup", 10, 11)
	if err != nil || explicit.Path != "/usr/bin/mariadb-backup" || explicit.Version != b.Version {
		t.Errorf("explicit path: %+v, %v", explicit, err)
	}

	for _, v := range [][2]int{{10, 6}, {11, 4}} {
		_, err := FindBinary(ctx, "", v[0], v[1])
		if err == nil {
			t.Fatalf("FindBinary %d.%d accepted a 10.11 mariabackup", v[0], v[1])
		}
		want := []string{b.Version, filepath.Join(filepath.Dir(b.Path), "mariabackup "),
			filepath.Join(filepath.Dir(b.Path), "mariadb-backup "), "--mariabackup PATH",
			fmt.Sprintf("MariaDB %d.%d", v[0], v[1])}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%d.%d: error lacks %q: %v", v[0], v[1], w, err)
			}
		}
		_, err = FindBinary(ctx, "/usr/bin/mariabackup", v[0], v[1])
		if err == nil || !strings.Contains(err.Error(), "/usr/bin/mariabackup") || !strings.Contains(err.Error(), b.Version) || !strings.Contains(err.Error(), "--mariabackup PATH") {
			t.Errorf("explicit %d.%d: %v", v[0], v[1], err)
		}
	}
	t.Logf("mismatch message: %v", func() error { _, err := FindBinary(ctx, "", 10, 6); return err }())
}

func TestFindBinaryMissing(t *testing.T) {
	ctx := context.Background()
	_, err := FindBinary(ctx, filepath.Join(t.TempDir(), "no-such-mariabackup"), 10, 11)
	if err == nil || !strings.Contains(err.Error(), "no-such-mariabackup") || !strings.Contains(err.Error(), "--mariabackup") {
		t.Errorf("missing explicit path: %v", err)
	}

	t.Setenv("PATH", t.TempDir())
	_, err = FindBinary(ctx, "", 10, 11)
	if err == nil {
		t.Fatal("found a mariabackup in an empty PATH")
	}
	for _, w := range []string{"mariadb-backup package", "mariabackup and mariadb-backup", "10.11", "--mariabackup PATH"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q: %v", w, err)
		}
	}

	// Something that runs but is not mariabackup.
	fake := filepath.Join(t.TempDir(), "fake")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = FindBinary(ctx, fake, 10, 11)
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
