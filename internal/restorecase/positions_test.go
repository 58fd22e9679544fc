package restorecase_test

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
	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// A manifest's positions are covered by its checksum and checked against
// the backup's meta objects: a flipped digit of to_lsn in a stored
// manifest is damage that list names and restore refuses (corruption,
// exit 3), other backups unaffected; a manifest written consistently but
// with a to_lsn its xtrabackup_checkpoints does not say (a buggy writer)
// is refused by restore, of it or of an incremental on it, and by a new
// incremental on it, naming both values, before anything is written; and
// mariabackup results that disagree with each other are never committed.
func TestManifestPositionsChecked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 1}); err != nil {
		t.Fatal(err)
	}
	r := usecasetest.NewLocalRepo(t)
	// take is `backup`, with --incremental when inc is set (its parent,
	// --parent, if named), with --mariabackup when mariabackup is given.
	take := func(inc *backup.Incremental, mariabackup string) (*backup.Result, error) {
		req := usecasetest.BackupOf(t, r, src)
		req.Physical.Incremental, req.Physical.Mariabackup = inc, mariabackup
		return backup.Run(ctx, req)
	}
	for _, inc := range []*backup.Incremental{nil, {}, nil} {
		if _, err := take(inc, ""); err != nil {
			t.Fatalf("backup: %v", err)
		}
	}
	// Ids taken within one second sort by their random suffix: tell the
	// backups apart by their parents.
	var full, inc, other string
	entries := usecasetest.List(t, r)
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
	manifestOf := func(id string) string { return filepath.Join(r.Location, "backups", id, "manifest.json") }
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
		req := usecasetest.RestoreOf(r, what)
		req.Restore.TargetDir, req.Restore.Options.Prepare = target, true
		_, err := restorecase.Run(ctx, req)
		if !archive.IsCorrupt(err) {
			t.Errorf("restore %s: %v, want corruption", what, err)
		}
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("restore %s: %v; want it to name %q", what, err, w)
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

		// list shows it DAMAGED, and warns why: its checksum.
		var damaged inventory.Backup
		for _, e := range usecasetest.List(t, r) {
			if e.ID == full {
				damaged = e
			}
		}
		if !damaged.Damaged {
			t.Errorf("list does not show %s as damaged: %+v", full, damaged)
		}
		if !strings.Contains(damaged.Damage, "checksum") {
			t.Errorf("list does not say the checksum does not match: %q", damaged.Damage)
		}
		restoreRefused(full, full, "checksum")
		if err := usecasetest.Verify(t, r, other); err != nil {
			t.Errorf("verify %s: %v", other, err)
		}
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
		for _, e := range usecasetest.List(t, r) { // the manifest itself is whole
			if e.Damaged {
				t.Errorf("list shows %s as damaged: %s", e.ID, e.Damage)
			}
		}

		values := []string{"xtrabackup_checkpoints says to_lsn " + strconv.FormatUint(stored, 10), "the manifest " + strconv.FormatUint(stored+1, 10)}
		restoreRefused(full, append(values, full)...)
		restoreRefused(inc, append(values, full)...)

		// An incremental is not built on it: no backup is added.
		_, err = take(&backup.Incremental{Parent: full}, "")
		if !archive.IsCorrupt(err) || !strings.Contains(err.Error(), values[0]) || !strings.Contains(err.Error(), values[1]) {
			t.Errorf("incremental on %s: %v; want corruption naming both to_lsn", full, err)
		}
		if n := len(usecasetest.List(t, r)); n != 3 {
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
		_, err = take(nil, wrapper)
		if err == nil || !strings.Contains(err.Error(), "says to_lsn") || !strings.Contains(err.Error(), "the manifest") {
			t.Errorf("backup with disagreeing checkpoints: %v; want refused naming both to_lsn", err)
		}
		if n := len(usecasetest.List(t, r)); n != 3 {
			t.Errorf("%d backups after a refused backup, want 3", n)
		}
		dirs, _ := os.ReadDir(filepath.Join(r.Location, "backups"))
		if len(dirs) != 3 {
			t.Errorf("%d backup directories after a refused backup, want 3 (it is discarded)", len(dirs))
		}
	})

	// Untouched, every backup restores; the chain too.
	req := usecasetest.RestoreOf(r, inc)
	req.Restore.TargetDir, req.Restore.Options.Prepare = filepath.Join(t.TempDir(), "ok"), true
	usecasetest.Restore(t, req)
}

// writeFile writes data as the file name, failing the test if it cannot.
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
	r := usecasetest.NewLocalRepo(t)
	usecasetest.Backup(t, usecasetest.EncryptedBackupOf(t, r, src, pub))
	req := usecasetest.EncryptedBackupOf(t, r, src, pub)
	req.Physical.Incremental = &backup.Incremental{}
	if m := usecasetest.Backup(t, req).Manifest; m.Depth != 1 || m.Parent == "" {
		t.Errorf("incremental in an encrypted repository without a key: parent %q, depth %d; want depth 1", m.Parent, m.Depth)
	}
	restore := usecasetest.RestoreOf(r, "")
	restore.Deferred.Open = r.AccessWith(repoaccess.KeyFiles{IdentityFile: key}).Open
	restore.Restore.TargetDir, restore.Restore.Options.Prepare = filepath.Join(t.TempDir(), "target"), true
	usecasetest.Restore(t, restore)
}
