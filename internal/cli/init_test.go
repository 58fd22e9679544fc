package cli

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/storage/s3"
	"github.com/backstream/backstream/internal/usecasetest"
)

// Only init creates a repository: backup, binlog and receive given a
// location without one fail with exit 2 and create nothing, locally and
// on S3; init refuses a repository and a location holding other objects.
func TestInitCreatesRepositoriesOnPurpose(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "typo")
	empty := t.TempDir()
	bucket := usecasetest.S3().NewBucket(t)
	s3loc := "s3://" + bucket + "/prod"
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte(run(t, "token").mustSucceed(t).stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, loc := range []string{missing, empty, s3loc} {
		for _, args := range [][]string{
			{"backup", "--repo", loc, "--socket", "/nonexistent.sock", "--no-defaults"},
			{"backup", "--logical", "--repo", loc, "--socket", "/nonexistent.sock", "--no-defaults"},
			{"binlog", "--repo", loc, "--socket", "/nonexistent.sock", "--no-defaults"},
			{"receive", "--listen", "127.0.0.1:0", "--repo", loc, "--token-file", tok},
		} {
			r := run(t, args...)
			want := "create one with: backstream init --repo " + loc
			if r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), want) {
				t.Errorf("%v: exit %d, %v; want exit %d saying %q", args, r.code, r.err, ExitUsage, want)
			}
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("a command created %s", missing)
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("a command wrote into %s: %v", empty, entries)
	}
	if objs := listBucket(t, bucket); len(objs) != 0 {
		t.Errorf("a command wrote into %s: %v", s3loc, objs)
	}

	for _, loc := range []string{missing, empty, s3loc} {
		r := run(t, "init", "--repo", loc).mustSucceed(t)
		if !strings.Contains(r.stdout, "created repository") {
			t.Errorf("init %s printed %q", loc, r.stdout)
		}
		run(t, "list", "--repo", loc).mustSucceed(t)
		if r := run(t, "init", "--repo", loc); r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), "already a backstream repository") {
			t.Errorf("init %s again: exit %d, %v", loc, r.code, r.err)
		}
	}
	var made struct {
		Repository, ID string
		Format         int
	}
	jsonDir := filepath.Join(t.TempDir(), "j")
	if err := json.Unmarshal([]byte(run(t, "init", "--repo", jsonDir, "--json").mustSucceed(t).stdout), &made); err != nil ||
		made.Repository != jsonDir || made.ID == "" || made.Format != 1 {
		t.Errorf("init --json: %v, %+v", err, made)
	}
	cluttered := t.TempDir()
	if err := os.WriteFile(filepath.Join(cluttered, "notes.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := run(t, "init", "--repo", cluttered); r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), "holds 1 other objects") {
		t.Errorf("init into a directory with other files: exit %d, %v", r.code, r.err)
	}
}

// listBucket names the objects in bucket, under any prefix.
func listBucket(t *testing.T, bucket string) []string {
	t.Helper()
	cfg, err := s3.ConfigFromEnv("s3://" + bucket)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s3.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	infos, err := b.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, i := range infos {
		out = append(out, i.Name)
	}
	return out
}

// A repository made with init --encrypt encrypts everything written into
// it without a key flag (physical and logical backups, archived binary
// logs), to public keys or to a passphrase key made at init, so the
// writer holds no secret; reading needs the key; a backup restores to
// the source's tables.
func TestInitEncryptWritesEncryptedWithoutKeys(t *testing.T) {
	t.Parallel()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(t.Context(), src.DB(), sandbox.SampleOptions{Tables: 1}); err != nil {
		t.Fatal(err)
	}
	want, err := sandbox.ChecksumTables(t.Context(), src.DB())
	if err != nil {
		t.Fatal(err)
	}
	pub, key := usecasetest.AgeKeys(t)
	pass := filepath.Join(t.TempDir(), "pass")
	if err := os.WriteFile(pass, []byte("correct horse battery staple\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		initFlags []string
		readFlags []string
	}{
		{"recipients", []string{"--recipient-file", pub}, []string{"--identity-file", key}},
		{"passphrase", []string{"--passphrase-file", pass}, []string{"--passphrase-file", pass}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "repo")
			r := run(t, append([]string{"init", "--repo", dir, "--encrypt"}, c.initFlags...)...).mustSucceed(t)
			if !strings.Contains(r.stdout, "everything written into it is encrypted to age1") {
				t.Errorf("init --encrypt printed %q", r.stdout)
			}
			cfg, err := os.ReadFile(filepath.Join(dir, "backstream.json"))
			if err != nil || !strings.Contains(string(cfg), `"format": 2`) || strings.Contains(string(cfg), "correct horse") {
				t.Errorf("the config of an encrypted repository: %v\n%s", err, cfg)
			}
			// No key flag on any writer.
			run(t, append([]string{"backup", "--repo", dir, "--parallel", "2"}, sandboxConn(src)...)...).mustSucceed(t)
			run(t, append([]string{"backup", "--logical", "--repo", dir, "--skip-users"}, sandboxConn(src)...)...).mustSucceed(t)
			if _, err := src.DB().Exec("FLUSH BINARY LOGS"); err != nil {
				t.Fatal(err)
			}
			run(t, append([]string{"binlog", "--repo", dir}, sandboxConn(src)...)...).mustSucceed(t)
			var plain []string
			sealed := map[string]int{}
			filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				// Every object the repository layer encrypts is stored as
				// <name>.age, none plainly.
				rel, _ := filepath.Rel(dir, p)
				switch top, _, _ := strings.Cut(filepath.ToSlash(rel), "/"); {
				case strings.HasSuffix(rel, ".age"):
					sealed[top]++
				case repo.Encrypted(filepath.ToSlash(rel)):
					plain = append(plain, rel)
				}
				return nil
			})
			if len(plain) > 0 || sealed["backups"] == 0 || sealed["binlogs"] == 0 {
				t.Errorf("stored unencrypted in a repository with its own encryption: %v (encrypted: %v)", plain, sealed)
			}
			if r := run(t, "verify", "--repo", dir); r.code == ExitOK || !strings.Contains(fmt.Sprint(r.err), "no key was given") {
				t.Errorf("verify without a key: exit %d, %v", r.code, r.err)
			}
			run(t, append([]string{"verify", "--repo", dir}, c.readFlags...)...).mustSucceed(t)
			target := filepath.Join(t.TempDir(), "datadir")
			id := backupListing(t, dir)[0].ID
			run(t, append([]string{"restore", id, "--repo", dir, "--target-dir", target, "--prepare"}, c.readFlags...)...).mustSucceed(t)
			usecasetest.CompareChecksums(t, usecasetest.Checksums(t, usecasetest.ServerOn(t, target)), want)
		})
	}
}
