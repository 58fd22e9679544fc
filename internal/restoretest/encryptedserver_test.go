package restoretest_test

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

	"github.com/backstream/backstream/internal/pitr"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/restoretest"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

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
// does not run (a failure, exit 1, not corruption) and says which file is
// missing.
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
	src := sandboxtest.Start(t, sandbox.Options{Args: usecasetest.EncryptedServerArgs(keyFile)})
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
	r := usecasetest.NewLocalRepo(t)
	id := usecasetest.Backup(t, usecasetest.BackupOf(t, r, src)).Manifest.ID

	rep, err := usecasetest.RestoreTest(t, r, id)
	if err != nil || !rep.Passed {
		t.Fatalf("good backup of an encrypted server: %v, report %+v", err, rep)
	}
	for _, name := range []string{"secret.inno", "secret.aria"} {
		if tb := usecasetest.TableOf(t, rep, name); !tb.Passed {
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
	usecasetest.ArchiveBinlogs(t, r, src)
	until, err := pitr.ParseTarget("", gtid, "", "", false)
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := usecasetest.RestoreTestTo(t, r, until); err != nil || !rep.Passed {
		t.Fatalf("restore test to GTID %s: %v, report %+v", gtid, err, rep)
	}
	target := filepath.Join(t.TempDir(), "pitr")
	req := usecasetest.PointInTimeOf(r, target)
	req.UntilGTID = gtid
	usecasetest.Restore(t, req)
	dst := sandboxtest.Start(t, sandbox.Options{Dir: t.TempDir(), Datadir: target, Args: usecasetest.EncryptedServerArgs(keyFile)})
	for _, table := range []string{"secret.inno", "secret.aria"} {
		var n int
		if err := dst.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil || n != 2001 {
			t.Fatalf("%s after the point-in-time restore: %d rows (want 2001), %v", table, n, err)
		}
	}

	// No object, and no file in the backup's streams, holds the key.
	assertNoKey(t, r.Location, keyHex)
	extracted := t.TempDir()
	usecasetest.CatExtract(t, r, id, extracted)
	assertNoKey(t, extracted, keyHex)

	// The key file gone: the host, not the backup, lacks something.
	moved := keyFile + ".moved"
	if err := os.Rename(keyFile, moved); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		run  func() error
	}{
		{"restore test of " + id, func() error {
			_, err := usecasetest.RestoreTest(t, r, id)
			return err
		}},
		{"restore test to GTID " + gtid, func() error {
			_, err := usecasetest.RestoreTestTo(t, r, until)
			return err
		}},
		{"point-in-time restore to GTID " + gtid, func() error {
			req := usecasetest.PointInTimeOf(r, filepath.Join(t.TempDir(), "nokey"))
			req.UntilGTID = gtid
			_, err := restorecase.Run(ctx, req)
			return err
		}},
	} {
		err := c.run()
		if !usecasetest.Failed(err) || !strings.Contains(err.Error(), "file-key-management-filename = "+keyFile) || !strings.Contains(err.Error(), "backup-my.cnf") {
			t.Fatalf("%s without the key file: %v; want a failure (neither a refusal nor corruption) naming the key file", c.what, err)
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
	_, err = usecasetest.RestoreTestWith(t, r, id, func(req *restoretest.Request) { req.Job.ServerDefaults = extra })
	if !usecasetest.Failed(err) || !strings.Contains(err.Error(), extra+" line 2: file-key-management-filename = "+missing) {
		t.Fatalf("a --server-defaults-file naming a missing key file: %v; want a failure naming it", err)
	}
	req = usecasetest.RestoreOf(r, id)
	req.Restore.TargetDir, req.Restore.ServerDefaults = filepath.Join(t.TempDir(), "x"), extra
	if _, err := restorecase.Run(ctx, req); !usecasetest.Refused(err) {
		t.Fatalf("restore --server-defaults-file without --until: %v, want a refusal", err)
	}
}
