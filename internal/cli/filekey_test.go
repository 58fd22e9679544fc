package cli

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/usecasetest"
)

// A server whose key file is encrypted with a password
// (file_key_management_filekey), which SHOW VARIABLES shows and mariabackup
// copies into backup-my.cnf and its log. The password is in no object of
// the repository, no file of the backup's streams, no output, no command
// line or child's environment, and nothing left in TMPDIR; the manifest
// says it was withheld. A prepare without it fails before the target is
// made (exit 1, naming the option); given in --server-defaults-file it
// prepares, and a server with the key file and password starts on the
// result with the source's rows; the restore test passes with the option
// file, and with the environment variable.
func TestFileKeyPasswordNeverStored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatalf("openssl, which encrypts the key file, is not installed (scripts/deps.sh installs it): %v", err)
	}
	bin := buildBinary(t)
	keyBytes := make([]byte, 32)
	if _, err := rand.Read(keyBytes); err != nil {
		t.Fatal(err)
	}
	password := "fk-" + testkit.RandomHex(12)
	keyDir := t.TempDir()
	plain, keyFile := filepath.Join(keyDir, "keys.txt"), filepath.Join(keyDir, "keys.enc")
	if err := os.WriteFile(plain, []byte("1;"+hex.EncodeToString(keyBytes)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// As the plugin's documentation makes one (its key derivation is
	// OpenSSL's old one, with SHA-1).
	enc := exec.Command("openssl", "enc", "-aes-256-cbc", "-md", "sha1", "-pass", "env:FILEKEY", "-in", plain, "-out", keyFile)
	enc.Env = append(os.Environ(), "FILEKEY="+password)
	if out, err := enc.CombinedOutput(); err != nil {
		t.Fatalf("openssl enc: %v\n%s", err, out)
	}
	if err := os.Remove(plain); err != nil {
		t.Fatal(err)
	}
	// The servers' option file holds the password; their command lines
	// (the test's own processes) only the rest.
	serverCnf := filepath.Join(t.TempDir(), "server.cnf")
	if err := os.WriteFile(serverCnf, []byte("[mysqld]\nfile_key_management_filekey="+password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := sandboxtest.Start(t, sandbox.Options{OptionFile: serverCnf, Args: usecasetest.EncryptedServerArgs(keyFile)})
	var shown string
	if err := src.DB().QueryRowContext(ctx, "SELECT @@file_key_management_filekey").Scan(&shown); err != nil || shown != password {
		t.Fatalf("the source shows file_key_management_filekey %q, %v: the test proves nothing", shown, err)
	}
	for _, q := range []string{
		"CREATE DATABASE secret",
		"CREATE TABLE secret.inno (id INT PRIMARY KEY, v VARCHAR(100)) ENGINE=InnoDB ENCRYPTED=YES",
		"CREATE TABLE secret.aria (id INT PRIMARY KEY, v VARCHAR(100)) ENGINE=Aria",
		"INSERT INTO secret.inno SELECT seq, CONCAT('row ', seq) FROM secret.seq_1_to_3000",
		"INSERT INTO secret.aria SELECT seq, CONCAT('row ', seq) FROM secret.seq_1_to_3000",
	} {
		if _, err := src.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	want := tableSums(t, src.DB(), "secret.inno", "secret.aria")

	s := &secretsRig{t: t, bin: bin, tmp: t.TempDir(), outputs: map[string][]byte{},
		secrets: []secret{{"key file's password", password}}}
	repoDir := newRepoDir(t)
	// Uncompressed, so that searching the stored objects searches the stream.
	s.run("backup", true, nil, append([]string{"backup", "--repo", repoDir, "--parallel", "2", "--compress", "none", "-v"}, sandboxConn(src)...)...)
	id := backupListing(t, repoDir)[0].ID
	if n := s.searchTree("repository", repoDir); n < 5 {
		t.Fatalf("the repository holds %d files: the search proves nothing", n)
	}
	manifest, err := os.ReadFile(filepath.Join(repoDir, repo.Dir(id), "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m archive.Manifest
	if err := json.Unmarshal(manifest, &m); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Withheld, []string{"file_key_management_filekey"}) {
		t.Errorf("the manifest records withheld %q, want the key file's password:\n%s", m.Withheld, manifest)
	}
	cnf, err := os.ReadFile(filepath.Join(repoDir, repo.Dir(id), "meta", physical.BackupMyCnf))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cnf), "file_key_management_filename="+keyFile) || !strings.Contains(string(cnf), "# file_key_management_filekey=<withheld by backstream>") {
		t.Errorf("meta/backup-my.cnf lost the plugin's options or does not say the password was withheld:\n%s", cnf)
	}
	log, err := os.ReadFile(filepath.Join(repoDir, repo.Dir(id), "meta", "mariabackup.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "--file_key_management_filekey=<withheld by backstream>") {
		t.Errorf("mariabackup's log no longer shows where the password was: the search for it proves less")
	}

	// The streams as restore and stock mbstream extract them.
	extracted := filepath.Join(t.TempDir(), "extracted")
	s.run("restore without --prepare", true, nil, "restore", id, "--repo", repoDir, "--target-dir", extracted)
	s.searchTree("restored, not prepared", extracted)
	stock := t.TempDir()
	catExtract(t, stock, id, "--repo", repoDir)
	s.searchTree("cat | mbstream -x", stock)

	// Without the password: nothing is written, the option is named.
	noKey := filepath.Join(t.TempDir(), "nokey")
	for _, args := range [][]string{
		{"restore", id, "--repo", repoDir, "--target-dir", noKey, "--prepare"},
		{"verify", id, "--repo", repoDir, "--restore-test"},
	} {
		res := run(t, args...)
		if res.code != ExitFailure || res.err == nil || !strings.Contains(res.err.Error(), "file_key_management_filekey") ||
			!strings.Contains(res.err.Error(), "--server-defaults-file") || !strings.Contains(res.err.Error(), physical.FileKeyEnv) {
			t.Fatalf("%s without the key file's password: exit %d (want %d), error %v", args, res.code, ExitFailure, res.err)
		}
		s.outputs[args[0]+" without the password"] = []byte(res.stdout + res.stderr + res.err.Error())
	}
	if _, err := os.Stat(noKey); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("restore --prepare without the password left its target: %v", err)
	}

	// With the password in --server-defaults-file.
	restoreCnf := filepath.Join(t.TempDir(), "restore.cnf")
	if err := os.WriteFile(restoreCnf, []byte("[mysqld]\nfile_key_management_filekey = "+password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "prepared")
	s.run("restore --prepare", true, nil, "restore", id, "--repo", repoDir, "--target-dir", target, "--prepare",
		"--server-defaults-file", restoreCnf, "-v")
	s.searchTree("prepared datadir", target)
	dst := sandboxtest.Start(t, sandbox.Options{Dir: t.TempDir(), Datadir: target, OptionFile: serverCnf, Args: usecasetest.EncryptedServerArgs(keyFile)})
	if got := tableSums(t, dst.DB(), "secret.inno", "secret.aria"); got != want {
		t.Errorf("the restored tables hold %s, the source %s", got, want)
	}

	_, out := s.run("restore test, option file", true, nil, "verify", id, "--repo", repoDir, "--restore-test", "--server-defaults-file", restoreCnf)
	s.run("restore test, environment", true, []string{physical.FileKeyEnv + "=" + password}, "verify", id, "--repo", repoDir, "--restore-test")
	for _, what := range []string{"restore test, option file", "restore test, environment"} {
		if !strings.Contains(string(s.outputs[what+" stdout"]), "restore test passed") {
			t.Errorf("%s: no pass reported\nstdout: %s\nstderr: %s", what, s.outputs[what+" stdout"], out)
		}
	}

	// merge prepares a chain with the password and stores the prepared
	// files as a new backup: it holds the password nowhere either, and
	// restores to the source's tables.
	s.run("incremental", true, nil, append([]string{"backup", "--repo", repoDir, "--parallel", "2", "--compress", "none", "--incremental"}, sandboxConn(src)...)...)
	s.run("merge", true, nil, "merge", "--repo", repoDir, "--compress", "none", "--server-defaults-file", restoreCnf, "-v")
	if n := s.searchTree("repository after merge", repoDir); n < 5 {
		t.Errorf("searched only %d objects of the repository after merge", n)
	}
	merged := filepath.Join(t.TempDir(), "merged")
	s.run("restore of the merged backup", true, nil, "restore", "latest", "--repo", repoDir, "--target-dir", merged, "--prepare", "--server-defaults-file", restoreCnf)
	s.searchTree("merged backup restored", merged)
	mdst := sandboxtest.Start(t, sandbox.Options{Dir: t.TempDir(), Datadir: merged, OptionFile: serverCnf, Args: usecasetest.EncryptedServerArgs(keyFile)})
	if got := tableSums(t, mdst.DB(), "secret.inno", "secret.aria"); got != want {
		t.Errorf("the merged backup restored holds %s, the source %s", got, want)
	}

	for what, data := range s.outputs {
		for _, l := range leaks(s.secrets, what, data) {
			t.Error(l)
		}
	}
	s.searchTree("TMPDIR after every run", s.tmp)
}

// tableSums is the row count and CHECKSUM TABLE of each table, as one
// string to compare.
func tableSums(t *testing.T, db *sql.DB, tables ...string) string {
	t.Helper()
	var out []string
	for _, table := range tables {
		var n int64
		var name string
		var sum sql.NullInt64
		if err := db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		if err := db.QueryRow("CHECKSUM TABLE "+table).Scan(&name, &sum); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		out = append(out, fmt.Sprintf("%s: %d rows, checksum %d", table, n, sum.Int64))
	}
	return strings.Join(out, "; ")
}
