package dedup_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/zeebo/blake3"
	"github.com/zeebo/xxh3"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/dedup"
	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/crypt"
	"github.com/backstream/backstream/internal/storage/faulty"
	"github.com/backstream/backstream/internal/storage/local"
	"github.com/backstream/backstream/internal/xbstream"
)

// files is a backup's files: path -> content.
type files map[string][]byte

// chunks cuts the files into xbstream chunks of chunkSize, interleaved
// as mariabackup's threads interleave them, each file ended.
func chunks(t *testing.T, fs files, chunkSize int) [][]byte {
	t.Helper()
	var paths []string
	for p := range fs {
		paths = append(paths, p)
	}
	var out [][]byte
	at := map[string]int{}
	for left := len(paths); left > 0; {
		for _, p := range paths {
			data, off := fs[p], at[p]
			if off < 0 {
				continue
			}
			c := xbstream.Chunk{Type: xbstream.TypeEOF, Path: p}
			if off < len(data) {
				end := min(len(data), off+chunkSize)
				c = xbstream.Chunk{Type: xbstream.TypePayload, Path: p, Offset: uint64(off), Payload: data[off:end]}
				at[p] = end
			} else {
				at[p], left = -1, left-1
			}
			raw, err := xbstream.AppendChunk(nil, &c)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, raw)
		}
	}
	return out
}

// backup writes fs through the archive writer (codec none, 3 streams)
// into the store under backups/<id>, and returns its manifest.
func backup(t *testing.T, s *dedup.Store, id string, fs files) *archive.Manifest {
	t.Helper()
	c, err := codec.Parse("none")
	if err != nil {
		t.Fatal(err)
	}
	w, err := archive.NewWriter(context.Background(), archive.WriterOptions{
		Output:  dedup.NewOutput(s, "backups/"+id, archive.DefaultHash),
		Streams: 3, Codec: c, FrameSize: 1 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range chunks(t, fs, 300<<10) {
		ch, _, err := xbstream.DecodeChunk(raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Add(&ch, raw); err != nil {
			t.Fatal(err)
		}
	}
	res, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	m := &archive.Manifest{Format: archive.FormatVersion, ID: id, Kind: archive.KindPhysical, Codec: c.String(), Hash: archive.DefaultHash}
	m.Complete(res)
	return m
}

type memSink struct {
	mu    sync.Mutex
	files files
}

func (s *memSink) Chunk(c *xbstream.Chunk) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.files[c.Path]
	if c.Type == xbstream.TypePayload {
		if end := int(c.Offset) + len(c.Payload); len(b) < end {
			b = append(b, make([]byte, end-len(b))...)
		}
		copy(b[c.Offset:], c.Payload)
	}
	s.files[c.Path] = b
	return nil
}

// restore reads backup m back through the store and returns its files.
func restore(s *dedup.Store, m *archive.Manifest) (files, error) {
	sink := &memSink{files: files{}}
	err := archive.Read(context.Background(), archive.ReadOptions{Input: dedup.Input{Store: s, Dir: "backups/" + m.ID}, Manifest: m, Sink: sink})
	return sink.files, err
}

func random(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func newStore(t *testing.T) (*dedup.Store, string, storage.Backend) {
	t.Helper()
	root := t.TempDir()
	b, err := local.New(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := dedup.Init(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := dedup.Init(ctx, b); err == nil || !strings.Contains(err.Error(), "already made") {
		t.Errorf("a second Init: %v, want a refusal", err)
	}
	s, err := dedup.Open(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	return s, root, b
}

// sizeOf is the bytes under dir.
func sizeOf(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return err
	})
	return n
}

// Two backups of files that mostly agree: the second stores about what
// changed, each restores to its own files exactly, and the frames the
// store gives back are the backup's (the manifest's digests hold).
func TestBackupsShareBlocks(t *testing.T) {
	s, root, _ := newStore(t)
	first := files{
		"ibdata1":   random(3<<20 + 12345),
		"db/t1.ibd": random(5 << 20),
		"db/t2.ibd": random(2 << 20),
		"db/t1.frm": random(900),
		"empty":     nil,
	}
	m1 := backup(t, s, "one", first)
	stored1 := sizeOf(t, filepath.Join(root, "dedup"))
	if stored1 < 10<<20 {
		t.Fatalf("the first backup stored %d bytes of blocks, want its 10 MiB of random data", stored1)
	}
	second := files{}
	for p, b := range first {
		second[p] = bytes.Clone(b)
	}
	copy(second["db/t1.ibd"][2<<20:], random(16<<10)) // one page changed
	second["db/t3.ibd"] = random(1 << 20)             // a new table
	s2, err := dedup.Open(context.Background(), s.Backend)
	if err != nil {
		t.Fatal(err)
	}
	m2 := backup(t, s2, "two", second)
	added := sizeOf(t, filepath.Join(root, "dedup")) - stored1
	t.Logf("the first backup stored %d bytes in the block store, the second %d", stored1, added)
	if added > 1<<20+3*64<<10+64<<10 {
		t.Errorf("the second backup stored %d bytes of blocks, want about the new table and one block", added)
	}
	for _, c := range []struct {
		m    *archive.Manifest
		want files
	}{{m1, first}, {m2, second}} {
		got, err := restore(s2, c.m)
		if err != nil {
			t.Fatalf("restore %s: %v", c.m.ID, err)
		}
		for p, want := range c.want {
			if !bytes.Equal(got[p], want) {
				t.Errorf("backup %s: file %s differs after the round trip (%d bytes, want %d)", c.m.ID, p, len(got[p]), len(want))
			}
		}
	}
}

// A flipped byte in a pack is caught, naming the pack, and the restore
// fails as corrupt.
func TestDamagedPackIsCaught(t *testing.T) {
	s, root, _ := newStore(t)
	m := backup(t, s, "one", files{"db/t.ibd": random(2 << 20)})
	var pack string
	filepath.Walk(filepath.Join(root, "dedup", "packs"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			pack = p
		}
		return err
	})
	data, err := os.ReadFile(pack)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x40
	if err := os.WriteFile(pack, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = restore(s, m)
	if !archive.IsCorrupt(err) || !strings.Contains(err.Error(), filepath.Base(pack)) {
		t.Errorf("restore from a damaged pack: %v; want corruption naming %s", err, filepath.Base(pack))
	}
}

// A backup whose budget cannot hold the store's whole index reads the
// newest index objects it can, says so, and stores again what it does not
// know: the store grows, nothing is lost, every backup restores.
func TestBudgetStoresAgainAndLosesNothing(t *testing.T) {
	s, root, _ := newStore(t)
	fs := files{"db/t.ibd": random(2 << 20), "db/u.ibd": random(1 << 20)}
	one := backup(t, s, "one", fs)
	before := sizeOf(t, filepath.Join(root, "dedup"))
	backup(t, s, "two", fs)
	if grown := sizeOf(t, filepath.Join(root, "dedup")) - before; grown > 64<<10 {
		t.Fatalf("a second backup of the same files with no budget stored %d bytes of blocks", grown)
	}
	var notes strings.Builder
	s.Budget, s.Notes = 8*16, &notes
	before = sizeOf(t, filepath.Join(root, "dedup"))
	three := backup(t, s, "three", fs)
	if grown := sizeOf(t, filepath.Join(root, "dedup")) - before; grown < 1<<20 {
		t.Errorf("a backup whose budget holds 8 names stored %d bytes of blocks again; want most of the 3 MiB", grown)
	}
	if !strings.Contains(notes.String(), "stored again") {
		t.Errorf("notes %q do not say that blocks are stored again", notes.String())
	}
	for _, m := range []*archive.Manifest{one, three} {
		got, err := restore(s, m)
		if err != nil || !maps.EqualFunc(got, fs, bytes.Equal) {
			t.Errorf("backup %s restored: %v, files equal: %v", m.ID, err, maps.EqualFunc(got, fs, bytes.Equal))
		}
	}
}

// A stream's digest is its recipe's, so what proves a restored block is
// its name: blocks that an index points at each other's bytes, with
// every CRC-32C right, are caught by the name each is checked against.
func TestForgedIndexIsCaughtByNames(t *testing.T) {
	s, root, _ := newStore(t)
	m := backup(t, s, "one", files{"db/t.ibd": random(2 << 20)})
	for _, st := range m.Streams {
		if st.Digest != st.Index.Digest {
			t.Errorf("stream %s: digest %s, its recipe's %s", st.Name, st.Digest, st.Index.Digest)
		}
	}
	idx, err := filepath.Glob(filepath.Join(root, "dedup", "index", "*"))
	if err != nil || len(idx) != 1 {
		t.Fatalf("index objects %v (%v), want one", idx, err)
	}
	data, err := os.ReadFile(idx[0])
	if err != nil {
		t.Fatal(err)
	}
	if data, err = dedup.SwapBlocks(data); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(idx[0], data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = restore(s, m)
	if !archive.IsCorrupt(err) || !strings.Contains(err.Error(), "does not match its name") {
		t.Errorf("restore through a forged index: %v; want the block caught by its name", err)
	}
}

// The files of a deduplicated backup get XXH3-128 digests of their
// content (the keyed names prove every block; these check that the blocks
// were put back together as cut), the manifest says so, and a reader
// checks them: a file whose digest is another's fails the restore.
func TestFilesDigestsCheckTheReassembly(t *testing.T) {
	s, _, _ := newStore(t)
	fs := files{"db/t.ibd": random(3 << 20), "db/u.ibd": random(2<<20 + 5), "db/t.frm": random(900)}
	m := backup(t, s, "one", fs)
	if m.FileHash != archive.HashXXH3 || m.FileDigests() != archive.HashXXH3 {
		t.Fatalf("manifest's file hash %q (%s); want %s", m.FileHash, m.FileDigests(), archive.HashXXH3)
	}
	if len(m.Files) != len(fs) {
		t.Fatalf("%d files recorded, want %d", len(m.Files), len(fs))
	}
	for _, f := range m.Files {
		sum := xxh3.Hash128(fs[f.Path]).Bytes()
		if want := fmt.Sprintf("xxh3:%x", sum[:]); f.Digest != want {
			t.Errorf("file %s: digest %s, want %s", f.Path, f.Digest, want)
		}
	}
	data, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := archive.ParseManifest(data); err != nil {
		t.Fatalf("the manifest does not parse: %v", err)
	}
	if got, err := restore(s, m); err != nil || !maps.EqualFunc(got, fs, bytes.Equal) {
		t.Fatalf("restore: %v (files equal: %v)", err, maps.EqualFunc(got, fs, bytes.Equal))
	}
	m.Files[0].Digest, m.Files[1].Digest = m.Files[1].Digest, m.Files[0].Digest
	if _, err := restore(s, m); !archive.IsCorrupt(err) || !strings.Contains(err.Error(), "content digest") {
		t.Errorf("restore with two files' digests swapped: %v; want a content digest mismatch", err)
	}
}

// The first recipes (recipeMagicV1) held each frame's CRC-32C: a backup
// whose recipes are of that format restores, and a frame made again that
// its recipe's CRC-32C contradicts is damage.
func TestRecipesOfTheFirstFormatAreRead(t *testing.T) {
	s, _, _ := newStore(t)
	fs := files{"db/t.ibd": random(3 << 20), "db/t.frm": random(900), "ib_logfile0": random(70 << 10)}
	m := backup(t, s, "one", fs)
	ctx := context.Background()
	in := dedup.Input{Store: s, Dir: "backups/one"}
	rewrite := func(i int, crcs []uint32) {
		t.Helper()
		data, err := archive.GetSmall(ctx, s.Backend, in.Dir, m.Streams[i].Index)
		if err != nil {
			t.Fatal(err)
		}
		if data, err = dedup.RecipeV1(data, crcs); err != nil {
			t.Fatal(err)
		}
		obj, err := archive.PutSmall(ctx, s.Backend, in.Dir, dedup.RecipeName(i), data, m.Hash)
		if err != nil {
			t.Fatal(err)
		}
		m.Streams[i].Index, m.Streams[i].Digest = obj, obj.Digest
	}
	crcs := make([][]uint32, len(m.Streams))
	damaged := -1
	for i, st := range m.Streams {
		src, err := in.OpenStream(ctx, i, st)
		if err != nil {
			t.Fatal(err)
		}
		for {
			_, buf, err := src.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			crcs[i] = append(crcs[i], crc32.Checksum(buf, crc32.MakeTable(crc32.Castagnoli)))
			archive.ReleaseFrameBuffer(buf)
		}
		src.Close()
		rewrite(i, crcs[i])
		if damaged < 0 && len(crcs[i]) > 1 {
			damaged = i
		}
	}
	if got, err := restore(s, m); err != nil || !maps.EqualFunc(got, fs, bytes.Equal) {
		t.Fatalf("a backup of first-format recipes restored: %v, files equal: %v", err, maps.EqualFunc(got, fs, bytes.Equal))
	}
	if damaged < 0 {
		t.Fatal("no stream has two frames")
	}
	crcs[damaged][1]++
	rewrite(damaged, crcs[damaged])
	_, err := restore(s, m)
	if !archive.IsCorrupt(err) || !strings.Contains(err.Error(), "frame 1: made again from its blocks it has CRC-32C") {
		t.Errorf("a first-format recipe whose frame 1's CRC-32C is wrong: %v; want that frame named as damaged", err)
	}
}

// A recipe is stored compressed: the chunk headers of many small files
// repeat their paths, which a raw recipe keeps once per chunk.
func TestRecipesAreStoredCompressed(t *testing.T) {
	s, _, _ := newStore(t)
	fs := files{}
	for i := range 300 {
		fs[fmt.Sprintf("tenant_%04d/a_table_with_a_long_name_%04d.ibd", i/100, i)] = random(2 << 10)
	}
	m := backup(t, s, "many", fs)
	for _, st := range m.Streams {
		data, err := archive.GetSmall(context.Background(), s.Backend, "backups/many", st.Index)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := dedup.RecipeSize(data)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(data, []byte("BSDDZ001")) || len(data)*2 > raw {
			t.Errorf("stream %s: a recipe of %d bytes stored as %d (%.8q...): want it compressed to under half", st.Name, raw, len(data), data)
		}
	}
	if got, err := restore(s, m); err != nil || !maps.EqualFunc(got, fs, bytes.Equal) {
		t.Errorf("restored: %v, files equal: %v", err, maps.EqualFunc(got, fs, bytes.Equal))
	}
}

// A recipe or an index object of a later format than this version reads
// (a newer backstream wrote it) is said to be that, not damage: a backup
// it cannot read is not DAMAGED; one of an unknown kind or an older
// version that never existed is damage.
func TestObjectsOfANewerFormatAreNotDamage(t *testing.T) {
	ctx := context.Background()
	s, root, _ := newStore(t)
	fs := files{"db/t.ibd": random(1 << 20)}
	m := backup(t, s, "one", fs)
	dir := "backups/one"
	data, err := archive.GetSmall(ctx, s.Backend, dir, m.Streams[0].Index)
	if err != nil {
		t.Fatal(err)
	}
	setRecipe := func(b []byte) {
		t.Helper()
		obj, err := archive.PutSmall(ctx, s.Backend, dir, m.Streams[0].Index.Name, b, m.Hash)
		if err != nil {
			t.Fatal(err)
		}
		m.Streams[0].Index, m.Streams[0].Digest = obj, obj.Digest
	}
	with := func(magic string) []byte { return append([]byte(magic), data[8:]...) }
	for _, c := range []struct {
		magic string
		newer bool
	}{{"BSDDZ002", true}, {"BSDDR003", true}, {"BSDDH002", true}, {"BSDDR000", false}, {"BSDDX001", false}} {
		setRecipe(with(c.magic))
		_, err := restore(s, m)
		switch {
		case c.newer && (err == nil || archive.IsCorrupt(err) || !strings.Contains(err.Error(), "a newer backstream wrote")):
			t.Errorf("a recipe of format %s: %v; want it said to be a newer version's, not damage", c.magic, err)
		case !c.newer && !archive.IsCorrupt(err):
			t.Errorf("a recipe of format %s: %v; want damage", c.magic, err)
		}
	}
	setRecipe(data)
	if got, err := restore(s, m); err != nil || !maps.EqualFunc(got, fs, bytes.Equal) {
		t.Fatalf("restored again with its recipe: %v", err)
	}
	idx, err := filepath.Glob(filepath.Join(root, "dedup", "index", "*.idx"))
	if err != nil || len(idx) == 0 {
		t.Fatalf("index objects: %v %v", idx, err)
	}
	ix, err := os.ReadFile(idx[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(idx[0], append([]byte("BSDDI002"), ix[8:]...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := restore(s, m); err == nil || archive.IsCorrupt(err) || !strings.Contains(err.Error(), "BSDDI002, which a newer backstream wrote") {
		t.Errorf("an index object of format BSDDI002: %v; want it said to be a newer version's, not damage", err)
	}
}

// In an encrypted repository nothing stored reveals a block: every
// object of the store is an age file, and neither a block's plain BLAKE3
// nor its keyed name appears in any stored byte; the backup restores.
func TestEncryptedStoreRevealsNoBlock(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	inner, err := local.New(root)
	if err != nil {
		t.Fatal(err)
	}
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	b := crypt.New(inner, crypt.Keys{Recipients: []age.Recipient{id.Recipient()}, Identities: []age.Identity{id}, Public: []string{id.Recipient().String()}}, crypt.Options{})
	if _, _, err := b.Encrypt(ctx); err != nil {
		t.Fatal(err)
	}
	if err := dedup.Init(ctx, b); err != nil {
		t.Fatal(err)
	}
	s, err := dedup.Open(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	block := random(64 << 10)
	fs := files{"db/t.ibd": append(bytes.Clone(block), random(100<<10)...)}
	m := backup(t, s, "one", fs)
	plain := blake3.Sum256(block)
	keyed := dedup.NameOf(s, block)
	if bytes.Equal(plain[:], keyed[:]) {
		t.Fatal("a block's name is its plain BLAKE3")
	}
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !strings.HasSuffix(p, crypt.Suffix) {
			t.Errorf("%s is stored plain", p)
		}
		for _, h := range [][]byte{plain[:], keyed[:], plain[:8], keyed[:8]} {
			if bytes.Contains(data, h) {
				t.Errorf("%s holds a block's hash %x", p, h)
			}
		}
		return nil
	})
	got, err := restore(s, m)
	if err != nil || !bytes.Equal(got["db/t.ibd"], fs["db/t.ibd"]) {
		t.Errorf("restore from the encrypted store: %v", err)
	}
}

// keepOnly collects the store of root as if backup m alone stayed, and
// returns what Collect says, the names m holds, and the bytes it freed.
func keepOnly(t *testing.T, s *dedup.Store, root string, m *archive.Manifest) (dedup.Collected, *dedup.Live, int64) {
	t.Helper()
	ctx := context.Background()
	before := sizeOf(t, filepath.Join(root, "dedup"))
	live := &dedup.Live{}
	if err := s.LiveNames(ctx, "backups/"+m.ID, m, live); err != nil {
		t.Fatal(err)
	}
	c, err := s.Collect(ctx, live)
	if err != nil {
		t.Fatal(err)
	}
	after := sizeOf(t, filepath.Join(root, "dedup"))
	t.Logf("collected %+v: %d bytes before, %d after", c, before, after)
	return c, live, before - after
}

// Collect keeps what live names and frees the rest: a backup's blocks
// that no kept backup names go with their packs (a pack mostly garbage
// is rewritten), the kept backup restores exactly, and a second Collect
// has nothing to do.
func TestCollectFreesWhatNoBackupNames(t *testing.T) {
	ctx := context.Background()
	s, root, _ := newStore(t)
	shared := random(3 << 20)
	one := backup(t, s, "one", files{"db/a.ibd": shared, "db/b.ibd": random(4 << 20), "db/c.ibd": random(2 << 20)})
	twoFiles := files{"db/a.ibd": shared, "db/d.ibd": random(1 << 20)}
	two := backup(t, s, "two", twoFiles)
	c, live, freed := keepOnly(t, s, root, two)
	if freed < 5<<20 || c.DroppedEntries == 0 {
		t.Errorf("Collect freed %d bytes (%+v): want the 6 MiB only backup one named", freed, c)
	}
	s2, err := dedup.Open(ctx, s.Backend)
	if err != nil {
		t.Fatal(err)
	}
	got, err := restore(s2, two)
	if err != nil {
		t.Fatalf("restore of the kept backup: %v", err)
	}
	for p, want := range twoFiles {
		if !bytes.Equal(got[p], want) {
			t.Errorf("file %s of the kept backup differs after Collect", p)
		}
	}
	if _, err := restore(s2, one); !archive.IsCorrupt(err) {
		t.Errorf("restore of the collected backup: %v; want its blocks missing", err)
	}
	again, err := s2.Collect(ctx, live)
	if err != nil || again.Packs != 0 || again.DroppedEntries != 0 || again.Repacked != 0 {
		t.Errorf("a second Collect: %+v, %v; want nothing to do", again, err)
	}
	if again.Bytes != 0 {
		t.Errorf("a second Collect freed %d bytes", again.Bytes)
	}
}

// A pack whose blocks that stay take less than half of it is rewritten:
// the blocks that stay move to a new pack and the old one goes.
func TestCollectRepacksSparsePacks(t *testing.T) {
	s, root, _ := newStore(t)
	x := random(4 << 20)
	backup(t, s, "one", files{"db/x.ibd": x})
	y := bytes.Clone(x)
	copy(y[1<<20:], random(3<<20))
	two := backup(t, s, "two", files{"db/x.ibd": y})
	c, _, freed := keepOnly(t, s, root, two)
	if c.Repacked != 1 || freed < 2<<20 {
		t.Errorf("Collect %+v freed %d bytes: want the first pack rewritten with its live 1 MiB, 3 MiB freed", c, freed)
	}
	got, err := restore(s, two)
	if err != nil || !bytes.Equal(got["db/x.ibd"], y) {
		t.Errorf("restore of the kept backup after the repack: %v", err)
	}
}

// A stream whose recipe passes what a stream holds before it stores a
// part (some 25 GiB; here a few frames) stores it in parts, which a head
// names, and the index of its new blocks likewise (past 16 GiB of them;
// here 20 blocks): no stream has a size limit, and neither is held
// whole. Such a backup restores whole and file by file (frames of parts
// read on their own), a second night shares its blocks, collecting keeps
// what it names, and a damaged, missing or swapped part is damage named.
func TestLongStreamsRecipeIsStoredInParts(t *testing.T) {
	defer dedup.SetPartTarget(3000)()
	defer dedup.SetPackTarget(1 << 20)()
	defer dedup.SetIndexPartBlocks(20)()
	s, root, _ := newStore(t)
	ctx := context.Background()
	night := files{"db/a.ibd": random(6 << 20), "db/b.ibd": random(5<<20 + 4096), "db/c.log": random(1<<20 + 123), "db/d.frm": random(999)}
	one := backup(t, s, "one", night)
	parts, err := filepath.Glob(filepath.Join(root, "backups", "one", "recipe", "*-*.rcp"))
	if err != nil || len(parts) < 4 {
		t.Fatalf("recipe parts stored: %v %v; want several", parts, err)
	}
	if ix, err := filepath.Glob(filepath.Join(root, "dedup", "index", "one-*-*.idx")); err != nil || len(ix) < 2 {
		t.Fatalf("index objects stored before a stream's last: %v %v; want several", ix, err)
	}
	heads := 0
	for _, st := range one.Streams {
		data, err := archive.GetSmall(ctx, s.Backend, "backups/one", st.Index)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.HasPrefix(data, []byte("BSDDH001")) {
			heads++
		}
	}
	if heads == 0 {
		t.Fatal("no stream's record names a head of parts")
	}
	if got, err := restore(s, one); err != nil || !maps.EqualFunc(got, night, bytes.Equal) {
		t.Fatalf("restore of a backup of recipes in parts: %v (files equal: %v)", err, maps.EqualFunc(got, night, bytes.Equal))
	}
	// Files one after another in one stream, as mariabackup --parallel=1
	// copies them: a file alone is read from frames of later parts.
	order := []string{"db/a.ibd", "db/b.ibd", "db/c.log", "db/d.frm"}
	w := writeOneStream(t, s, "seq", nil)
	for _, p := range order {
		for _, raw := range chunks(t, files{p: night[p]}, 300<<10) {
			ch, _, err := xbstream.DecodeChunk(raw)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Add(&ch, raw); err != nil {
				t.Fatal(err)
			}
		}
	}
	res, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	seq := &archive.Manifest{Format: archive.FormatVersion, ID: "seq", Kind: archive.KindPhysical, Codec: "none", Hash: archive.DefaultHash}
	seq.Complete(res)
	for _, p := range order {
		sink := &memSink{files: files{}}
		err := archive.Read(ctx, archive.ReadOptions{Input: dedup.Input{Store: s, Dir: "backups/seq"}, Manifest: seq, Sink: sink,
			Only: func(q string) bool { return q == p }})
		if err != nil || !bytes.Equal(sink.files[p], night[p]) || len(sink.files) != 1 {
			t.Errorf("restore of %s alone: %v (equal: %v, %d files)", p, err, bytes.Equal(sink.files[p], night[p]), len(sink.files))
		}
	}

	next := maps.Clone(night)
	next["db/a.ibd"] = bytes.Clone(night["db/a.ibd"])
	copy(next["db/a.ibd"][3<<20:], random(100))
	before := sizeOf(t, filepath.Join(root, "dedup", "packs"))
	two := backup(t, s, "two", next)
	// The night's change and the blocks a cut ends early on each side:
	// far less than the night's 12 MiB.
	if grew := sizeOf(t, filepath.Join(root, "dedup", "packs")) - before; grew > 4<<20 {
		t.Errorf("the second night stored %d bytes of packs; want a small part of its 12 MiB", grew)
	}
	if c, live, _ := keepOnly(t, s, root, two); live.Len() == 0 || c.LiveBlocks != int64(live.Len()) || c.DroppedEntries == 0 {
		t.Fatalf("collected %+v keeping the %d blocks the second night's parts name; want those kept and the first night's own dropped", c, live.Len())
	}
	if got, err := restore(s, two); err != nil || !maps.EqualFunc(got, next, bytes.Equal) {
		t.Fatalf("restore of the second night after the first was collected: %v (files equal: %v)", err, maps.EqualFunc(got, next, bytes.Equal))
	}
	// The index is now parts of one Collect: another has nothing to do.
	collected, err := filepath.Glob(filepath.Join(root, "dedup", "index", "collected-*.idx"))
	if err != nil || len(collected) < 2 {
		t.Fatalf("collected index parts: %v %v; want several", collected, err)
	}
	if again, err := s.Collect(ctx, liveOf(t, s, two)); err != nil || again.DroppedEntries != 0 || again.Packs != 0 {
		t.Fatalf("a second Collect: %+v %v; want nothing to do", again, err)
	}
	if now, _ := filepath.Glob(filepath.Join(root, "dedup", "index", "*.idx")); !slices.Equal(now, collected) {
		t.Errorf("a second Collect with nothing to drop wrote the index again: %v, was %v", now, collected)
	}

	parts, err = filepath.Glob(filepath.Join(root, "backups", "two", "recipe", "*-*.rcp"))
	if err != nil || len(parts) < 2 {
		t.Fatalf("parts of the second night: %v %v", parts, err)
	}
	part, name := parts[1], "recipe/"+filepath.Base(parts[1])
	good, err := os.ReadFile(part)
	if err != nil {
		t.Fatal(err)
	}
	other, err := os.ReadFile(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what   string
		damage func() error
	}{
		{"a flipped byte", func() error {
			bad := bytes.Clone(good)
			bad[len(bad)/2] ^= 1
			return os.WriteFile(part, bad, 0o644)
		}},
		{"missing", func() error { return os.Remove(part) }},
		{"swapped for another", func() error { return os.WriteFile(part, other, 0o644) }},
	} {
		if err := c.damage(); err != nil {
			t.Fatal(err)
		}
		_, err := restore(s, two)
		if !archive.IsCorrupt(err) || !strings.Contains(err.Error(), name) {
			t.Errorf("a recipe part %s: restore says %v; want damage naming %s", c.what, err, name)
		}
		if err := os.WriteFile(part, good, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A backup that fails removes the parts of recipes and the index objects
// it stored as it went with the rest of what it stored.
func TestFailedBackupRemovesWhatItStoredAsItWent(t *testing.T) {
	defer dedup.SetPartTarget(3000)()
	defer dedup.SetPackTarget(1 << 20)()
	defer dedup.SetIndexPartBlocks(20)()
	s, root, _ := newStore(t)
	w := writeOneStream(t, s, "failed", files{"db/t.ibd": random(8 << 20)})
	// Parts are stored as the stream's blocks are named, on their own.
	var parts, ix []string
	for deadline := time.Now().Add(10 * time.Second); (len(parts) == 0 || len(ix) == 0) && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		parts, _ = filepath.Glob(filepath.Join(root, "backups", "failed", "recipe", "*-*.rcp"))
		ix, _ = filepath.Glob(filepath.Join(root, "dedup", "index", "failed-*-*.idx"))
	}
	if len(parts) == 0 || len(ix) == 0 {
		t.Fatalf("stored while the stream was written: recipe parts %v, index objects %v; want both", parts, ix)
	}
	w.Abort(errors.New("the backup failed"))
	if n := sizeOf(t, filepath.Join(root, "backups")); n != 0 {
		t.Errorf("the failed backup left %d bytes under backups/", n)
	}
	if n := sizeOf(t, filepath.Join(root, "dedup")); n != sizeOf(t, filepath.Join(root, "dedup", "key")) {
		t.Errorf("the failed backup left %d bytes under dedup/", n)
	}
}

// writeOneStream starts a backup of one stream into s and adds fs to it.
func writeOneStream(t *testing.T, s *dedup.Store, id string, fs files) *archive.Writer {
	t.Helper()
	c, err := codec.Parse("none")
	if err != nil {
		t.Fatal(err)
	}
	w, err := archive.NewWriter(context.Background(), archive.WriterOptions{
		Output: dedup.NewOutput(s, "backups/"+id, archive.DefaultHash), Streams: 1, Codec: c, FrameSize: 1 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range chunks(t, fs, 300<<10) {
		ch, _, err := xbstream.DecodeChunk(raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Add(&ch, raw); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// countingOpens counts the ranged reads of packs, and the reads of
// index objects.
type countingOpens struct {
	storage.Backend
	packs, index atomic.Int64
}

func (c *countingOpens) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	if strings.HasPrefix(name, "dedup/packs/") {
		c.packs.Add(1)
	}
	if strings.HasPrefix(name, "dedup/index/") {
		c.index.Add(1)
	}
	return c.Backend.Open(ctx, name, off, length)
}

// A Read of several streams through NewInput reads each index object
// once, not once a stream (an object store's index of a large repository
// is hundreds of MB), whole and for some files alone; an Input without a
// plan reads it for each stream it opens.
func TestReadLocatesEveryStreamsBlocksAtOnce(t *testing.T) {
	s, root, b := newStore(t)
	want := files{"db/a.ibd": random(2 << 20), "db/b.ibd": random(2 << 20), "db/c.ibd": random(2<<20 + 5)}
	m := backup(t, s, "one", want)
	objects, err := filepath.Glob(filepath.Join(root, "dedup", "index", "*.idx"))
	if err != nil || len(objects) < 3 {
		t.Fatalf("index objects: %v %v; want one per stream", objects, err)
	}
	counting := &countingOpens{Backend: b}
	s2, err := dedup.Open(context.Background(), counting)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what  string
		in    archive.Input
		only  func(string) bool
		reads int
	}{
		{"whole", dedup.NewInput(s2, "backups/one", m), nil, len(objects)},
		{"two files", dedup.NewInput(s2, "backups/one", m), func(p string) bool { return p != "db/b.ibd" }, len(objects)},
		{"whole, each stream alone", dedup.Input{Store: s2, Dir: "backups/one"}, nil, len(objects) * len(m.Streams)},
	} {
		counting.index.Store(0)
		sink := &memSink{files: files{}}
		err := archive.Read(context.Background(), archive.ReadOptions{Input: c.in, Manifest: m, Sink: sink, Only: c.only})
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		for p, data := range want {
			if (c.only == nil || c.only(p)) != bytes.Equal(sink.files[p], data) {
				t.Errorf("%s: file %s restored %v", c.what, p, bytes.Equal(sink.files[p], data))
			}
		}
		if n := counting.index.Load(); n != int64(c.reads) {
			t.Errorf("%s: %d reads of the %d index objects; want %d", c.what, n, len(objects), c.reads)
		}
	}
}

// A restore reads frames that follow each other in a pack in one ranged
// read (up to 2 MiB): an object store's round trips, not one a frame.
func TestRestoreReadsFollowingFramesAtOnce(t *testing.T) {
	s, root, b := newStore(t)
	want := files{"db/t.ibd": random(12 << 20)}
	m := backup(t, s, "one", want)
	counting := &countingOpens{Backend: b}
	s2, err := dedup.Open(context.Background(), counting)
	if err != nil {
		t.Fatal(err)
	}
	got, err := restore(s2, m)
	if err != nil || !bytes.Equal(got["db/t.ibd"], want["db/t.ibd"]) {
		t.Fatalf("restore: %v (the file equal: %v)", err, bytes.Equal(got["db/t.ibd"], want["db/t.ibd"]))
	}
	packs, err := filepath.Glob(filepath.Join(root, "dedup", "packs", "*", "*"))
	if err != nil || len(packs) == 0 {
		t.Fatalf("packs: %v %v", packs, err)
	}
	// 12 MiB of random data, read in runs of 2 MiB (a run ends at a
	// pack's end too).
	stored := sizeOf(t, filepath.Join(root, "dedup", "packs"))
	if n := counting.packs.Load(); n == 0 || n > stored/(2<<20)+int64(len(packs))+1 {
		t.Errorf("%d ranged reads of %d packs holding %d bytes; want about one each 2 MiB", n, len(packs), stored)
	}
}

// Packs are written on as their frames come and complete while the next
// fills: a pack whose store fails, after one that was stored and while
// another completes, fails the backup, and what the backup stored is
// removed, nothing of it left behind.
func TestFailedPackStoreFailsTheBackup(t *testing.T) {
	s, fb, root := faultyStore(t)
	// Each pack's Put takes a little longer to complete than a pack takes
	// to fill, so the third fails while the second completes.
	fb.Add(faulty.Fault{Op: faulty.OpPut, Name: "dedup/packs/", Delay: 50 * time.Millisecond, After: 32 << 20, Times: 2})
	fb.Add(faulty.Fault{Op: faulty.OpPut, Name: "dedup/packs/", After: 1 << 20, Times: 1, Skip: 2})
	w := writeOneStream(t, s, "failed", nil)
	failed := func() error {
		for _, raw := range chunks(t, files{"db/t.ibd": random(100 << 20)}, 1<<20) {
			ch, _, err := xbstream.DecodeChunk(raw)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Add(&ch, raw); err != nil {
				return err
			}
		}
		_, err := w.Close()
		return err
	}()
	if fb.Fired() < 3 {
		t.Fatalf("%d faults fired: the third pack was never stored, the test proves nothing", fb.Fired())
	}
	if failed == nil || !strings.Contains(failed.Error(), "dedup/packs/") {
		t.Fatalf("a backup whose third pack failed to store: %v; want a failure naming the pack", failed)
	}
	w.Abort(failed)
	if n := sizeOf(t, filepath.Join(root, "dedup")); n != sizeOf(t, filepath.Join(root, "dedup", "key")) {
		t.Errorf("the failed backup left %d bytes under dedup/", n)
	}
}

// The table a restore keeps of where each block it needs is comes out of
// its --memory: one that does not fit half of it is refused before any
// block is looked for, naming the --memory it needs; with that, the
// Read goes on (here to the blocks, which this backup never stored).
func TestRestoresLocationsAreWithinItsMemory(t *testing.T) {
	s, _, b := newStore(t)
	m := backup(t, s, "many", files{"db/t.ibd": random(1 << 10)})
	// Stream 0's recipe names 320,000 blocks: 28 bytes of the table
	// each and more, where half of 16 MiB holds 300,000.
	const blocks = 320_000
	names := make([]dedup.Name, blocks)
	for i := range names {
		binary.LittleEndian.PutUint64(names[i][:], uint64(i)*0x9e3779b97f4a7c15)
		binary.LittleEndian.PutUint64(names[i][8:], uint64(i))
	}
	data, frames, err := dedup.RecipeNaming(names)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := archive.PutSmall(context.Background(), b, "backups/many", dedup.RecipeName(0), data, archive.DefaultHash)
	if err != nil {
		t.Fatal(err)
	}
	m.Streams[0].Index, m.Streams[0].Digest, m.Streams[0].Frames, m.Streams[0].RawSize = obj, obj.Digest, frames, 8*blocks

	read := func(budget int64) error {
		return archive.Read(context.Background(), archive.ReadOptions{Input: dedup.NewInput(s, "backups/many", m), Manifest: m,
			Sink: &memSink{files: files{}}, Memory: archive.NewMemory(budget)})
	}
	err = read(archive.MinMemory)
	var pe *archive.PlanMemoryError
	if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), fmt.Sprintf("locating the %d blocks backup many needs takes ", blocks)) {
		t.Fatalf("a table of %d blocks in a budget of 16 MiB: %v; want it refused", blocks, err)
	}
	if pe.Need < blocks*28 {
		t.Errorf("the table counted as %d bytes, want at least %d", pe.Need, blocks*28)
	}
	err = read(2*pe.Need + 1<<20)
	if err == nil || !strings.Contains(err.Error(), "backup many needs block ") {
		t.Fatalf("with the --memory the error named: %v; want the Read to look for the blocks", err)
	}
}

type byteCounter struct{ in, out atomic.Int64 }

func (c *byteCounter) In(n int64)  { c.in.Add(n) }
func (c *byteCounter) Out(n int64) { c.out.Add(n) }

// A backup's output, as its progress and summary say it ("... out (ratio
// ...)"), is what it stored: the new blocks' packs, index and recipe,
// not the stream's bytes; a night that stores nothing new says so.
func TestBackupCountsWhatItStoredAsItsOutput(t *testing.T) {
	s, _, _ := newStore(t)
	data := files{"db/a.ibd": random(3 << 20), "db/zero.ibd": make([]byte, 4<<20)}
	c, err := codec.Parse("none")
	if err != nil {
		t.Fatal(err)
	}
	for night, id := range []string{"one", "two"} {
		var n byteCounter
		w, err := archive.NewWriter(context.Background(), archive.WriterOptions{
			Output:  dedup.NewOutput(s, "backups/"+id, archive.DefaultHash),
			Streams: 2, Codec: c, FrameSize: 1 << 20, Counter: &n,
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range chunks(t, data, 300<<10) {
			ch, _, err := xbstream.DecodeChunk(raw)
			if err == nil {
				err = w.Add(&ch, raw)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		res, err := w.Close()
		if err != nil {
			t.Fatal(err)
		}
		var stored int64
		for _, st := range res.Streams {
			stored += st.Stored
		}
		if got := n.out.Load(); got != stored {
			t.Errorf("night %d: %d bytes counted out, want the %d the streams stored", night+1, got, stored)
		}
		// night 1 stores the random file's 3 MiB and a block of zeros;
		// night 2 its recipes and nothing else
		if limit := []int64{3<<20 + 1<<19, 64 << 10}[night]; stored > limit {
			t.Errorf("night %d stored %d bytes, want at most %d", night+1, stored, limit)
		}
	}
}
