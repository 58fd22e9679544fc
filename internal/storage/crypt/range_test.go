package crypt

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"

	"filippo.io/age"

	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/faulty"
	"github.com/backstream/backstream/internal/storage/local/localtest"
	"github.com/backstream/backstream/internal/storage/s3"
	"github.com/backstream/backstream/internal/storage/s3/s3test"
)

// counting counts the requests the backend it wraps serves and the bytes
// read from what its Opens return.
type counting struct {
	storage.Backend
	requests, bytes atomic.Int64
}

func (c *counting) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	c.requests.Add(1)
	rc, err := c.Backend.Open(ctx, name, off, length)
	if err != nil {
		return nil, err
	}
	return countingReader{rc, c}, nil
}

func (c *counting) Stat(ctx context.Context, name string) (storage.Info, error) {
	c.requests.Add(1)
	return c.Backend.Stat(ctx, name)
}

func (c *counting) List(ctx context.Context, prefix string) ([]storage.Info, error) {
	c.requests.Add(1)
	return c.Backend.List(ctx, prefix)
}

func (c *counting) reset() {
	c.requests.Store(0)
	c.bytes.Store(0)
}

type countingReader struct {
	io.ReadCloser
	c *counting
}

func (r countingReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.c.bytes.Add(int64(n))
	return n, err
}

// randomBytes returns n bytes that do not compress, the same for a seed.
func randomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)})
	_, _ = r.Read(b)
	return b
}

// storeEncrypted puts plain as the object "obj" encrypted to a new key
// on store, and returns the store counted, a Backend that reads it with
// that key, and the stored bytes.
func storeEncrypted(t testing.TB, store storage.Backend, plain []byte) (inner *counting, b *Backend, stored []byte) {
	t.Helper()
	ctx := context.Background()
	inner = &counting{Backend: store}
	id, _ := age.GenerateX25519Identity()
	w := New(inner, keysFor(id), Options{})
	if _, _, err := w.Encrypt(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Put(ctx, "obj", bytes.NewReader(plain)); err != nil {
		t.Fatal(err)
	}
	rc, err := inner.Open(ctx, "obj"+Suffix, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if stored, err = io.ReadAll(rc); err != nil {
		t.Fatal(err)
	}
	inner.reset()
	return inner, New(inner, keysFor(id), Options{}), stored
}

// readRange reads length bytes of obj from off.
func readRange(b storage.Backend, off, length int64) ([]byte, error) {
	rc, err := b.Open(context.Background(), "obj", off, length)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// chunkAt is the offset in stored of the chunk i of the payload of an
// age file of plainSize bytes.
func chunkAt(stored []byte, plainSize, i int) int {
	chunks := max(1, (plainSize+plainChunk-1)/plainChunk)
	return len(stored) - plainSize - chunks*chunkTag + i*(plainChunk+chunkTag)
}

// A ranged read gives the plain bytes of the range, whichever chunks it
// starts and ends in, and fewer past the end, on a local and on an S3
// store.
func TestRangedRead(t *testing.T) {
	t.Run("local", func(t *testing.T) { testRangedRead(t, localtest.New(t)) })
	t.Run("s3", func(t *testing.T) {
		srv := s3test.Start(t)
		store, err := s3.New(t.Context(), s3.Config{Bucket: srv.Bucket, Endpoint: srv.Endpoint, Region: "us-east-1"})
		if err != nil {
			t.Fatal(err)
		}
		testRangedRead(t, store)
	})
}

func testRangedRead(t *testing.T, store storage.Backend) {
	size := 3<<20 + 12345
	plain := randomBytes(size, 1)
	_, b, _ := storeEncrypted(t, store, plain)
	for _, tc := range []struct {
		name        string
		off, length int64
	}{
		{"whole", 0, -1},
		{"whole as a range", 0, int64(size)},
		{"first bytes", 0, 100},
		{"first chunk exactly", 0, 64 << 10},
		{"last byte of the first chunk", 65535, 1},
		{"from the last byte of the first chunk", 65535, 10},
		{"second chunk", 65536, 64 << 10},
		{"across chunks", 65537, 200000},
		{"middle", int64(size / 2), 1 << 20},
		{"to the end", 65537, -1},
		{"final chunk", int64(size - 100), 100},
		{"last byte", int64(size - 1), 1},
		{"past the end", int64(size - 1000), 5000},
		{"huge length", 10, 1 << 62},
		{"zero length", 100, 0},
		{"at the end", int64(size), 10},
		{"beyond the end", int64(size + 10), -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readRange(b, tc.off, tc.length)
			if err != nil {
				t.Fatal(err)
			}
			end := int64(size)
			if tc.length >= 0 && tc.length < end-min(tc.off, end) {
				end = tc.off + tc.length
			}
			if want := plain[min(tc.off, end):end]; !bytes.Equal(got, want) {
				t.Errorf("Open(%d, %d) read %d bytes, want %d (equal: %v)", tc.off, tc.length, len(got), len(want), bytes.Equal(got, want))
			}
		})
	}
	// Small reads, and reads of every size, give the same bytes.
	rc, err := b.Open(t.Context(), "obj", 65000, 300000)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if err := iotest.TestReader(rc, plain[65000:365000]); err != nil {
		t.Error(err)
	}
}

// A range of an encrypted object costs a few requests and about the
// stored bytes of its chunks, not the whole object: a Stat, the header,
// the final chunk (which authenticates the size), and its chunks in one
// request.
func TestRangedReadFetchesLittle(t *testing.T) {
	size := 32<<20 + 777
	plain := randomBytes(size, 2)
	inner, b, stored := storeEncrypted(t, localtest.New(t), plain)
	for _, tc := range []struct {
		name        string
		off, length int64
		maxBytes    int64
		maxRequests int64
	}{
		// A 1 MiB range touches at most 17 chunks of 64 KiB + 16.
		{"1 MiB in the middle", 20<<20 + 12345, 1 << 20, 1<<20 + 1<<19 + 200<<10, 6},
		{"4 MiB at the end", int64(size - 4<<20), 4 << 20, 4<<20 + 1<<19 + 200<<10, 6},
		{"one byte", 7 << 20, 1, 200 << 10, 6},
		{"to the end", int64(size - 100000), -1, 300 << 10, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner.reset()
			got, err := readRange(b, tc.off, tc.length)
			if err != nil {
				t.Fatal(err)
			}
			end := int64(size)
			if tc.length >= 0 {
				end = min(end, tc.off+tc.length)
			}
			if !bytes.Equal(got, plain[tc.off:end]) {
				t.Fatal("the range read differs from the plain bytes")
			}
			fetched, requests := inner.bytes.Load(), inner.requests.Load()
			t.Logf("%d plain bytes: %d stored bytes fetched (%d in the object) in %d requests", len(got), fetched, len(stored), requests)
			if fetched > tc.maxBytes || requests > tc.maxRequests {
				t.Errorf("fetched %d bytes in %d requests, want at most %d in %d", fetched, requests, tc.maxBytes, tc.maxRequests)
			}
		})
	}
}

// A damaged chunk inside a range is damage naming the object; one
// outside it (but the final chunk, which is always read) is not read.
func TestRangedReadDamage(t *testing.T) {
	ctx := t.Context()
	size := 20*plainChunk + 999
	plain := randomBytes(size, 3)
	inner, b, stored := storeEncrypted(t, localtest.New(t), plain)
	off, length := int64(5*plainChunk+100), int64(3*plainChunk)
	put := func(stored []byte) {
		t.Helper()
		if _, err := inner.Put(ctx, "obj"+Suffix, bytes.NewReader(stored)); err != nil {
			t.Fatal(err)
		}
	}
	flipped := func(chunk int) []byte {
		s := bytes.Clone(stored)
		s[chunkAt(stored, size, chunk)+1000] ^= 1
		return s
	}
	for _, chunk := range []int{5, 6, 8} {
		put(flipped(chunk))
		_, err := readRange(b, off, length)
		if !errors.Is(err, storage.ErrDamaged) || !strings.Contains(err.Error(), "obj"+Suffix) {
			t.Errorf("chunk %d flipped, inside the range: %v; want damage naming obj%s", chunk, err, Suffix)
		}
	}
	for _, chunk := range []int{0, 4, 9, 19} {
		put(flipped(chunk))
		got, err := readRange(b, off, length)
		if err != nil || !bytes.Equal(got, plain[off:off+length]) {
			t.Errorf("chunk %d flipped, outside the range: read %d bytes, %v; want the range", chunk, len(got), err)
		}
	}
	put(flipped(20))
	if _, err := readRange(b, off, length); !errors.Is(err, storage.ErrDamaged) {
		t.Errorf("final chunk flipped: %v; want damage", err)
	}
}

// A store that fails to give the bytes of a range fails the read with
// its error, which is no damage; after a transient failure the reader
// goes on where it stopped.
func TestRangedReadStoreFails(t *testing.T) {
	ctx := t.Context()
	errBroken := errors.New("store broke")
	store := faulty.New(localtest.New(t))
	id, _ := age.GenerateX25519Identity()
	b := encrypting(t, store, id)
	size := 40*plainChunk + 5
	plain := randomBytes(size, 6)
	if _, err := b.Put(ctx, "obj", bytes.NewReader(plain)); err != nil {
		t.Fatal(err)
	}
	off, length := int64(3*plainChunk+7), int64(20*plainChunk)
	want := plain[off : off+length]
	for _, f := range []faulty.Fault{
		{Op: faulty.OpStat, Err: errBroken},
		{Op: faulty.OpOpen, Err: errBroken},
		{Op: faulty.OpRead, After: 100, Err: errBroken},       // the header
		{Op: faulty.OpRead, After: 200 << 10, Err: errBroken}, // the chunks of the range
	} {
		store.Clear()
		store.Add(f)
		_, err := readRange(b, off, length)
		if !errors.Is(err, errBroken) || errors.Is(err, storage.ErrDamaged) {
			t.Errorf("%s fails after %d bytes: %v; want that failure, not damage", f.Op, f.After, err)
		}
	}
	store.Clear()
	fired := store.Fired()
	store.Add(faulty.Fault{Op: faulty.OpRead, After: 200 << 10, Err: storage.Transient(errBroken), Times: 2})
	rc, err := b.Open(ctx, "obj", off, length)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var got []byte
	buf := make([]byte, 100<<10)
	for failures := 0; ; {
		n, err := rc.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			if failures++; !storage.IsTransient(err) || failures > 2 {
				t.Fatalf("after %d bytes: %v", len(got), err)
			}
		}
	}
	if fired := store.Fired() - fired; fired != 2 || !bytes.Equal(got, want) {
		t.Errorf("read %d bytes (equal: %v) past %d transient failures, want the %d of the range past 2", len(got), bytes.Equal(got, want), fired, len(want))
	}
}

// A plain object under a covered name is read plainly, ranged or not.
func TestRangedReadPlainObject(t *testing.T) {
	ctx := t.Context()
	inner := localtest.New(t)
	plain := randomBytes(100000, 4)
	if _, err := inner.Put(ctx, "obj", bytes.NewReader(plain)); err != nil {
		t.Fatal(err)
	}
	id, _ := age.GenerateX25519Identity()
	got, err := readRange(New(inner, keysFor(id), Options{}), 70000, 20000)
	if err != nil || !bytes.Equal(got, plain[70000:90000]) {
		t.Errorf("ranged read of a plain object: %d bytes, %v", len(got), err)
	}
}

// Any range of an encrypted object reads as the same range of the plain
// one.
func FuzzRangedRead(f *testing.F) {
	size := 3*plainChunk + 4321
	plain := randomBytes(size, 5)
	_, b, _ := storeEncrypted(f, localtest.New(f), plain)
	for _, seed := range [][2]int64{{0, -1}, {0, 0}, {1, 65535}, {65535, 2}, {65536, 65536}, {int64(size - 1), 1}, {int64(size), 1}, {3, 1 << 62}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, off, length int64) {
		got, err := readRange(b, off, length)
		if off < 0 {
			if err == nil {
				t.Fatalf("Open(%d, %d) succeeded", off, length)
			}
			return
		}
		if err != nil {
			t.Fatalf("Open(%d, %d): %v", off, length, err)
		}
		start, end := min(off, int64(size)), int64(size)
		if length >= 0 && length < end-start {
			end = start + length
		}
		if !bytes.Equal(got, plain[start:end]) {
			t.Fatalf("Open(%d, %d) read %d bytes, want %d", off, length, len(got), end-start)
		}
	})
}
