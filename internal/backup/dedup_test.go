package backup_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/health"
	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/retention"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
	"github.com/backstream/backstream/internal/verify"
)

// Physical backups into a deduplicating repository (issue 33): the
// second full backup, after a few rows changed, stores a small part of
// what the first did, each restores alone (prepared, started) to the
// source's tables as they were at its time, cat's xbstream holds every
// file, and --incremental is refused.
func TestDedupRepositoryPhysical(t *testing.T) {
	t.Parallel()
	src := hexSource(t, 60000)
	db := src.DB()
	usecasetest.ExecAll(t, db,
		"CREATE TABLE d.a (id INT PRIMARY KEY, v VARCHAR(40)) ENGINE=Aria",
		"INSERT INTO d.a SELECT seq, MD5(seq) FROM d.seq_1_to_2000")
	r := usecasetest.NewDedupRepo(t)
	stored := func() int64 { return storedBlocks(t, r) }
	take := func() *archive.Manifest { return checkpointed(t, r, src) }
	first := take()
	if first.Storage != archive.StorageDedup || first.Codec != "none" {
		t.Fatalf("backup into a deduplicating repository: storage %q, codec %q", first.Storage, first.Codec)
	}
	wantFirst := usecasetest.Checksums(t, src)
	afterFirst := stored()
	usecasetest.ExecAll(t, db, "UPDATE d.t SET v = 'changed' WHERE id BETWEEN 100 AND 140")
	second := take()
	wantSecond := usecasetest.Checksums(t, src)
	added := stored() - afterFirst
	t.Logf("the first backup stored %d bytes of blocks (%d raw), the second %d", afterFirst, first.Stats.RawBytes, added)
	if afterFirst == 0 || added*4 > afterFirst {
		t.Errorf("the second backup stored %d bytes of blocks, the first %d: want much less", added, afterFirst)
	}
	restoresTo(t, r, first, wantFirst)
	restoresTo(t, r, second, wantSecond)
	extracted := t.TempDir()
	usecasetest.CatExtract(t, r, second.ID, extracted)
	if _, err := os.Stat(filepath.Join(extracted, "d", "t.ibd")); err != nil {
		t.Errorf("cat | mbstream -x of a deduplicated backup: %v", err)
	}
	req := usecasetest.BackupOf(t, r, src)
	req.Physical.Incremental = &backup.Incremental{}
	if _, err := backup.Run(t.Context(), req); err == nil || !strings.Contains(err.Error(), "deduplicates") {
		t.Errorf("--incremental into a deduplicating repository: %v; want a refusal", err)
	}

	// The table dropped and a third backup taken, expire keeps the
	// newest: the table's blocks, which only the first two named, are
	// collected; the third restores, and the next backup builds on the
	// blocks kept.
	usecasetest.ExecAll(t, db, "DROP TABLE d.t")
	third := take()
	wantThird := usecasetest.Checksums(t, src)
	before := stored()
	res, err := retention.Run(t.Context(), r.Open(t), retention.Request{Policy: retention.Policy{KeepLast: 1}, Confirm: true, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	res.WriteText(&text)
	t.Logf("expire:\n%s", text.String())
	if after := stored(); (before-after)*2 < afterFirst || !strings.Contains(text.String(), "collected") {
		t.Errorf("expire of the backups that held the table: the block store holds %d bytes, %d before; want the table's %d or so freed, and the collection said", after, before, afterFirst)
	}
	restoresTo(t, r, third, wantThird)
	beforeFourth := stored()
	fourth := take()
	if added := stored() - beforeFourth; added*4 > afterFirst {
		t.Errorf("the backup after expire stored %d bytes: it did not build on the blocks kept", added)
	}
	restoresTo(t, r, fourth, usecasetest.Checksums(t, src))
}

// A logical backup into a deduplicating repository is cut into blocks as
// well, and loads into a fresh server to the source's checksums; verify
// accepts it, and after a byte of a pack is flipped, names the damage and
// fails as corrupt.
func TestDedupRepositoryLogical(t *testing.T) {
	t.Parallel()
	src := sandboxtest.Start(t, sandbox.Options{})
	usecasetest.ExecAll(t, src.DB(),
		"CREATE DATABASE d",
		"CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(300)) ENGINE=InnoDB",
		"INSERT INTO d.t SELECT seq, CONCAT(SHA2(seq, 512), SHA2(seq + 1, 512)) FROM d.seq_1_to_20000")
	r := usecasetest.NewDedupRepo(t)
	m := usecasetest.Backup(t, usecasetest.LogicalBackupOf(t, r, src)).Manifest
	if m.Storage != archive.StorageDedup {
		t.Fatalf("a logical backup into a deduplicating repository: storage %q", m.Storage)
	}
	dst := sandboxtest.Start(t, sandbox.Options{})
	usecasetest.Restore(t, usecasetest.LoadOf(r, m.ID, dst))
	want := usecasetest.Checksums(t, src)
	got := usecasetest.Checksums(t, dst)
	if got["d.t"] != want["d.t"] || got["d.t"] == "" {
		t.Errorf("d.t loaded from the deduplicated backup: checksum %q, the source's %q", got["d.t"], want["d.t"])
	}
	if err := usecasetest.Verify(t, r, m.ID); err != nil {
		t.Fatalf("verify of the deduplicated backup: %v", err)
	}
	var pack string
	filepath.Walk(filepath.Join(r.Location, "dedup", "packs"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && (pack == "" || fi.Size() > 1<<20) {
			pack = p
		}
		return err
	})
	data, err := os.ReadFile(pack)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/3] ^= 0x10
	if err := os.WriteFile(pack, data, 0o600); err != nil {
		t.Fatal(err)
	}
	err = usecasetest.Verify(t, r, m.ID)
	if !archive.IsCorrupt(err) || !strings.Contains(err.Error(), filepath.Base(pack)) {
		t.Errorf("verify after a byte of pack %s flipped: %v; want corruption naming it", filepath.Base(pack), err)
	}
	// A pack gone: check, which reads no data, says so.
	if err := os.Remove(pack); err != nil {
		t.Fatal(err)
	}
	rep, err := health.Check(t.Context(), r.Open(t), health.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); !archive.IsCorrupt(err) || !strings.Contains(err.Error(), "block store lost 1 packs") {
		t.Errorf("check after pack %s was deleted: %v; want damage naming the lost pack", filepath.Base(pack), err)
	}
}

// The same on MinIO: a deduplicating repository in a bucket stores the
// second night's backup in a small part of the first's bytes, restores
// both (ranged reads of its packs) and one table into a running server,
// and expire collects what only the expired backup named.
func TestDedupRepositoryS3(t *testing.T) {
	t.Parallel()
	src := hexSource(t, 40000)
	db := src.DB()
	r := usecasetest.NewDedupS3Repo(t)
	take := func() *archive.Manifest { return checkpointed(t, r, src) }
	first := take()
	wantFirst := usecasetest.Checksums(t, src)
	usecasetest.ExecAll(t, db, "UPDATE d.t SET v = 'changed' WHERE id BETWEEN 10 AND 40")
	second := take()
	wantSecond := usecasetest.Checksums(t, src)
	t.Logf("stored: first %d bytes, second %d", first.Stats.StoredBytes, second.Stats.StoredBytes)
	if second.Stats.StoredBytes*10 > first.Stats.StoredBytes {
		t.Errorf("the second backup stored %d bytes, the first %d: want much less", second.Stats.StoredBytes, first.Stats.StoredBytes)
	}
	restoresTo(t, r, first, wantFirst)
	restoresTo(t, r, second, wantSecond)
	// verify --read-data-subset 1/2 and 2/2: each reads its files, the two
	// every file once.
	files, of := 0, 0
	for part := 1; part <= 2; part++ {
		res, err := usecasetest.VerifySubset(t, r.Access(), second.ID, verify.Subset{Part: part, Of: 2})
		if err != nil {
			t.Fatalf("verify --read-data-subset %d/2: %v", part, err)
		}
		files, of = files+res.Sampled.Files, res.Sampled.OfFiles
	}
	if files != of || of == 0 {
		t.Errorf("verify --read-data-subset 1/2 and 2/2 read %d files; the backup has %d", files, of)
	}
	// One table into a running server reads that table's frames only.
	dst := sandboxtest.Start(t, sandbox.Options{})
	usecasetest.ExecAll(t, dst.DB(), "CREATE DATABASE d")
	usecasetest.Restore(t, usecasetest.ImportOf(r, dst, "d.t"))
	if got := usecasetest.Checksums(t, dst)["d.t"]; got != wantSecond["d.t"] {
		t.Errorf("restore --table d.t from a deduplicated backup: checksum %s, the source's %s", got, wantSecond["d.t"])
	}
	usecasetest.ExecAll(t, db, "DROP TABLE d.t")
	take()
	res, err := retention.Run(t.Context(), r.Open(t), retention.Request{Policy: retention.Policy{KeepLast: 1}, Confirm: true, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	res.WriteText(&text)
	if !strings.Contains(text.String(), "collected") || strings.Contains(text.String(), "collected 0 B") {
		t.Errorf("expire of the backups that held the table, on MinIO:\n%s\nwant blocks collected", text.String())
	}
}

// restoresTo restores backup m of r with --prepare and fails the test
// unless a server on it has the checksums want.
func restoresTo(t *testing.T, r usecasetest.Repo, m *archive.Manifest, want map[string]string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "datadir")
	req := usecasetest.RestoreOf(r, m.ID)
	req.Restore.TargetDir, req.Restore.Options.Prepare = dir, true
	usecasetest.Restore(t, req)
	restored := usecasetest.ServerOn(t, dir)
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, restored), want)
	restored.Close()
}

// hexSource starts a server whose d.t holds rows rows of hex digests:
// data that compresses only about in half, as rows do.
func hexSource(t *testing.T, rows int) *sandbox.Server {
	t.Helper()
	src := sandboxtest.Start(t, sandbox.Options{})
	usecasetest.ExecAll(t, src.DB(),
		"CREATE DATABASE d",
		"CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(300)) ENGINE=InnoDB",
		fmt.Sprintf("INSERT INTO d.t SELECT seq, CONCAT(SHA2(seq, 512), SHA2(seq + 1, 512)) FROM d.seq_1_to_%d", rows))
	return src
}

// checkpointed takes a physical backup of src into r after a checkpoint:
// the redo log each backup copies is then what came after it, not the
// load.
func checkpointed(t *testing.T, r usecasetest.Repo, src *sandbox.Server) *archive.Manifest {
	t.Helper()
	req := usecasetest.BackupOf(t, r, src)
	req.Physical.Checkpoint = true
	return usecasetest.Backup(t, req).Manifest
}

// An encrypted deduplicating repository (init --dedup --encrypt): a backup
// host with the public key alone is refused (a backup reads the store's
// key and index), one with the secret key backs up; everything under
// dedup/ and the recipes are age files; the backup restores with the key;
// a backup's own --encrypt into a plain deduplicating repository is
// refused.
func TestDedupRepositoryEncrypted(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	src := hexSource(t, 20000)
	pub, key := usecasetest.AgeKeys(t)
	r := usecasetest.NewEncryptedDedupRepo(t, repoaccess.KeyFiles{RecipientFile: pub})
	if _, err := backup.Run(ctx, usecasetest.RepoEncrypted(t, r, usecasetest.BackupOf(t, r, src))); err == nil || !strings.Contains(err.Error(), "secret key") {
		t.Errorf("a backup into an encrypted deduplicating repository without the secret key: %v; want a refusal saying it needs it", err)
	}
	o := r.AccessWith(repoaccess.KeyFiles{IdentityFile: key})
	req := usecasetest.BackupOf(t, r, src)
	var err error
	if req.Repo, err = o.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if req.Encryption, err = o.Encryption(ctx, req.Repo); err != nil {
		t.Fatal(err)
	}
	m := usecasetest.Backup(t, req).Manifest
	want := usecasetest.Checksums(t, src)
	plain := 0
	filepath.Walk(r.Location, func(p string, fi os.FileInfo, err error) error {
		rel, _ := filepath.Rel(r.Location, p)
		if err == nil && !fi.IsDir() && (strings.HasPrefix(rel, "dedup") || strings.Contains(rel, "recipe")) && !strings.HasSuffix(p, ".age") {
			t.Errorf("%s is stored plain in an encrypted repository", rel)
			plain++
		}
		return err
	})
	dir := filepath.Join(t.TempDir(), "datadir")
	restoreReq := usecasetest.RestoreOf(r, m.ID)
	restoreReq.Restore.TargetDir, restoreReq.Restore.Options.Prepare = dir, true
	restoreReq.Deferred.Open = o.Open
	usecasetest.Restore(t, restoreReq)
	restored := usecasetest.ServerOn(t, dir)
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, restored), want)

	plainRepo := usecasetest.NewDedupRepo(t)
	po := plainRepo.AccessWith(repoaccess.KeyFiles{RecipientFile: pub})
	po.Encrypt = true
	pr, err := po.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := po.Encryption(ctx, pr); err == nil || !strings.Contains(err.Error(), "encrypted whole") {
		t.Errorf("backup --encrypt into a plain deduplicating repository: %v; want a refusal", err)
	}
}

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

// storedBlocks is the bytes under r's dedup/: its packs, index objects and key.
func storedBlocks(t *testing.T, r usecasetest.Repo) int64 {
	t.Helper()
	var n int64
	err := filepath.Walk(filepath.Join(r.Location, "dedup"), func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
