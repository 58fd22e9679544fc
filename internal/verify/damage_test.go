package verify_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/retention"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/usecasetest"
	"github.com/backstream/backstream/internal/verify"
)

// restoreWith is `restore ID --target-dir` of a new directory, reading r
// with the key files keys; it returns the error.
func restoreWith(t *testing.T, r usecasetest.Repo, keys repoaccess.KeyFiles, id string) error {
	t.Helper()
	req := usecasetest.RestoreOf(r, id)
	req.Deferred.Open = r.AccessWith(keys).Open
	req.Restore.TargetDir = filepath.Join(t.TempDir(), "target")
	_, err := restorecase.Run(context.Background(), req)
	return err
}

// A truncated manifest affects only its own backup (the repository's own
// side is internal/repo's TestDamagedManifestIsContained): list names it as
// damaged, a new incremental builds on the backup before it, verify and
// restore of it fail as damage (exit 3) naming it, and expire deletes
// nothing because of it, nor it.
func TestDamagedManifestIsContainedInEveryUseCase(t *testing.T) {
	t.Parallel()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1}); err != nil {
		t.Fatal(err)
	}
	usecasetest.ForEachBackend(t, func(t *testing.T, repo usecasetest.Repo) {
		// take is `backup --parallel 2`, with --incremental if asked; it
		// returns the new backup's id, which list must show.
		take := func(incremental bool) string {
			t.Helper()
			req := usecasetest.BackupOf(t, repo, src)
			if incremental {
				req.Physical.Incremental = &backup.Incremental{}
			}
			id := usecasetest.Backup(t, req).Manifest.ID
			for _, e := range usecasetest.List(t, repo) {
				if e.ID == id {
					return id
				}
			}
			t.Fatalf("the backup %s is not listed", id)
			return ""
		}
		full := take(false)
		damaged := take(true)
		manifest := "backups/" + damaged + "/manifest.json"
		data := repo.Read(t, manifest)
		repo.Write(t, manifest, data[:len(data)/2])

		// list shows the damaged one (DAMAGED, and the reason on stderr,
		// are printed from Damaged and Damage) next to the full.
		var sawDamaged, sawFull bool
		for _, e := range usecasetest.List(t, repo) {
			switch {
			case e.ID == damaged:
				sawDamaged = e.Damaged && strings.Contains(e.Damage, manifest)
			case e.Damaged:
				t.Errorf("list: %s is marked damaged", e.ID)
			case e.ID == full:
				sawFull = true
			}
		}
		if !sawDamaged || !sawFull {
			t.Errorf("list does not show %s as damaged naming %s (%v), next to %s (%v)", damaged, manifest, sawDamaged, full, sawFull)
		}

		// A new incremental skips the damaged backup and builds on the full.
		next := take(true)
		for _, e := range usecasetest.List(t, repo) {
			if e.ID == next && e.Parent != full {
				t.Errorf("the new incremental %s builds on %q, want %s", next, e.Parent, full)
			}
		}

		for what, err := range map[string]error{
			"verify":  usecasetest.Verify(t, repo, damaged),
			"restore": restoreWith(t, repo, repoaccess.KeyFiles{}, damaged),
		} {
			if !usecasetest.Corrupt(err) || !strings.Contains(err.Error(), manifest) {
				t.Errorf("%s of the damaged backup: %v; want damage (exit 3) naming %s", what, err, manifest)
			}
		}
		// latest is the newest undamaged backup.
		var quiet usecasetest.Said
		if res, err := verify.Locked(context.Background(), repo.Access(), "latest", "", verify.Request{}, quiet.Tracker); err != nil || res.Backup.ID != next {
			t.Errorf("verify latest: %+v, %v; want %s verified", res, err, next)
		}

		plan, err := usecasetest.Expire(t, repo, retention.Request{Policy: retention.Policy{KeepLast: 1}, PruneIncomplete: true, Confirm: true})
		if err != nil {
			t.Fatalf("expire --keep-last 1 --prune-incomplete --confirm: %v", err)
		}
		kept := false
		for _, e := range plan.Entries {
			if e.ID == damaged {
				kept = e.Keep && !e.Deleted && slices.ContainsFunc(e.Reasons, func(r string) bool { return strings.Contains(r, "damaged manifest") })
			}
		}
		if !kept {
			t.Errorf("expire's plan does not keep %s for its damaged manifest: %+v", damaged, plan.Entries)
		}
		if got := repo.Read(t, manifest); len(got) != len(data)/2 {
			t.Errorf("expire changed the damaged manifest")
		}
		left := map[string]bool{}
		for _, e := range usecasetest.List(t, repo) {
			left[e.ID] = true
		}
		if len(left) != 3 || !left[full] || !left[damaged] || !left[next] {
			t.Errorf("after expire: %v; want %s, %s and %s", left, full, damaged, next)
		}
	})
}

// In an encrypted repository a flipped byte in an .age stream object is
// damage (exit 3) naming the object, not a wrong key; a missing stream
// object or frame index is damage naming it too.
func TestEncryptedDamageIsNamed(t *testing.T) {
	t.Parallel()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1}); err != nil {
		t.Fatal(err)
	}
	pub, key := usecasetest.AgeKeys(t)
	usecasetest.ForEachBackend(t, func(t *testing.T, repo usecasetest.Repo) {
		id := usecasetest.Backup(t, usecasetest.EncryptedBackupOf(t, repo, src, pub)).Manifest.ID
		stream := "backups/" + id + "/streams/00000.xbs.zst.age"
		index := "backups/" + id + "/streams/00000.idx.age"
		original := repo.Read(t, stream)
		originalIndex := repo.Read(t, index)
		withKey := repo.AccessWith(repoaccess.KeyFiles{IdentityFile: key})
		check := func(what, object string) {
			t.Helper()
			err := usecasetest.VerifyWith(t, withKey, id)
			if !usecasetest.Corrupt(err) || !strings.Contains(err.Error(), object) || strings.Contains(err.Error(), "wrong key") {
				t.Errorf("verify with %s: %v; want damage (exit 3) naming %s, not a wrong key", what, err, object)
			}
		}

		damaged := bytes.Clone(original)
		damaged[len(damaged)/2] ^= 1
		repo.Write(t, stream, damaged)
		check("a flipped byte in the stream object", stream)
		if err := repo.Backend.Delete(context.Background(), stream); err != nil {
			t.Fatal(err)
		}
		check("the stream object missing", "streams/00000.xbs.zst")
		repo.Write(t, stream, original)

		if err := repo.Backend.Delete(context.Background(), index); err != nil {
			t.Fatal(err)
		}
		check("the frame index missing", "streams/00000.idx")
		repo.Write(t, index, originalIndex)
		if err := usecasetest.VerifyWith(t, withKey, id); err != nil {
			t.Fatalf("verify of the repaired backup: %v", err)
		}
	})
}

// A flipped byte in the recipient stanza of an .age object's header makes
// the key that the backup was encrypted to fail to open it, which age
// alone cannot tell from a wrong key. The manifest names the recipients:
// with a key among them (an identity file, or the passphrase's key) it is
// damage (exit 3) naming the object; with another key, a wrong key.
func TestDamagedRecipientStanzaIsDamage(t *testing.T) {
	t.Parallel()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1}); err != nil {
		t.Fatal(err)
	}
	pub, key := usecasetest.AgeKeys(t)
	_, otherKey := usecasetest.AgeKeys(t)
	pass, wrongPass := filepath.Join(t.TempDir(), "pass"), filepath.Join(t.TempDir(), "wrong-pass")
	os.WriteFile(pass, []byte("correct horse battery staple\n"), 0o600)
	os.WriteFile(wrongPass, []byte("wrong horse battery staple\n"), 0o600)
	usecasetest.ForEachBackend(t, func(t *testing.T, repo usecasetest.Repo) {
		for _, c := range []struct {
			name                  string
			encrypt, right, wrong repoaccess.KeyFiles
		}{
			{"identity file", repoaccess.KeyFiles{RecipientFile: pub}, repoaccess.KeyFiles{IdentityFile: key}, repoaccess.KeyFiles{IdentityFile: otherKey}},
			{"passphrase", repoaccess.KeyFiles{PassphraseFile: pass}, repoaccess.KeyFiles{PassphraseFile: pass}, repoaccess.KeyFiles{PassphraseFile: wrongPass}},
		} {
			// `backup --encrypt` with the key files c.encrypt.
			id := usecasetest.Backup(t, usecasetest.Encrypted(t, repo, usecasetest.BackupOf(t, repo, src), c.encrypt)).Manifest.ID
			stream := "backups/" + id + "/streams/00000.xbs.zst.age"
			index := "backups/" + id + "/streams/00000.idx.age"
			wantDamage := func(what, object string, err error) {
				t.Helper()
				if !usecasetest.Corrupt(err) || !strings.Contains(err.Error(), object) || strings.Contains(err.Error(), "wrong key") {
					t.Errorf("%s: %s with a flipped byte in the stanza of %s: %v; want damage (exit 3) naming it, not a wrong key", c.name, what, object, err)
				}
			}

			original := repo.Read(t, stream)
			repo.Write(t, stream, testkit.FlipInAgeStanza(t, original))
			wantDamage("verify", stream, usecasetest.VerifyWith(t, repo.AccessWith(c.right), id))
			wantDamage("restore", stream, restoreWith(t, repo, c.right, id))
			repo.Write(t, stream, original)

			original = repo.Read(t, index)
			repo.Write(t, index, testkit.FlipInAgeStanza(t, original))
			wantDamage("verify", index, usecasetest.VerifyWith(t, repo.AccessWith(c.right), id))
			if err := usecasetest.VerifyWith(t, repo.AccessWith(c.wrong), id); usecasetest.Corrupt(err) || err == nil || !strings.Contains(err.Error(), "wrong key") {
				t.Errorf("%s: verify with another key: %v; want a wrong key, not damage", c.name, err)
			}
			repo.Write(t, index, original)
			if err := usecasetest.VerifyWith(t, repo.AccessWith(c.right), id); err != nil {
				t.Fatalf("%s: verify of the repaired backup: %v", c.name, err)
			}
		}
	})
}
