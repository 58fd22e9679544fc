package backup_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/storage/crypt"
	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/usecasetest"
)

// An encrypted physical backup on every backend: every data object is
// stored as .age, reading needs the key (refused without it or with
// another, before anything is written), the restore with it gives the
// source's checksums, and age -d | zstd -dc | mbstream -x restores the
// same files as backstream does.
func TestEncryptedPhysicalRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 2, BigTableMB: 8}); err != nil {
		t.Fatal(err)
	}
	want, err := sandbox.ChecksumTables(ctx, src.DB())
	if err != nil {
		t.Fatal(err)
	}
	pub, key := usecasetest.AgeKeys(t)
	_, otherKey := usecasetest.AgeKeys(t)
	usecasetest.ForEachBackend(t, func(t *testing.T, r usecasetest.Repo) {
		id := usecasetest.Backup(t, usecasetest.EncryptedBackupOf(t, r, src, pub)).Manifest.ID
		infos, err := r.Backend.List(ctx, "backups/"+id+"/")
		if err != nil {
			t.Fatal(err)
		}
		var streams []string
		for _, i := range infos {
			base := filepath.Base(i.Name)
			switch {
			case base == "manifest.json" || base == "begun.json":
			case !strings.HasSuffix(base, ".age"):
				t.Errorf("%s is stored unencrypted", i.Name)
			case strings.HasSuffix(base, ".xbs.zst.age"):
				streams = append(streams, i.Name)
			}
		}
		if m := string(r.Read(t, "backups/"+id+"/manifest.json")); !strings.Contains(m, `"scheme": "age"`) || !strings.Contains(m, "age1") {
			t.Errorf("the manifest does not record the encryption and its recipient")
		}

		// Without a key: the error the command adds the flags that give
		// one to (repoaccess.WithKeyHint).
		if err := usecasetest.Verify(t, r, "latest"); !errors.Is(err, crypt.ErrNoIdentity) || !strings.Contains(err.Error(), "no key was given") {
			t.Errorf("verify without a key: %v; want %v", err, crypt.ErrNoIdentity)
		}
		target := filepath.Join(t.TempDir(), "wrong")
		req := usecasetest.RestoreOf(r, "")
		req.Deferred.Open = r.AccessWith(repoaccess.KeyFiles{IdentityFile: otherKey}).Open
		req.Restore.TargetDir = target
		if _, err := restorecase.Run(ctx, req); err == nil || !strings.Contains(err.Error(), "cannot decrypt") || !strings.Contains(err.Error(), "is encrypted") {
			t.Errorf("restore with another key: %v", err)
		}
		if _, err := os.Stat(target); err == nil {
			t.Errorf("a restore with the wrong key left %s", target)
		}
		withKey := r.AccessWith(repoaccess.KeyFiles{IdentityFile: key})
		if err := usecasetest.VerifyWith(t, withKey, "latest"); err != nil {
			t.Errorf("verify with the key: %v", err)
		}

		plain := filepath.Join(t.TempDir(), "plain")
		req = usecasetest.RestoreOf(r, "")
		req.Deferred.Open = withKey.Open
		req.Restore.TargetDir = plain
		usecasetest.Restore(t, req)
		stock := t.TempDir()
		for _, o := range streams {
			local := filepath.Join(t.TempDir(), filepath.Base(o))
			if err := os.WriteFile(local, r.Read(t, o), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("bash", "-o", "pipefail", "-c", `age -d -i "$1" "$2" | zstd -dc | mbstream -x -C "$3"`, "x", key, local, stock)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("age -d | zstd -dc | mbstream -x: %v\n%s", err, out)
			}
		}
		testkit.CompareTrees(t, "age -d | zstd -dc | mbstream -x vs restore", testkit.TreeDigests(t, stock), testkit.TreeDigests(t, plain))

		target = filepath.Join(t.TempDir(), "datadir")
		req = usecasetest.RestoreOf(r, "")
		req.Deferred.Open = withKey.Open
		req.Restore.TargetDir, req.Restore.Options.Prepare = target, true
		usecasetest.Restore(t, req)
		usecasetest.CompareChecksums(t, usecasetest.Checksums(t, usecasetest.ServerOn(t, target)), want)
	})
}

// An encrypted logical backup with a passphrase from the environment, on
// every backend: loaded with it, refused without it or with another one;
// the passphrase opens one repository key, made by the first backup and
// used by the next, and with that key the stock tools read the objects.
func TestEncryptedLogicalRoundTrip(t *testing.T) {
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 2}); err != nil {
		t.Fatal(err)
	}
	want, err := sandbox.ChecksumTables(ctx, src.DB())
	if err != nil {
		t.Fatal(err)
	}
	const passphrase = "correct horse battery staple"
	usecasetest.ForEachBackend(t, func(t *testing.T, r usecasetest.Repo) {
		t.Setenv(repoaccess.PassphraseEnv, passphrase)
		// take is `backup --logical --encrypt --skip-users`, the
		// passphrase from the environment.
		take := func() {
			t.Helper()
			req := usecasetest.LogicalBackupOf(t, r, src)
			req.Dump.Skip.Users = true
			usecasetest.Backup(t, usecasetest.Encrypted(t, r, req, repoaccess.KeyFiles{}))
		}
		take()
		dst := sandboxtest.Start(t, sandbox.Options{})
		for _, c := range []struct{ passphrase, want string }{{"", "no key was given"}, {"wrong horse battery staple", "cannot decrypt"}} {
			t.Setenv(repoaccess.PassphraseEnv, c.passphrase)
			if _, err := restorecase.Run(ctx, usecasetest.LoadOf(r, "", dst)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("load with passphrase %q: %v; want %q", c.passphrase, err, c.want)
			}
		}
		t.Setenv(repoaccess.PassphraseEnv, passphrase)
		usecasetest.Restore(t, usecasetest.LoadOf(r, "", dst))
		got, err := sandbox.ChecksumTables(ctx, dst.DB())
		if err != nil {
			t.Fatal(err)
		}
		usecasetest.CompareChecksums(t, got, want)
		// What the text says ("rows and row sums match") of the tables
		// whose row sums were compared.
		rep, err := usecasetest.RestoreTest(t, r, "latest")
		if err != nil || !rep.Passed {
			t.Fatalf("restore test of the encrypted backup: %v, report %+v", err, rep)
		}
		compared := 0
		for _, tb := range rep.Tables {
			if tb.RowSum != "" {
				compared++
			}
		}
		if compared == 0 {
			t.Errorf("restore test of the encrypted backup compared no row sums: %+v", rep.Tables)
		}

		take()
		keys, err := r.Backend.List(ctx, "keys/")
		if err != nil || len(keys) != 1 || !strings.HasPrefix(keys[0].Name, "keys/age1") {
			t.Fatalf("passphrase keys: %v, %v; want one", keys, err)
		}
		listed := usecasetest.List(t, r)
		for _, e := range listed {
			m, err := archive.ParseManifest(r.Read(t, "backups/"+e.ID+"/manifest.json"))
			if err != nil {
				t.Fatal(err)
			}
			if m.Encryption == nil || m.Encryption.PassphraseKey != keys[0].Name || len(m.Encryption.Recipients) != 1 ||
				"keys/"+m.Encryption.Recipients[0]+".age" != keys[0].Name {
				t.Fatalf("backup %s: encryption %+v, key %s", e.ID, m.Encryption, keys[0].Name)
			}
		}
		// By hand: age -d on the key (it asks for the passphrase on a
		// terminal, so here the library stands in), then the stock tools.
		scrypt, err := age.NewScryptIdentity(passphrase)
		if err != nil {
			t.Fatal(err)
		}
		kr, err := age.Decrypt(bytes.NewReader(r.Read(t, keys[0].Name)), scrypt)
		if err != nil {
			t.Fatal(err)
		}
		key, err := io.ReadAll(kr)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		keyFile := filepath.Join(dir, "key.txt")
		if err := os.WriteFile(keyFile, key, 0o600); err != nil {
			t.Fatal(err)
		}
		out := t.TempDir()
		id := listed[0].ID
		var objects []string
		for _, o := range r.StreamObjects(t, id) {
			if strings.HasSuffix(o, ".xbs.zst.age") {
				objects = append(objects, o)
			}
		}
		for _, o := range objects {
			stored := filepath.Join(dir, filepath.Base(o))
			if err := os.WriteFile(stored, r.Read(t, o), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("bash", "-o", "pipefail", "-c", `age -d -i "$1" "$2" | zstd -dc | mbstream -x -C "$3"`, "bash", keyFile, stored, out)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("age -d -i key | zstd -dc | mbstream -x of %s: %v\n%s", o, err, b)
			}
		}
		if tsv, _ := filepath.Glob(filepath.Join(out, "sample", "small_01.*.tsv")); len(objects) == 0 || len(tsv) == 0 {
			t.Fatalf("stock tools extracted no data file of sample.small_01 from %v", objects)
		}
	})
}
