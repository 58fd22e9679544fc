package cli

import (
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
)

// ageKeys writes a fresh X25519 key pair: a recipients file and an
// identities file, as age-keygen would.
func ageKeys(t *testing.T) (recipients, identities string) {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	recipients, identities = filepath.Join(dir, "backup.pub"), filepath.Join(dir, "backup.key")
	if err := os.WriteFile(recipients, []byte(id.Recipient().String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(identities, []byte("# test key\n"+id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return recipients, identities
}

// An encrypted physical backup on every backend: every data object is
// stored as .age, reading needs the key (refused without it or with
// another, before anything is written), the restore with it gives the
// source's checksums, and age -d | zstd -dc | mbstream -x restores the
// same files as backstream does.
func TestEncryptedPhysicalRoundTrip(t *testing.T) {
	ctx := context.Background()
	src := sandbox.Testing(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 2, BigTableMB: 8}); err != nil {
		t.Fatal(err)
	}
	want, err := sandbox.ChecksumTables(ctx, src.DB())
	if err != nil {
		t.Fatal(err)
	}
	pub, key := ageKeys(t)
	_, otherKey := ageKeys(t)
	forEachBackend(t, func(t *testing.T, tr testRepo) {
		run(t, append([]string{"backup", "--repo", tr.location, "--parallel", "2", "--encrypt", "--recipient-file", pub}, sandboxConn(src)...)...).mustSucceed(t)
		e := backupListing(t, tr.location)[0]
		infos, err := tr.backend.List(ctx, "backups/"+e.ID+"/")
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
		if m := string(tr.read(t, "backups/"+e.ID+"/manifest.json")); !strings.Contains(m, `"scheme": "age"`) || !strings.Contains(m, "age1") {
			t.Errorf("the manifest does not record the encryption and its recipient")
		}

		r := run(t, "verify", "--repo", tr.location)
		if r.code == ExitOK || !strings.Contains(r.err.Error(), "no key was given") {
			t.Errorf("verify without a key: exit %d, %v", r.code, r.err)
		}
		target := filepath.Join(t.TempDir(), "wrong")
		r = run(t, "restore", "--repo", tr.location, "--identity-file", otherKey, "--target-dir", target)
		if r.code == ExitOK || !strings.Contains(r.err.Error(), "cannot decrypt") || !strings.Contains(r.err.Error(), "is encrypted") {
			t.Errorf("restore with another key: exit %d, %v", r.code, r.err)
		}
		if _, err := os.Stat(target); err == nil {
			t.Errorf("a restore with the wrong key left %s", target)
		}
		run(t, "verify", "--repo", tr.location, "--identity-file", key).mustSucceed(t)

		plain := filepath.Join(t.TempDir(), "plain")
		run(t, "restore", "--repo", tr.location, "--identity-file", key, "--target-dir", plain).mustSucceed(t)
		stock := t.TempDir()
		for _, o := range streams {
			local := filepath.Join(t.TempDir(), filepath.Base(o))
			if err := os.WriteFile(local, tr.read(t, o), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("bash", "-o", "pipefail", "-c", `age -d -i "$1" "$2" | zstd -dc | mbstream -x -C "$3"`, "x", key, local, stock)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("age -d | zstd -dc | mbstream -x: %v\n%s", err, out)
			}
		}
		compareTrees(t, "age -d | zstd -dc | mbstream -x vs restore", treeDigests(t, stock), treeDigests(t, plain))

		target = filepath.Join(t.TempDir(), "datadir")
		run(t, "restore", "--repo", tr.location, "--identity-file", key, "--target-dir", target, "--prepare").mustSucceed(t)
		compareChecksums(t, checksums(t, serverOn(t, target)), want)
	})
}

// An encrypted logical backup with a passphrase from the environment:
// loaded with it, refused without it.
func TestEncryptedLogicalRoundTrip(t *testing.T) {
	ctx := context.Background()
	src := sandbox.Testing(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 2}); err != nil {
		t.Fatal(err)
	}
	want, err := sandbox.ChecksumTables(ctx, src.DB())
	if err != nil {
		t.Fatal(err)
	}
	repoDir := filepath.Join(t.TempDir(), "repo")
	t.Setenv("BACKSTREAM_PASSPHRASE", "correct horse battery staple")
	run(t, append([]string{"backup", "--logical", "--repo", repoDir, "--encrypt", "--skip-users"}, sandboxConn(src)...)...).mustSucceed(t)
	dst := sandbox.Testing(t, sandbox.Options{})
	t.Setenv("BACKSTREAM_PASSPHRASE", "")
	r := run(t, append([]string{"restore", "--repo", repoDir}, sandboxConn(dst)...)...)
	if r.code == ExitOK || !strings.Contains(r.err.Error(), "no key was given") {
		t.Fatalf("load without the passphrase: exit %d, %v", r.code, r.err)
	}
	t.Setenv("BACKSTREAM_PASSPHRASE", "wrong horse battery staple")
	r = run(t, append([]string{"restore", "--repo", repoDir}, sandboxConn(dst)...)...)
	if r.code == ExitOK || !strings.Contains(r.err.Error(), "cannot decrypt") {
		t.Fatalf("load with a wrong passphrase: exit %d, %v", r.code, r.err)
	}
	t.Setenv("BACKSTREAM_PASSPHRASE", "correct horse battery staple")
	run(t, append([]string{"restore", "--repo", repoDir}, sandboxConn(dst)...)...).mustSucceed(t)
	got, err := sandbox.ChecksumTables(ctx, dst.DB())
	if err != nil {
		t.Fatal(err)
	}
	compareChecksums(t, got, want)
	res := run(t, "verify", "latest", "--repo", repoDir, "--restore-test", "--progress", "none").mustSucceed(t)
	if !strings.Contains(res.stdout, "rows and row sums match") {
		t.Errorf("restore test of the encrypted backup: %s", res.stdout)
	}

	// The passphrase opens the repository's key, made by the first
	// backup and used by the next; the data objects are encrypted to it.
	run(t, append([]string{"backup", "--logical", "--repo", repoDir, "--encrypt", "--skip-users"}, sandboxConn(src)...)...).mustSucceed(t)
	keys, err := filepath.Glob(filepath.Join(repoDir, "keys", "age1*.age"))
	if err != nil || len(keys) != 1 {
		t.Fatalf("passphrase keys: %v, %v; want one", keys, err)
	}
	entries := backupListing(t, repoDir)
	data, err := os.ReadFile(filepath.Join(repoDir, "backups", entries[0].ID, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := archive.ParseManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	if m.Encryption == nil || m.Encryption.PassphraseKey != "keys/"+filepath.Base(keys[0]) || len(m.Encryption.Recipients) != 1 ||
		m.Encryption.Recipients[0]+".age" != filepath.Base(keys[0]) {
		t.Fatalf("manifest encryption %+v, key %s", m.Encryption, keys[0])
	}
	// By hand: age -d on the key (it asks for the passphrase on a
	// terminal, so here the library stands in), then the stock tools.
	scrypt, err := age.NewScryptIdentity("correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	kf, err := os.Open(keys[0])
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	kr, err := age.Decrypt(kf, scrypt)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "key.txt")
	kw, err := os.OpenFile(keyFile, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(kw, kr); err != nil {
		t.Fatal(err)
	}
	kw.Close()
	objects, _ := filepath.Glob(filepath.Join(repoDir, "backups", entries[0].ID, "streams", "*.xbs.zst.age"))
	out := t.TempDir()
	for _, o := range objects {
		cmd := exec.Command("sh", "-c", `age -d -i "$1" "$2" | zstd -dc | mbstream -x -C "$3"`, "sh", keyFile, o, out)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("age -d -i key | zstd -dc | mbstream -x of %s: %v\n%s", o, err, b)
		}
	}
	if tsv, _ := filepath.Glob(filepath.Join(out, "sample", "small_01.*.tsv")); len(objects) == 0 || len(tsv) == 0 {
		t.Fatalf("stock tools extracted no data file of sample.small_01 from %v", objects)
	}
}
