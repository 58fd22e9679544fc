package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repo/repotest"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/local"
	"github.com/backstream/backstream/internal/testkit"
)

// storedBackup writes files as a backup of a new repository and returns
// it as SendStored takes it, read back from the repository.
func storedBackup(t *testing.T, files []testFile, streams int) (*repo.Repo, *StoredBackup) {
	t.Helper()
	ctx := testContext(t)
	r := repotest.New(t)
	if _, err := writeBackup(ctx, t, r, files, streams); err != nil {
		t.Fatal(err)
	}
	m, err := r.Resolve(ctx, testID)
	if err != nil {
		t.Fatal(err)
	}
	b := &StoredBackup{Manifest: m, Input: r.Input(m), Meta: map[string][]byte{}}
	for _, o := range m.Meta {
		if o.Name != archive.ContentsName {
			if b.Meta[o.Name], err = r.ReadMeta(ctx, m, o.Name); err != nil {
				t.Fatal(err)
			}
		}
	}
	return r, b
}

// manyFiles are 24 files of 20-90 KiB, so that a backup of them in 64 KiB
// frames has files wholly in frames of their own.
func manyFiles() []testFile {
	var files []testFile
	for seed := range uint64(4) {
		for _, f := range testFiles(seed + 10) {
			if f.path != "empty" {
				files = append(files, testFile{path: fmt.Sprintf("s%d/%s", seed, f.path), data: f.data[:min(len(f.data), 20<<10+len(f.data)%(70<<10))]})
			}
		}
	}
	return files
}

// serveTarget runs a receiver into target (resuming with resume) in the
// background, as receive --target-dir does.
func serveTarget(t *testing.T, target string, resume bool) (string, <-chan served) {
	t.Helper()
	rv := &Receiver{Listener: listen(t), Datadir: &restore.Job{TargetDir: target, Resume: resume}, Workers: 2}
	done := make(chan served, 1)
	go func() {
		m, err := rv.Serve(testContext(t))
		done <- served{m, err}
	}()
	return rv.Listener.Addr().String(), done
}

// sendStoredTo sends b to the receivers at addrs with SendStored.
func sendStoredTo(t *testing.T, b *StoredBackup, addrs ...string) (*Sender, error) {
	t.Helper()
	s, err := Dial(testContext(t), addrs, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, s.SendStored(testContext(t), b, nil)
}

// cutInput is a stored backup's input whose stream cut fails, once the
// receiver's journal in target records a file done: a transfer cut off
// (the sender or the network lost) after part of it arrived.
type cutInput struct {
	archive.Input
	cut    int
	target string
}

func (c cutInput) OpenStream(ctx context.Context, i int, s archive.Stream) (archive.FrameSource, error) {
	src, err := c.Input.OpenStream(ctx, i, s)
	if err != nil || i != c.cut {
		return src, err
	}
	for deadline := time.Now().Add(time.Minute); journaledFiles(c.target) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			return nil, errors.New("the receiver's journal recorded no file within a minute")
		}
	}
	src.Close()
	return nil, errors.New("connection cut")
}

// journaledFiles counts the files a restore's journal in target records
// as done.
func journaledFiles(target string) int {
	data, _ := os.ReadFile(filepath.Join(target, ".backstream-restoring.journal"))
	return bytes.Count(data, []byte(`"t":"done"`))
}

// A receive of a stored backup cut off mid-way keeps what it verified and
// says how to continue; with --resume it asks only for the frames of the
// files it lacks, and ends with every file as stored. A resume of another
// backup, and a resume from a sender taking a new backup, are refused and
// change nothing.
func TestSendStoredResumes(t *testing.T) {
	files := manyFiles()
	_, b := storedBackup(t, files, 3)
	target := filepath.Join(t.TempDir(), "target")

	cut := *b
	cut.Input = cutInput{Input: b.Input, cut: 2, target: target}
	addr, done := serveTarget(t, target, false)
	if _, err := sendStoredTo(t, &cut, addr); err == nil || !strings.Contains(err.Error(), "connection cut") {
		t.Fatalf("a send whose stream was cut: %v, want the cut", err)
	}
	got := outcome(t, done)
	if got.err == nil || !strings.Contains(got.err.Error(), "run receive again with --resume, and send the same backup again") {
		t.Fatalf("the receiver cut off: %v, want it to say how to continue", got.err)
	}
	kept := journaledFiles(target)
	if kept == 0 || kept >= len(files) {
		t.Fatalf("the cut receive's journal records %d of %d files: want some, not all", kept, len(files))
	}

	// Refused, changing nothing: a backup being taken, and another
	// stored backup, each into the interrupted receive of this one.
	before := testkit.TreeDigests(t, target)
	addr, done = serveTarget(t, target, true)
	s, err := Dial(testContext(t), []string{addr}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := writeBackupAs(testContext(t), t, s, "20261130T010203Z-0a0b", files, 3); err == nil {
		t.Error("a backup being taken was sent into a resumed receive")
	}
	s.Close()
	if got := outcome(t, done); got.err == nil || !strings.Contains(got.err.Error(), "--resume continues the receive of a stored backup") {
		t.Errorf("a resume from a sender taking a backup: %v, want the refusal", got.err)
	}
	_, other := storedBackup(t, testFiles(3), 3)
	other.Manifest.ID = "20261130T010203Z-0a0c"
	addr, done = serveTarget(t, target, true)
	if _, err := sendStoredTo(t, other, addr); err == nil {
		t.Error("another backup was sent into a resumed receive")
	}
	if got := outcome(t, done); got.err == nil || !strings.Contains(got.err.Error(), "not backup "+other.Manifest.ID) {
		t.Errorf("a resume of another backup: %v, want the refusal naming it", got.err)
	}
	testkit.CompareTrees(t, "the target after refused resumes", testkit.TreeDigests(t, target), before)

	addr, done = serveTarget(t, target, true)
	s, err = sendStoredTo(t, b, addr)
	if err != nil {
		t.Fatalf("the resumed send: %v", err)
	}
	if got := outcome(t, done); got.err != nil || got.m.ID != b.Manifest.ID {
		t.Fatalf("the resumed receive: %v", got.err)
	}
	sent, stored := s.Reports()[0].SentBytes, b.Manifest.Stats.StoredBytes
	if sent <= 0 || sent >= stored {
		t.Errorf("the resumed send sent %d of the backup's %d stored bytes: want some, not all", sent, stored)
	}
	t.Logf("kept %d of %d files; the resume sent %d of %d stored bytes", kept, len(files), sent, stored)
	for _, f := range files {
		if got, err := os.ReadFile(filepath.Join(target, f.path)); err != nil || !bytes.Equal(got, f.data) {
			t.Errorf("%s: %d bytes (%v), want the %d stored", f.path, len(got), err, len(f.data))
		}
	}
}

// A stored backup sent whole arrives as stored: into a target directory
// and into a repository at once, each receiver told it all.
func TestSendStoredWhole(t *testing.T) {
	files := testFiles(4)
	_, b := storedBackup(t, files, 2)
	target := filepath.Join(t.TempDir(), "target")
	addr1, done1 := serveTarget(t, target, true) // --resume into an absent target: a plain receive
	rv := &Receiver{}
	addr2, done2 := serve(t, rv)
	s, err := sendStoredTo(t, b, addr1, addr2)
	if err != nil {
		t.Fatal(err)
	}
	for i, done := range []<-chan served{done1, done2} {
		if got := outcome(t, done); got.err != nil {
			t.Fatalf("receiver %d: %v", i, got.err)
		}
		if sent := s.Reports()[i].SentBytes; sent != b.Manifest.Stats.StoredBytes {
			t.Errorf("receiver %d was sent %d bytes, want the %d stored", i, sent, b.Manifest.Stats.StoredBytes)
		}
	}
	for _, f := range files {
		if got, err := os.ReadFile(filepath.Join(target, f.path)); err != nil || !bytes.Equal(got, f.data) {
			t.Errorf("%s: %d bytes (%v), want the %d stored", f.path, len(got), err, len(f.data))
		}
	}
	checkStored(t, rv.Repo, b.Manifest.ID, files)
}

// A flipped byte in the sender's repository is damage of the stored
// backup, named (backup, stream object, frame, offset), never sent on:
// the receiver fails with that reason.
func TestSendStoredDamaged(t *testing.T) {
	r, b := storedBackup(t, testFiles(5), 2)
	st := b.Manifest.Streams[1]
	name := repo.Dir(b.Manifest.ID) + "/" + st.Name
	flipByte(t, r.Backend, name, 100)
	target := filepath.Join(t.TempDir(), "target")
	addr, done := serveTarget(t, target, false)
	_, err := sendStoredTo(t, b, addr)
	if !archive.IsCorrupt(err) || !errors.Is(err, errStoredDamage) ||
		!strings.Contains(err.Error(), b.Manifest.ID) || !strings.Contains(err.Error(), st.Name) || !strings.Contains(err.Error(), "frame 0 at offset 0: checksum mismatch") {
		t.Errorf("a damaged stored backup sent: %v, want damage naming the backup, %s and the frame", err, st.Name)
	}
	if got := outcome(t, done); got.err == nil || !strings.Contains(got.err.Error(), "the stored backup is damaged") {
		t.Errorf("the receiver of a backup whose sender found damage: %v, want the sender's reason", got.err)
	}
	if _, err := os.Stat(filepath.Join(target, "mysql")); err == nil {
		t.Error("the target of a failed receive holds a datadir")
	}
}

// flipByte flips the byte at off of object name.
func flipByte(t *testing.T, b storage.Backend, name string, off int) {
	t.Helper()
	ctx := testContext(t)
	rc, err := b.Open(ctx, name, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_, err = buf.ReadFrom(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	data[off] ^= 0x40
	if err := b.Delete(ctx, name); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, name, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
}

// A backup stored in a deduplicating repository is sent as any other:
// its frames made again from the blocks (each checked against its name),
// and the receiver into a datadir ends with every file as it was backed
// up, though the stream's digest is its recipe's. A receiver into a
// repository refuses it, saying why, rather than store streams whose
// digests it cannot check.
func TestSendStoredDeduplicated(t *testing.T) {
	ctx := testContext(t)
	b, err := local.New(filepath.Join(t.TempDir(), "repo"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := repo.Init(ctx, b, repo.Options{Dedup: true})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, f := range testFiles(7) {
		files[f.path] = string(f.data)
	}
	m := repotest.Store(t, r, repotest.Backup{ID: testID, Files: files})
	if m.Storage != archive.StorageDedup {
		t.Fatalf("storage %q", m.Storage)
	}
	sb := &StoredBackup{Manifest: m, Input: r.Input(m), Meta: map[string][]byte{}}
	for _, o := range m.Meta {
		if o.Name != archive.ContentsName {
			if sb.Meta[o.Name], err = r.ReadMeta(ctx, m, o.Name); err != nil {
				t.Fatal(err)
			}
		}
	}
	target := filepath.Join(t.TempDir(), "target")
	addr, done := serveTarget(t, target, false)
	if _, err := sendStoredTo(t, sb, addr); err != nil {
		t.Fatal(err)
	}
	if got := outcome(t, done); got.err != nil {
		t.Fatalf("receive into a datadir: %v", got.err)
	}
	for p, data := range files {
		if got, err := os.ReadFile(filepath.Join(target, p)); err != nil || string(got) != data {
			t.Errorf("%s: %d bytes (%v), want the %d backed up", p, len(got), err, len(data))
		}
	}
	addr, done = serve(t, &Receiver{})
	sendStoredTo(t, sb, addr)
	if got := outcome(t, done); got.err == nil || !strings.Contains(got.err.Error(), "receive it into a datadir") {
		t.Errorf("receive into a repository: %v; want a refusal saying why", got.err)
	}
}
