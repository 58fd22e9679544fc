package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/usecasetest"
	"github.com/backstream/backstream/internal/xbstream"
)

// A truncated manifest affects only its own backup: list names it as
// damaged, a new incremental builds on the backup before it, verify and
// restore of it exit 3 naming it, and expire deletes nothing because of
// it, nor it.
func TestDamagedManifestIsContained(t *testing.T) {
	t.Parallel()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1}); err != nil {
		t.Fatal(err)
	}
	forEachBackend(t, func(t *testing.T, repo testRepo) {
		before := map[string]bool{}
		backup := func(extra ...string) string {
			t.Helper()
			run(t, append(append([]string{"backup", "--repo", repo.Location, "--parallel", "2"}, extra...), sandboxConn(src)...)...).mustSucceed(t)
			for _, e := range backupListing(t, repo.Location) {
				if !before[e.ID] {
					before[e.ID] = true
					return e.ID
				}
			}
			t.Fatal("the backup is not listed")
			return ""
		}
		full := backup()
		damaged := backup("--incremental")
		manifest := "backups/" + damaged + "/manifest.json"
		data := repo.Read(t, manifest)
		repo.Write(t, manifest, data[:len(data)/2])

		r := run(t, "list", "--repo", repo.Location).mustSucceed(t)
		if !strings.Contains(r.stdout, damaged) || !strings.Contains(r.stdout, "DAMAGED") || !strings.Contains(r.stdout, full) {
			t.Errorf("list does not show %s as damaged next to %s:\n%s", damaged, full, r.stdout)
		}
		if !strings.Contains(r.stderr, manifest) {
			t.Errorf("list does not name %s: %s", manifest, r.stderr)
		}
		var sawDamaged bool
		for _, e := range backupListing(t, repo.Location) {
			if e.ID == damaged {
				sawDamaged = e.Damaged && strings.Contains(e.Damage, manifest)
			} else if e.Damaged {
				t.Errorf("list --json: %s is marked damaged", e.ID)
			}
		}
		if !sawDamaged {
			t.Errorf("list --json does not mark %s damaged with the reason", damaged)
		}

		// A new incremental skips the damaged backup and builds on the full.
		next := backup("--incremental")
		for _, e := range backupListing(t, repo.Location) {
			if e.ID == next && e.Parent != full {
				t.Errorf("the new incremental %s builds on %q, want %s", next, e.Parent, full)
			}
		}

		for _, cmd := range [][]string{
			{"verify", damaged, "--repo", repo.Location},
			{"restore", damaged, "--repo", repo.Location, "--target-dir", filepath.Join(t.TempDir(), "target")},
		} {
			r := run(t, cmd...)
			if r.code != ExitCorrupt || r.err == nil || !strings.Contains(r.err.Error(), manifest) {
				t.Errorf("%s of the damaged backup: exit %d (%v); want %d naming %s", cmd[0], r.code, r.err, ExitCorrupt, manifest)
			}
		}
		// latest is the newest undamaged backup.
		if r := run(t, "verify", "--repo", repo.Location).mustSucceed(t); !strings.Contains(r.stdout, next) {
			t.Errorf("verify latest did not verify %s: %s", next, r.stdout)
		}

		r = run(t, "expire", "--repo", repo.Location, "--keep-last", "1", "--prune-incomplete", "--confirm").mustSucceed(t)
		if !strings.Contains(r.stdout, damaged) || !strings.Contains(r.stdout, "damaged manifest") {
			t.Errorf("expire's plan does not say why %s is kept:\n%s", damaged, r.stdout)
		}
		if got := repo.Read(t, manifest); len(got) != len(data)/2 {
			t.Errorf("expire changed the damaged manifest")
		}
		left := map[string]bool{}
		for _, e := range backupListing(t, repo.Location) {
			left[e.ID] = true
		}
		if len(left) != 3 || !left[full] || !left[damaged] || !left[next] {
			t.Errorf("after expire: %v; want %s, %s and %s", left, full, damaged, next)
		}
	})
}

// In an encrypted repository a flipped byte in an .age stream object is
// damage (exit 3) naming the object, not a wrong key; a missing stream
// object or frame index is exit 3 naming it too.
func TestEncryptedDamageIsNamed(t *testing.T) {
	t.Parallel()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1}); err != nil {
		t.Fatal(err)
	}
	pub, key := usecasetest.AgeKeys(t)
	forEachBackend(t, func(t *testing.T, repo testRepo) {
		run(t, append([]string{"backup", "--repo", repo.Location, "--parallel", "2", "--encrypt", "--recipient-file", pub}, sandboxConn(src)...)...).mustSucceed(t)
		id := backupListing(t, repo.Location)[0].ID
		stream := "backups/" + id + "/streams/00000.xbs.zst.age"
		index := "backups/" + id + "/streams/00000.idx.age"
		original := repo.Read(t, stream)
		originalIndex := repo.Read(t, index)
		verify := func(what, object string) {
			t.Helper()
			r := run(t, "verify", id, "--repo", repo.Location, "--identity-file", key)
			if r.code != ExitCorrupt || r.err == nil || !strings.Contains(r.err.Error(), object) || strings.Contains(r.err.Error(), "wrong key") {
				t.Errorf("verify with %s: exit %d (%v); want %d naming %s, not a wrong key", what, r.code, r.err, ExitCorrupt, object)
			}
		}

		damaged := bytes.Clone(original)
		damaged[len(damaged)/2] ^= 1
		repo.Write(t, stream, damaged)
		verify("a flipped byte in the stream object", stream)
		if err := repo.Backend.Delete(context.Background(), stream); err != nil {
			t.Fatal(err)
		}
		verify("the stream object missing", "streams/00000.xbs.zst")
		repo.Write(t, stream, original)

		if err := repo.Backend.Delete(context.Background(), index); err != nil {
			t.Fatal(err)
		}
		verify("the frame index missing", "streams/00000.idx")
		repo.Write(t, index, originalIndex)
		run(t, "verify", id, "--repo", repo.Location, "--identity-file", key).mustSucceed(t)
	})
}

// cat of a backup with a flipped byte exits 3 naming the object and frame,
// and what it wrote before stopping holds only whole chunks that pass
// their checksums: the damaged chunk is never written.
func TestCatNeverWritesDamage(t *testing.T) {
	t.Parallel()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(context.Background(), src.DB(), sandbox.SampleOptions{Tables: 1}); err != nil {
		t.Fatal(err)
	}
	forEachBackend(t, func(t *testing.T, repo testRepo) {
		run(t, append([]string{"backup", "--repo", repo.Location, "--parallel", "2"}, sandboxConn(src)...)...).mustSucceed(t)
		id := backupListing(t, repo.Location)[0].ID
		object := "backups/" + id + "/streams/00000.xbs.zst"
		damaged := repo.Read(t, object)
		damaged[len(damaged)/2] ^= 1
		repo.Write(t, object, damaged)
		r := run(t, "cat", id, "--repo", repo.Location)
		if r.code != ExitCorrupt || r.err == nil || !strings.Contains(r.err.Error(), "00000.xbs.zst") || !strings.Contains(r.err.Error(), "frame") {
			t.Fatalf("cat of a damaged backup: exit %d (%v); want %d naming the object and frame", r.code, r.err, ExitCorrupt)
		}
		out := []byte(r.stdout)
		for len(out) > 0 {
			_, n, err := xbstream.DecodeChunk(out)
			if err != nil {
				if !strings.Contains(err.Error(), "truncated") {
					t.Fatalf("cat wrote a chunk that fails its checks: %v", err)
				}
				break // the output was cut at a buffer's end, mid-chunk
			}
			out = out[n:]
		}
	})
}

// A flipped byte in the recipient stanza of an .age object's header makes
// the key that the backup was encrypted to fail to open it, which age
// alone cannot tell from a wrong key. The manifest names the recipients:
// with a key among them (an identity file, or the passphrase's key) it is
// damage, exit 3 naming the object; with another key, a wrong key.
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
	forEachBackend(t, func(t *testing.T, repo testRepo) {
		seen := map[string]bool{}
		for _, c := range []struct {
			name           string
			encrypt, right []string
			wrong          []string
		}{
			{"identity file", []string{"--recipient-file", pub}, []string{"--identity-file", key}, []string{"--identity-file", otherKey}},
			{"passphrase", []string{"--passphrase-file", pass}, []string{"--passphrase-file", pass}, []string{"--passphrase-file", wrongPass}},
		} {
			run(t, append(append([]string{"backup", "--repo", repo.Location, "--encrypt"}, c.encrypt...), sandboxConn(src)...)...).mustSucceed(t)
			var id string
			for _, e := range backupListing(t, repo.Location) {
				if !seen[e.ID] {
					id, seen[e.ID] = e.ID, true
				}
			}
			stream := "backups/" + id + "/streams/00000.xbs.zst.age"
			index := "backups/" + id + "/streams/00000.idx.age"
			wantDamage := func(object string, args ...string) {
				t.Helper()
				r := run(t, append(append(args, "--repo", repo.Location), c.right...)...)
				if r.code != ExitCorrupt || r.err == nil || !strings.Contains(r.err.Error(), object) || strings.Contains(r.err.Error(), "wrong key") {
					t.Errorf("%s: %s with a flipped byte in the stanza of %s: exit %d (%v); want %d naming it, not a wrong key", c.name, args[0], object, r.code, r.err, ExitCorrupt)
				}
			}

			original := repo.Read(t, stream)
			repo.Write(t, stream, testkit.FlipInAgeStanza(t, original))
			wantDamage(stream, "verify", id)
			wantDamage(stream, "restore", id, "--target-dir", filepath.Join(t.TempDir(), "target"))
			repo.Write(t, stream, original)

			original = repo.Read(t, index)
			repo.Write(t, index, testkit.FlipInAgeStanza(t, original))
			wantDamage(index, "verify", id)
			r := run(t, append([]string{"verify", id, "--repo", repo.Location}, c.wrong...)...)
			if r.code == ExitCorrupt || r.err == nil || !strings.Contains(r.err.Error(), "wrong key") {
				t.Errorf("%s: verify with another key: exit %d (%v); want a wrong key", c.name, r.code, r.err)
			}
			repo.Write(t, index, original)
			run(t, append([]string{"verify", id, "--repo", repo.Location}, c.right...)...).mustSucceed(t)
		}
	})
}
