package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// encryptedServerArgs are the options of a server with data-at-rest
// encryption whose keys are in keyFile.
func encryptedServerArgs(keyFile string) []string {
	return []string{"--plugin-load-add=file_key_management", "--file-key-management-filename=" + keyFile,
		"--innodb-encrypt-tables=ON", "--innodb-encrypt-log=ON", "--aria-encrypt-tables=ON", "--encrypt-tmp-files=ON"}
}

// assertNoKey fails if any file under dir holds the key, in hex as the
// key file has it or as raw bytes.
func assertNoKey(t *testing.T, dir, keyHex string) {
	t.Helper()
	raw, _ := hex.DecodeString(keyHex)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(bytes.ToLower(data), []byte(keyHex)) || bytes.Contains(data, raw) {
			t.Errorf("%s holds the encryption key", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A physical backup of a server with data-at-rest encryption (InnoDB
// tables and redo log, Aria tables) passes its restore test, also to a
// point in time with the binary logs replayed: the sandbox starts with the
// encryption plugin and key file the backup recorded. The repository
// holds no copy of the key. With the key file gone from its path, the test
// does not run (exit 1, not 3) and says which file is missing.
func TestRestoreTestEncryptedServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	keyBytes := make([]byte, 32)
	if _, err := rand.Read(keyBytes); err != nil {
		t.Fatal(err)
	}
	keyHex := hex.EncodeToString(keyBytes)
	keyFile := filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(keyFile, []byte("1;"+keyHex+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := sandboxtest.Start(t, sandbox.Options{Args: encryptedServerArgs(keyFile)})
	must := func(q string) {
		t.Helper()
		if _, err := src.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	must("CREATE DATABASE secret")
	must("CREATE TABLE secret.inno (id INT PRIMARY KEY, v VARCHAR(100)) ENGINE=InnoDB ENCRYPTED=YES")
	must("CREATE TABLE secret.aria (id INT PRIMARY KEY, v VARCHAR(100)) ENGINE=Aria")
	must("INSERT INTO secret.inno SELECT seq, CONCAT('row ', seq) FROM secret.seq_1_to_2000")
	must("INSERT INTO secret.aria SELECT seq, CONCAT('row ', seq) FROM secret.seq_1_to_2000")
	repoDir := newRepoDir(t)
	run(t, append([]string{"backup", "--repo", repoDir, "--parallel", "2"}, sandboxConn(src)...)...).mustSucceed(t)
	id := backupListing(t, repoDir)[0].ID

	rep, res := restoreTestReport(t, repoDir, id)
	if res.code != 0 || !rep.Passed {
		t.Fatalf("good backup of an encrypted server: exit %d, problems %q\n%s", res.code, rep.Problems, res.stderr)
	}
	for _, name := range []string{"secret.inno", "secret.aria"} {
		if tb := usecasetest.TableOf(t, &rep, name); !tb.Passed {
			t.Fatalf("%s: %+v", name, tb)
		}
	}

	// Rows after the backup, replayed from the archived binary logs into
	// the encrypted tables.
	must("INSERT INTO secret.inno VALUES (5000, 'after the backup')")
	must("INSERT INTO secret.aria VALUES (5000, 'after the backup')")
	var gtid string
	if err := src.DB().QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&gtid); err != nil {
		t.Fatal(err)
	}
	must("FLUSH BINARY LOGS")
	run(t, "binlog", "--repo", repoDir, "--socket", src.Socket, "--user", "root", "--no-defaults").mustSucceed(t)
	res = run(t, "verify", "--repo", repoDir, "--restore-test", "--until-gtid", gtid)
	if res.code != 0 || !strings.Contains(res.stdout, "restore test passed") {
		t.Fatalf("restore test to GTID %s: exit %d\nstdout: %s\nstderr: %s", gtid, res.code, res.stdout, res.stderr)
	}
	target := filepath.Join(t.TempDir(), "pitr")
	run(t, "restore", "--repo", repoDir, "--until-gtid", gtid, "--target-dir", target).mustSucceed(t)
	dst := sandboxtest.Start(t, sandbox.Options{Dir: t.TempDir(), Datadir: target, Args: encryptedServerArgs(keyFile)})
	for _, table := range []string{"secret.inno", "secret.aria"} {
		var n int
		if err := dst.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil || n != 2001 {
			t.Fatalf("%s after the point-in-time restore: %d rows (want 2001), %v", table, n, err)
		}
	}

	// No object, and no file in the backup's streams, holds the key.
	assertNoKey(t, repoDir, keyHex)
	extracted := t.TempDir()
	catExtract(t, extracted, id, "--repo", repoDir)
	assertNoKey(t, extracted, keyHex)

	// The key file gone: the host, not the backup, lacks something.
	moved := keyFile + ".moved"
	if err := os.Rename(keyFile, moved); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"verify", id, "--repo", repoDir, "--restore-test"},
		{"verify", "--repo", repoDir, "--restore-test", "--until-gtid", gtid},
		{"restore", "--repo", repoDir, "--until-gtid", gtid, "--target-dir", filepath.Join(t.TempDir(), "nokey")},
	} {
		res = run(t, args...)
		if res.code != ExitFailure || res.err == nil ||
			!strings.Contains(res.err.Error(), "file-key-management-filename = "+keyFile) || !strings.Contains(res.err.Error(), "backup-my.cnf") {
			t.Fatalf("%s without the key file: exit %d (want %d), error %v", args, res.code, ExitFailure, res.err)
		}
	}
	if err := os.Rename(moved, keyFile); err != nil {
		t.Fatal(err)
	}

	// --server-defaults-file is read: a key file it names must exist too.
	extra := filepath.Join(t.TempDir(), "server.cnf")
	missing := filepath.Join(t.TempDir(), "elsewhere.txt")
	if err := os.WriteFile(extra, []byte("[mysqld]\nfile_key_management_filename="+missing+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res = run(t, "verify", id, "--repo", repoDir, "--restore-test", "--server-defaults-file", extra)
	if res.code != ExitFailure || res.err == nil || !strings.Contains(res.err.Error(), extra+" line 2: file-key-management-filename = "+missing) {
		t.Fatalf("a --server-defaults-file naming a missing key file: exit %d, error %v", res.code, res.err)
	}
	res = run(t, "restore", id, "--repo", repoDir, "--target-dir", filepath.Join(t.TempDir(), "x"), "--server-defaults-file", extra)
	if res.code != ExitUsage {
		t.Fatalf("restore --server-defaults-file without --until: exit %d, error %v", res.code, res.err)
	}
}
