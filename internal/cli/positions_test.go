package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// A manifest's positions are covered by its checksum and checked against
// the backup's meta objects: a flipped digit of to_lsn in a stored
// manifest is damage that list names and restore refuses (exit 3), other
// backups unaffected; a manifest written consistently but with a to_lsn
// its xtrabackup_checkpoints does not say (a buggy writer) is refused by
// restore, of it or of an incremental on it, and by a new incremental on
// it, naming both values, before anything is written; and mariabackup
// results that disagree with each other are never committed.
func TestManifestPositionsChecked(t *testing.T) {
	t.Parallel()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1}); err != nil {
		t.Fatal(err)
	}
	repoDir := newRepoDir(t)
	backup := func(extra ...string) result {
		return run(t, append(append([]string{"backup", "--repo", repoDir, "--parallel", "2"}, extra...), sandboxConn(src)...)...)
	}
	backup().mustSucceed(t)
	backup("--incremental").mustSucceed(t)
	backup().mustSucceed(t)
	// Ids taken within one second sort by their random suffix: tell the
	// backups apart by their parents.
	var full, inc, other string
	entries := backupListing(t, repoDir)
	for _, e := range entries {
		if e.Parent != "" {
			full, inc = e.Parent, e.ID
		}
	}
	for _, e := range entries {
		if e.ID != full && e.ID != inc {
			other = e.ID
		}
	}
	if len(entries) != 3 || inc == "" || other == "" {
		t.Fatalf("backups %+v; want a full, an incremental on it and a full", entries)
	}
	manifestOf := func(id string) string { return filepath.Join(repoDir, "backups", id, "manifest.json") }
	original := map[string][]byte{}
	for _, id := range []string{full, inc, other} {
		b, err := os.ReadFile(manifestOf(id))
		if err != nil {
			t.Fatal(err)
		}
		original[id] = b
	}
	restoreRefused := func(what string, want ...string) {
		t.Helper()
		target := filepath.Join(t.TempDir(), "target")
		r := run(t, "restore", what, "--repo", repoDir, "--target-dir", target, "--prepare")
		if r.code != ExitCorrupt {
			t.Errorf("restore %s: exit %d (%v), want %d", what, r.code, r.err, ExitCorrupt)
		}
		for _, w := range want {
			if r.err == nil || !strings.Contains(r.err.Error(), w) {
				t.Errorf("restore %s: %v; want it to name %q", what, r.err, w)
			}
		}
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Errorf("restore %s refused, but created its target: %v", what, err)
		}
	}

	t.Run("flipped digit", func(t *testing.T) {
		toLSN := regexp.MustCompile(`"to_lsn": \d*(\d)`)
		m := toLSN.FindSubmatchIndex(original[full])
		if m == nil {
			t.Fatalf("no to_lsn in %s", original[full])
		}
		flipped := append([]byte(nil), original[full]...)
		flipped[m[2]] = "12345678901"[flipped[m[2]]-'0']
		writeFile(t, manifestOf(full), flipped)
		defer writeFile(t, manifestOf(full), original[full])

		r := run(t, "list", "--repo", repoDir).mustSucceed(t)
		if !regexp.MustCompile(full + `\s+DAMAGED`).MatchString(r.stdout) {
			t.Errorf("list does not show %s as damaged:\n%s", full, r.stdout)
		}
		if !strings.Contains(r.stderr, "checksum") {
			t.Errorf("list does not say the checksum does not match: %s", r.stderr)
		}
		restoreRefused(full, full, "checksum")
		run(t, "verify", other, "--repo", repoDir).mustSucceed(t)
	})

	t.Run("buggy writer", func(t *testing.T) {
		m, err := archive.ParseManifest(original[full])
		if err != nil {
			t.Fatal(err)
		}
		stored := m.Positions.ToLSN
		m.Positions.ToLSN++
		data, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, manifestOf(full), data)
		defer writeFile(t, manifestOf(full), original[full])
		run(t, "list", "--repo", repoDir).mustSucceed(t) // the manifest itself is whole

		values := []string{"xtrabackup_checkpoints says to_lsn " + strconv.FormatUint(stored, 10), "the manifest " + strconv.FormatUint(stored+1, 10)}
		restoreRefused(full, append(values, full)...)
		restoreRefused(inc, append(values, full)...)

		// An incremental is not built on it: no backup is added.
		r := backup("--incremental", "--parent", full)
		if r.code != ExitCorrupt || r.err == nil || !strings.Contains(r.err.Error(), values[0]) || !strings.Contains(r.err.Error(), values[1]) {
			t.Errorf("incremental on %s: exit %d (%v); want %d naming both to_lsn", full, r.code, r.err, ExitCorrupt)
		}
		if n := len(backupListing(t, repoDir)); n != 3 {
			t.Errorf("%d backups after a refused incremental, want 3", n)
		}
	})

	// A mariabackup whose extra-lsndir checkpoints disagree with the
	// copy in its stream: the wrapper runs the real one and then edits
	// to_lsn in the lsndir.
	t.Run("commit refused", func(t *testing.T) {
		real, err := exec.LookPath("mariabackup")
		if err != nil {
			t.Fatalf("mariabackup not installed (scripts/deps.sh installs it): %v", err)
		}
		wrapper := filepath.Join(t.TempDir(), "mariabackup")
		writeFile(t, wrapper, []byte(`#!/bin/sh
for a in "$@"; do
  case "$a" in --extra-lsndir=*) LSNDIR="${a#--extra-lsndir=}";; esac
done
`+real+` "$@" || exit $?
[ -n "$LSNDIR" ] && sed -i 's/^to_lsn = \([0-9]*\)$/to_lsn = \17/' "$LSNDIR"/*_checkpoints
exit 0
`))
		if err := os.Chmod(wrapper, 0o755); err != nil {
			t.Fatal(err)
		}
		r := backup("--mariabackup", wrapper)
		if r.code == ExitOK || r.err == nil || !strings.Contains(r.err.Error(), "says to_lsn") || !strings.Contains(r.err.Error(), "the manifest") {
			t.Errorf("backup with disagreeing checkpoints: exit %d (%v); want refused naming both to_lsn", r.code, r.err)
		}
		if n := len(backupListing(t, repoDir)); n != 3 {
			t.Errorf("%d backups after a refused backup, want 3", n)
		}
		dirs, _ := os.ReadDir(filepath.Join(repoDir, "backups"))
		if len(dirs) != 3 {
			t.Errorf("%d backup directories after a refused backup, want 3 (it is discarded)", len(dirs))
		}
	})

	// Untouched, every backup restores; the chain too.
	run(t, "restore", inc, "--repo", repoDir, "--target-dir", filepath.Join(t.TempDir(), "ok"), "--prepare").mustSucceed(t)
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A backup into an encrypted repository is given public keys only: it
// cannot read its parent's encrypted meta objects, and still takes the
// incremental (restore, which has the key, checks the positions).
func TestEncryptedIncrementalWithoutKey(t *testing.T) {
	t.Parallel()
	src := sandboxtest.Start(t, sandbox.Options{})
	pub, key := usecasetest.AgeKeys(t)
	repoDir := newRepoDir(t)
	backup := func(extra ...string) result {
		return run(t, append(append([]string{"backup", "--repo", repoDir, "--encrypt", "--recipient-file", pub}, extra...), sandboxConn(src)...)...).mustSucceed(t)
	}
	backup()
	if r := backup("--incremental"); !strings.Contains(r.stdout, "depth 1") {
		t.Errorf("incremental in an encrypted repository without a key: %q, want depth 1", r.stdout)
	}
	run(t, "restore", "--repo", repoDir, "--identity-file", key, "--target-dir", filepath.Join(t.TempDir(), "target"), "--prepare").mustSucceed(t)
}
