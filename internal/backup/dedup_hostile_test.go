package backup_test

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// A deduplicating repository (issue 33) under a server with data-at-rest
// encryption (InnoDB tables and redo log, Aria tables) and a tablespace
// outside its datadir (DATA DIRECTORY): the encrypted pages that did not
// change between two backups are stored once (their ciphertext stays),
// and each backup restores, prepared, into a server started with the key
// file, with CHECKSUM TABLE equal to the source's at its time.
func TestDedupEncryptedServerAndRemoteTablespace(t *testing.T) {
	t.Parallel()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(keyFile, []byte("1;"+hex.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ext := filepath.Join(t.TempDir(), "ext")
	if err := os.Mkdir(ext, 0o700); err != nil {
		t.Fatal(err)
	}
	args := usecasetest.EncryptedServerArgs(keyFile)
	src := sandboxtest.Start(t, sandbox.Options{Args: args})
	db := src.DB()
	usecasetest.ExecAll(t, db,
		"CREATE DATABASE secret",
		"CREATE TABLE secret.inno (id INT PRIMARY KEY, v VARCHAR(300)) ENGINE=InnoDB ENCRYPTED=YES",
		"INSERT INTO secret.inno SELECT seq, CONCAT(SHA2(seq, 512), SHA2(seq + 1, 512)) FROM secret.seq_1_to_20000",
		"CREATE TABLE secret.far (id INT PRIMARY KEY, v VARCHAR(100)) ENGINE=InnoDB DATA DIRECTORY='"+ext+"'",
		"INSERT INTO secret.far SELECT seq, SHA2(seq, 256) FROM secret.seq_1_to_5000",
		"CREATE TABLE secret.aria (id INT PRIMARY KEY, v VARCHAR(100)) ENGINE=Aria",
		"INSERT INTO secret.aria SELECT seq, MD5(seq) FROM secret.seq_1_to_2000")
	dedupTwice(t, src, func(r usecasetest.Repo) *archive.Manifest {
		return usecasetest.Backup(t, usecasetest.BackupOf(t, r, src)).Manifest
	}, func(r usecasetest.Repo, m *archive.Manifest) *sandbox.Server {
		req := usecasetest.RestoreOf(r, m.ID)
		req.Restore.TargetDir, req.Restore.Options.Prepare = filepath.Join(t.TempDir(), "datadir"), true
		usecasetest.Restore(t, req)
		return sandboxtest.Start(t, sandbox.Options{Dir: t.TempDir(), Datadir: req.Restore.TargetDir, Args: args})
	},
		"UPDATE secret.inno SET v = 'changed' WHERE id BETWEEN 100 AND 140",
		"UPDATE secret.far SET v = 'changed' WHERE id = 9",
		"INSERT INTO secret.aria VALUES (2001, 'after the first')")
}

// dedupTwice takes two physical backups of src (take) into a new
// deduplicating repository, changes run between them, the server's pages
// flushed before each (the rows in the data files, not in a redo log that
// carries them): the second must store less than a quarter of what the
// first did, and each, restored and started (restored), must have the
// source's CHECKSUM TABLE at its time.
func dedupTwice(t *testing.T, src *sandbox.Server, take func(usecasetest.Repo) *archive.Manifest,
	restored func(usecasetest.Repo, *archive.Manifest) *sandbox.Server, changes ...string) {
	t.Helper()
	r := usecasetest.NewDedupRepo(t)
	db := src.DB()
	usecasetest.WaitCheckpoint(t, db)
	first := take(r)
	wantFirst := usecasetest.Checksums(t, src)
	afterFirst := storedBlocks(t, r)
	usecasetest.ExecAll(t, db, changes...)
	usecasetest.WaitCheckpoint(t, db)
	second := take(r)
	wantSecond := usecasetest.Checksums(t, src)
	added := storedBlocks(t, r) - afterFirst
	t.Logf("the first backup stored %d bytes of blocks, the second %d", afterFirst, added)
	if afterFirst == 0 || added*4 > afterFirst {
		t.Errorf("the second backup stored %d bytes of blocks, the first %d: want much less", added, afterFirst)
	}
	for _, b := range []struct {
		m    *archive.Manifest
		want map[string]string
	}{{first, wantFirst}, {second, wantSecond}} {
		s := restored(r, b.m)
		usecasetest.CompareChecksums(t, usecasetest.Checksums(t, s), b.want)
		s.Close()
	}
}
