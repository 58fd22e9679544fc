package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
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
	forEachBackend(t, func(t *testing.T, tr testRepo) {
		run(t, append([]string{"backup", "--repo", tr.Location, "--parallel", "2", "--encrypt", "--recipient-file", pub}, sandboxConn(src)...)...).mustSucceed(t)
		e := backupListing(t, tr.Location)[0]
		infos, err := tr.Backend.List(ctx, "backups/"+e.ID+"/")
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
		if m := string(tr.Read(t, "backups/"+e.ID+"/manifest.json")); !strings.Contains(m, `"scheme": "age"`) || !strings.Contains(m, "age1") {
			t.Errorf("the manifest does not record the encryption and its recipient")
		}

		r := run(t, "verify", "--repo", tr.Location)
		// The command line names the flags that give a key.
		if r.code == ExitOK || !strings.Contains(r.err.Error(), "no key was given (--identity-file, --passphrase-file or BACKSTREAM_PASSPHRASE)") {
			t.Errorf("verify without a key: exit %d, %v", r.code, r.err)
		}
		target := filepath.Join(t.TempDir(), "wrong")
		r = run(t, "restore", "--repo", tr.Location, "--identity-file", otherKey, "--target-dir", target)
		if r.code == ExitOK || !strings.Contains(r.err.Error(), "cannot decrypt") || !strings.Contains(r.err.Error(), "is encrypted") {
			t.Errorf("restore with another key: exit %d, %v", r.code, r.err)
		}
		if _, err := os.Stat(target); err == nil {
			t.Errorf("a restore with the wrong key left %s", target)
		}
		run(t, "verify", "--repo", tr.Location, "--identity-file", key).mustSucceed(t)

		plain := filepath.Join(t.TempDir(), "plain")
		run(t, "restore", "--repo", tr.Location, "--identity-file", key, "--target-dir", plain).mustSucceed(t)
		stock := t.TempDir()
		for _, o := range streams {
			local := filepath.Join(t.TempDir(), filepath.Base(o))
			if err := os.WriteFile(local, tr.Read(t, o), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("bash", "-o", "pipefail", "-c", `age -d -i "$1" "$2" | zstd -dc | mbstream -x -C "$3"`, "x", key, local, stock)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("age -d | zstd -dc | mbstream -x: %v\n%s", err, out)
			}
		}
		usecasetest.CompareTrees(t, "age -d | zstd -dc | mbstream -x vs restore", usecasetest.TreeDigests(t, stock), usecasetest.TreeDigests(t, plain))

		target = filepath.Join(t.TempDir(), "datadir")
		run(t, "restore", "--repo", tr.Location, "--identity-file", key, "--target-dir", target, "--prepare").mustSucceed(t)
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
	forEachBackend(t, func(t *testing.T, tr testRepo) {
		t.Setenv("BACKSTREAM_PASSPHRASE", passphrase)
		backup := append([]string{"backup", "--logical", "--repo", tr.Location, "--encrypt", "--skip-users"}, sandboxConn(src)...)
		run(t, backup...).mustSucceed(t)
		dst := sandboxtest.Start(t, sandbox.Options{})
		load := append([]string{"restore", "--repo", tr.Location}, sandboxConn(dst)...)
		for _, c := range []struct{ passphrase, want string }{{"", "no key was given"}, {"wrong horse battery staple", "cannot decrypt"}} {
			t.Setenv("BACKSTREAM_PASSPHRASE", c.passphrase)
			if r := run(t, load...); r.code == ExitOK || !strings.Contains(r.err.Error(), c.want) {
				t.Fatalf("load with passphrase %q: exit %d, %v; want %q", c.passphrase, r.code, r.err, c.want)
			}
		}
		t.Setenv("BACKSTREAM_PASSPHRASE", passphrase)
		run(t, load...).mustSucceed(t)
		got, err := sandbox.ChecksumTables(ctx, dst.DB())
		if err != nil {
			t.Fatal(err)
		}
		usecasetest.CompareChecksums(t, got, want)
		res := run(t, "verify", "latest", "--repo", tr.Location, "--restore-test", "--progress", "none").mustSucceed(t)
		if !strings.Contains(res.stdout, "rows and row sums match") {
			t.Errorf("restore test of the encrypted backup: %s", res.stdout)
		}

		run(t, backup...).mustSucceed(t)
		keys, err := tr.Backend.List(ctx, "keys/")
		if err != nil || len(keys) != 1 || !strings.HasPrefix(keys[0].Name, "keys/age1") {
			t.Fatalf("passphrase keys: %v, %v; want one", keys, err)
		}
		for _, e := range backupListing(t, tr.Location) {
			m, err := archive.ParseManifest(tr.Read(t, "backups/"+e.ID+"/manifest.json"))
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
		kr, err := age.Decrypt(bytes.NewReader(tr.Read(t, keys[0].Name)), scrypt)
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
		id := backupListing(t, tr.Location)[0].ID
		var objects []string
		for _, o := range tr.StreamObjects(t, id) {
			if strings.HasSuffix(o, ".xbs.zst.age") {
				objects = append(objects, o)
			}
		}
		for _, o := range objects {
			stored := filepath.Join(dir, filepath.Base(o))
			if err := os.WriteFile(stored, tr.Read(t, o), 0o600); err != nil {
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
