package binlog_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// binlog checks the server's settings first: log_bin OFF is refused
// naming it; a server that encrypts its binary logs (encrypt_binlog) is
// archived all the same, since the server decrypts what it sends to a
// replication client; binlog_checksum NONE with binlog_format MIXED is
// archived and replayed to the same data.
func TestBinlogServerSettings(t *testing.T) {
	t.Parallel()
	t.Run("log_bin off", func(t *testing.T) {
		t.Parallel()
		src := sandboxtest.Start(t, sandbox.Options{NoBinlog: true})
		_, err := usecasetest.ArchiverOf(t, usecasetest.NewLocalRepo(t), src).RunOnce(context.Background())
		if !usecasetest.Failed(err) || !strings.Contains(err.Error(), "log_bin is OFF") || !strings.Contains(err.Error(), "--log-bin") {
			t.Errorf("binlog of a server without a binary log: %v; want a failure (exit 1) naming log_bin and the fix", err)
		}
	})
	t.Run("encrypt_binlog", func(t *testing.T) {
		t.Parallel()
		key := make([]byte, 32)
		rand.Read(key)
		keyFile := filepath.Join(t.TempDir(), "keys.txt")
		if err := os.WriteFile(keyFile, []byte("1;"+hex.EncodeToString(key)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		src := sandboxtest.Start(t, sandbox.Options{Args: []string{"--plugin-load-add=file_key_management",
			"--file-key-management-filename=" + keyFile, "--encrypt-binlog=ON"}})
		var on int
		if err := src.DB().QueryRow("SELECT @@encrypt_binlog").Scan(&on); err != nil || on != 1 {
			t.Fatalf("encrypt_binlog = %d, %v: the test proves nothing", on, err)
		}
		for _, q := range []string{"CREATE DATABASE m", "CREATE TABLE m.t (id INT PRIMARY KEY, v VARCHAR(40))",
			"INSERT INTO m.t VALUES (1, 'plain text in the archive')", "FLUSH BINARY LOGS"} {
			if _, err := src.DB().Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		var datadir string
		src.DB().QueryRow("SELECT @@datadir").Scan(&datadir)
		r := usecasetest.NewLocalRepo(t)
		a := usecasetest.ArchiverOf(t, r, src) // --compress none
		var err error
		if a.Codec, err = codec.Parse("none"); err != nil {
			t.Fatal(err)
		}
		if _, err := a.RunOnce(context.Background()); err != nil {
			t.Fatalf("binlog --compress none: %v", err)
		}
		files := usecasetest.ArchivedBinlogs(t, r)
		if len(files) == 0 || files[len(files)-1].LastGTID == "" {
			t.Fatalf("archived: %+v; want files indexed with their GTIDs", files)
		}
		onDisk, err := os.ReadFile(filepath.Join(datadir, files[0].Name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(onDisk), "plain text in the archive") {
			t.Fatalf("the server's own file %s is not encrypted: the test proves nothing", files[0].Name)
		}
		objs, _ := filepath.Glob(filepath.Join(r.Location, "binlogs", "*", "*", "streams", "*.xbs"))
		found := false
		for _, o := range objs {
			data, _ := os.ReadFile(o)
			found = found || strings.Contains(string(data), "plain text in the archive")
		}
		if !found {
			t.Errorf("no archived file holds the insert in plain text: the events were not decrypted (%d objects)", len(objs))
		}
	})
	t.Run("checksum none, format mixed", func(t *testing.T) {
		t.Parallel()
		src := sandboxtest.Start(t, sandbox.Options{Args: []string{"--binlog-checksum=NONE", "--binlog-format=MIXED"}})
		must := func(q string) {
			t.Helper()
			if _, err := src.DB().Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		must("CREATE DATABASE m")
		must("CREATE TABLE m.t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(40), r DOUBLE)")
		r := usecasetest.NewLocalRepo(t)
		usecasetest.Backup(t, usecasetest.BackupOf(t, r, src))
		for range 3 {
			must("INSERT INTO m.t (v, r) VALUES ('statement', 1), ('logged', 2)")
			must("INSERT INTO m.t (v, r) VALUES (UUID(), RAND())") // unsafe for statements: logged as rows under MIXED
			must("UPDATE m.t SET r = r + 1 WHERE id % 2 = 0")
			must("FLUSH BINARY LOGS")
		}
		usecasetest.ArchiveBinlogs(t, r, src)
		target := filepath.Join(t.TempDir(), "target")
		req := usecasetest.PointInTimeOf(r, target)
		req.Until = "end"
		usecasetest.Restore(t, req)
		usecasetest.CompareChecksums(t, usecasetest.Checksums(t, usecasetest.ServerOn(t, target)), usecasetest.Checksums(t, src))
	})
}
