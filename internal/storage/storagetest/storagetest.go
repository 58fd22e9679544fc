// Package storagetest is the conformance suite every storage.Backend must
// pass. It uses only the interface, so the local, S3 and TCP backends are
// held to one contract.
//
// Two points the interface leaves to the suite to fix:
//
//   - List's prefix is a plain string prefix, as in S3: "a/b" lists "a/b",
//     "a/b/c" and also "a/bc". Callers that want one directory end the
//     prefix with "/".
//   - A name that is only the beginning of other names ("a" while "a/b"
//     exists) is not an object: Stat and Open report it missing and Delete
//     removes nothing. Names where one is a directory of the other ("a" and
//     "a/b" both objects) are not portable (a file system cannot hold both)
//     and the suite never creates them.
//
// Only _test.go files import it: it imports testing, which must never reach
// the shipped binary.
package storagetest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/storage"
)

// Options adapt the suite to a backend.
type Options struct {
	// StoredSize is the Info.Size of an object Put from n bytes: n itself
	// when nil. A decorator that transforms what it stores (crypt)
	// reports the size stored, and says here how it follows from n.
	StoredSize func(n int64) int64
}

func (o Options) size(n int) int64 {
	if o.StoredSize == nil {
		return int64(n)
	}
	return o.StoredSize(int64(n))
}

// Run runs the conformance suite against backends made by newBackend (each
// call: a fresh, empty backend).
func Run(t *testing.T, newBackend func(t *testing.T) storage.Backend) {
	RunWith(t, newBackend, Options{})
}

// RunWith is Run for a backend that needs Options.
func RunWith(t *testing.T, newBackend func(t *testing.T) storage.Backend, o Options) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b storage.Backend)
	}{
		{"RoundTrip", func(t *testing.T, b storage.Backend) { testRoundTrip(t, b, o) }},
		{"PutReplaces", func(t *testing.T, b storage.Backend) { testPutReplaces(t, b, o) }},
		{"RangedOpen", testRangedOpen},
		{"OpenNegativeOffset", testOpenNegativeOffset},
		{"List", func(t *testing.T, b storage.Backend) { testList(t, b, o) }},
		{"ListEmpty", testListEmpty},
		{"Delete", testDelete},
		{"DirectoryIsNoObject", testDirectoryIsNoObject},
		{"Missing", testMissing},
		{"PutReaderFails", testPutReaderFails},
		{"PutReaderFailsKeepsOld", func(t *testing.T, b storage.Backend) { testPutReaderFailsKeepsOld(t, b, o) }},
		{"PutCancelledBefore", testPutCancelledBefore},
		{"PutCancelledMidway", testPutCancelledMidway},
		{"CancelledContext", testCancelledContext},
		{"OddButValidNames", testOddButValidNames},
		{"BadNames", testBadNames},
		{"ConcurrentPuts", testConcurrentPuts},
		{"ConcurrentPutsSameName", func(t *testing.T, b storage.Backend) { testConcurrentPutsSameName(t, b, o) }},
		{"ConcurrentPutDelete", testConcurrentPutDelete},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newBackend(t))
		})
	}
}

// pattern returns n deterministic bytes that differ for different seeds,
// so that a mix-up of objects or offsets shows.
func pattern(seed uint64, n int) []byte {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(key).Read(b) // never fails
	return b
}

// shortReader returns at most a few thousand bytes per Read, varying, as
// a network connection or a pipe does; a backend must not assume full reads.
type shortReader struct {
	data []byte
	rnd  *rand.Rand
}

func newShortReader(data []byte) *shortReader {
	return &shortReader{data: data, rnd: rand.New(rand.NewPCG(1, 2))}
}

func (r *shortReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(r.data), 1+r.rnd.IntN(8191))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// failingReader yields data and then fails with err instead of io.EOF.
type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// cancellingReader calls cancel once it has yielded after bytes and then
// keeps yielding the rest of data; it is finite so that a backend which
// ignores cancellation finishes the Put (and fails the test) rather than
// hanging.
type cancellingReader struct {
	data   []byte
	after  int
	read   int
	cancel context.CancelFunc
}

func (r *cancellingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 64<<10)], r.data)
	r.data = r.data[n:]
	r.read += n
	if r.read >= r.after {
		r.cancel()
	}
	return n, nil
}

func put(t *testing.T, b storage.Backend, name string, data []byte) {
	t.Helper()
	n, err := b.Put(t.Context(), name, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Put(%q): %v", name, err)
	}
	if n != int64(len(data)) {
		t.Fatalf("Put(%q) = %d bytes, want %d", name, n, len(data))
	}
}

func read(t *testing.T, b storage.Backend, name string, off, length int64) []byte {
	t.Helper()
	rc, err := b.Open(t.Context(), name, off, length)
	if err != nil {
		t.Fatalf("Open(%q, %d, %d): %v", name, off, length, err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading %q from %d length %d: %v", name, off, length, err)
	}
	if err := rc.Close(); err != nil {
		t.Fatalf("Close of %q: %v", name, err)
	}
	return got
}

func names(infos []storage.Info) []string {
	out := make([]string, len(infos))
	for i, in := range infos {
		out[i] = in.Name
	}
	return out
}

func list(t *testing.T, b storage.Backend, prefix string) []storage.Info {
	t.Helper()
	infos, err := b.List(t.Context(), prefix)
	if err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	return infos
}

// wantNotExist fails unless err reports the object name as missing.
func wantNotExist(t *testing.T, what string, err error, name string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: no error, want one matching fs.ErrNotExist", what)
	case !errors.Is(err, fs.ErrNotExist):
		t.Errorf("%s: %v, want an error matching fs.ErrNotExist", what, err)
	case !strings.Contains(err.Error(), name):
		t.Errorf("%s: error %q does not name the object %q", what, err, name)
	}
}

// wantAbsent fails unless name is invisible to Stat, Open and List.
func wantAbsent(t *testing.T, b storage.Backend, name string) {
	t.Helper()
	_, err := b.Stat(t.Context(), name)
	wantNotExist(t, fmt.Sprintf("Stat(%q)", name), err, name)
	rc, err := b.Open(t.Context(), name, 0, -1)
	if err == nil {
		rc.Close()
	}
	wantNotExist(t, fmt.Sprintf("Open(%q)", name), err, name)
	if slices.Contains(names(list(t, b, "")), name) {
		t.Errorf("List shows %q", name)
	}
}

func wantEmpty(t *testing.T, b storage.Backend) {
	t.Helper()
	if infos := list(t, b, ""); len(infos) != 0 {
		t.Errorf("backend holds %q, want nothing", names(infos))
	}
}

func testRoundTrip(t *testing.T, b storage.Backend, o Options) {
	for i, size := range []int{0, 1, 20 << 20} {
		name := fmt.Sprintf("rt/size-%d", size)
		data := pattern(uint64(i), size)
		start := time.Now()
		n, err := b.Put(t.Context(), name, newShortReader(data))
		if err != nil {
			t.Fatalf("Put(%q) of %d bytes: %v", name, size, err)
		}
		if n != int64(size) {
			t.Errorf("Put(%q) = %d bytes, want %d", name, n, size)
		}
		if got := read(t, b, name, 0, -1); !bytes.Equal(got, data) {
			t.Errorf("Open(%q) read %d bytes that differ from the %d put", name, len(got), size)
		}
		info, err := b.Stat(t.Context(), name)
		if err != nil {
			t.Fatalf("Stat(%q): %v", name, err)
		}
		if info.Name != name || info.Size != o.size(size) {
			t.Errorf("Stat(%q) = %q size %d, want size %d", name, info.Name, info.Size, o.size(size))
		}
		// Clocks of a remote store may differ a little from ours.
		if d := info.ModTime.Sub(start); d < -time.Hour || d > time.Hour {
			t.Errorf("Stat(%q).ModTime = %v, not close to now (%v)", name, info.ModTime, start)
		}
		infos := list(t, b, name)
		if len(infos) != 1 || infos[0].Name != name || infos[0].Size != o.size(size) {
			t.Errorf("List(%q) = %+v, want just %q of size %d", name, infos, name, o.size(size))
		}
	}
}

func testPutReplaces(t *testing.T, b storage.Backend, o Options) {
	put(t, b, "obj", pattern(1, 5000))
	short := []byte("short")
	put(t, b, "obj", short)
	if got := read(t, b, "obj", 0, -1); !bytes.Equal(got, short) {
		t.Errorf("after replacement read %q, want %q", got, short)
	}
	info, err := b.Stat(t.Context(), "obj")
	if err != nil || info.Size != o.size(len(short)) {
		t.Errorf("Stat after replacement = %+v, %v; want size %d", info, err, o.size(len(short)))
	}
	if infos := list(t, b, ""); len(infos) != 1 || infos[0].Size != o.size(len(short)) {
		t.Errorf("List after replacement = %+v, want one object of size %d", infos, o.size(len(short)))
	}
}

func testRangedOpen(t *testing.T, b storage.Backend) {
	const size = 1000
	data := pattern(7, size)
	put(t, b, "r", data)
	tests := []struct {
		name        string
		off, length int64
		want        []byte
	}{
		{"whole", 0, -1, data},
		{"whole exact", 0, size, data},
		{"middle", 100, 200, data[100:300]},
		{"one byte", 999, 1, data[999:]},
		{"to end", 900, -1, data[900:]},
		{"past end", 900, 500, data[900:]},
		{"huge length", 10, 1 << 62, data[10:]},
		{"zero length", 500, 0, nil},
		{"at end", size, 10, nil},
		{"at end to end", size, -1, nil},
		{"beyond end", 2 * size, -1, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := read(t, b, "r", tc.off, tc.length)
			if !bytes.Equal(got, tc.want) {
				t.Errorf("Open(off %d, length %d) read %d bytes, want %d (content equal: %v)",
					tc.off, tc.length, len(got), len(tc.want), len(got) == len(tc.want) && bytes.Equal(got, tc.want))
			}
		})
	}
}

func testOpenNegativeOffset(t *testing.T, b storage.Backend) {
	put(t, b, "r", []byte("data"))
	rc, err := b.Open(t.Context(), "r", -1, -1)
	if err == nil {
		rc.Close()
		t.Fatal("Open with offset -1 succeeded, want an error")
	}
}

func testList(t *testing.T, b storage.Backend, o Options) {
	objects := []string{"a-z", "a.b", "a/b", "a/bc", "a/bd/e", "a/c", "ab", "b/x", "b/y/z"}
	// Put in an order unlike the sorted one, so that sorting is checked.
	for i, idx := range []int{5, 0, 8, 2, 7, 4, 1, 6, 3} {
		put(t, b, objects[idx], pattern(uint64(i), 10+idx))
	}
	tests := []struct {
		prefix string
		want   []string
	}{
		{"", objects},
		{"a", []string{"a-z", "a.b", "a/b", "a/bc", "a/bd/e", "a/c", "ab"}},
		{"a/", []string{"a/b", "a/bc", "a/bd/e", "a/c"}},
		{"a/b", []string{"a/b", "a/bc", "a/bd/e"}},
		{"a/bd", []string{"a/bd/e"}},
		{"a/bd/", []string{"a/bd/e"}},
		{"a/bd/e", []string{"a/bd/e"}},
		{"a/bd/ex", nil},
		{"b/", []string{"b/x", "b/y/z"}},
		{"b/y/", []string{"b/y/z"}},
		{"c", nil},
		{"c/d/", nil},
		{"a/x/y/", nil},
	}
	for _, tc := range tests {
		got := list(t, b, tc.prefix)
		if !slices.Equal(names(got), tc.want) {
			t.Errorf("List(%q) = %q, want %q", tc.prefix, names(got), tc.want)
		}
		for _, in := range got {
			idx := slices.Index(objects, in.Name)
			if in.Size != o.size(10+idx) {
				t.Errorf("List(%q): %q has size %d, want %d", tc.prefix, in.Name, in.Size, o.size(10+idx))
			}
		}
	}
}

func testListEmpty(t *testing.T, b storage.Backend) {
	for _, prefix := range []string{"", "x", "x/", "x/y"} {
		if infos := list(t, b, prefix); len(infos) != 0 {
			t.Errorf("List(%q) on an empty backend = %q", prefix, names(infos))
		}
	}
}

func testDelete(t *testing.T, b storage.Backend) {
	put(t, b, "d/1", []byte("one"))
	put(t, b, "d/2", []byte("two"))
	put(t, b, "deep/er/still/x", []byte("x"))
	if err := b.Delete(t.Context(), "d/1"); err != nil {
		t.Fatalf("Delete(d/1): %v", err)
	}
	wantAbsent(t, b, "d/1")
	if got := names(list(t, b, "d/")); !slices.Equal(got, []string{"d/2"}) {
		t.Errorf("after deleting d/1, List(d/) = %q, want [d/2]", got)
	}
	if got := read(t, b, "d/2", 0, -1); string(got) != "two" {
		t.Errorf("d/2 reads %q after deleting its sibling", got)
	}
	for _, name := range []string{"d/1", "never/existed", "deep/er/still/x", "deep/er/still/x"} {
		if err := b.Delete(t.Context(), name); err != nil {
			t.Errorf("Delete(%q): %v, want nil (deleting is idempotent)", name, err)
		}
	}
	wantAbsent(t, b, "deep/er/still/x")
	if got := names(list(t, b, "")); !slices.Equal(got, []string{"d/2"}) {
		t.Errorf("after deletes List = %q, want [d/2]", got)
	}
	// The emptied directories must not get in the way of new objects.
	put(t, b, "deep/er", []byte("file where a directory was"))
	if got := read(t, b, "deep/er", 0, -1); string(got) != "file where a directory was" {
		t.Errorf("deep/er reads %q", got)
	}
}

func testDirectoryIsNoObject(t *testing.T, b storage.Backend) {
	put(t, b, "p/q/r", []byte("r"))
	for _, name := range []string{"p", "p/q"} {
		wantAbsent(t, b, name)
		if err := b.Delete(t.Context(), name); err != nil {
			t.Errorf("Delete(%q): %v, want nil", name, err)
		}
	}
	if got := read(t, b, "p/q/r", 0, -1); string(got) != "r" {
		t.Errorf("p/q/r reads %q after Delete of its prefixes", got)
	}
	if got := names(list(t, b, "p")); !slices.Equal(got, []string{"p/q/r"}) {
		t.Errorf("List(p) = %q, want [p/q/r]", got)
	}
}

func testMissing(t *testing.T, b storage.Backend) {
	put(t, b, "present/obj", []byte("x"))
	for _, name := range []string{"missing", "no/such/thing", "present/other", "present/obj/below"} {
		_, err := b.Stat(t.Context(), name)
		wantNotExist(t, fmt.Sprintf("Stat(%q)", name), err, name)
		rc, err := b.Open(t.Context(), name, 0, -1)
		if err == nil {
			rc.Close()
		}
		wantNotExist(t, fmt.Sprintf("Open(%q)", name), err, name)
		rc, err = b.Open(t.Context(), name, 10, 10)
		if err == nil {
			rc.Close()
		}
		wantNotExist(t, fmt.Sprintf("ranged Open(%q)", name), err, name)
	}
}

var errSource = errors.New("source broke")

func testPutReaderFails(t *testing.T, b storage.Backend) {
	for _, size := range []int{0, 1000, 3 << 20} {
		name := fmt.Sprintf("fail/%d", size)
		n, err := b.Put(t.Context(), name, &failingReader{data: pattern(3, size), err: errSource})
		if !errors.Is(err, errSource) {
			t.Errorf("Put(%q) from a reader failing after %d bytes = %d, %v; want an error matching the reader's", name, size, n, err)
		}
		wantAbsent(t, b, name)
	}
	wantEmpty(t, b)
}

func testPutReaderFailsKeepsOld(t *testing.T, b storage.Backend, o Options) {
	old := pattern(4, 4000)
	put(t, b, "keep", old)
	if _, err := b.Put(t.Context(), "keep", &failingReader{data: pattern(5, 2<<20), err: errSource}); !errors.Is(err, errSource) {
		t.Fatalf("failing Put = %v, want an error matching the reader's", err)
	}
	if got := read(t, b, "keep", 0, -1); !bytes.Equal(got, old) {
		t.Errorf("after a failed replacement the object reads %d bytes, not the old %d", len(got), len(old))
	}
	if infos := list(t, b, ""); len(infos) != 1 || infos[0].Size != o.size(len(old)) {
		t.Errorf("after a failed replacement List = %+v, want just the old object", infos)
	}
}

func testPutCancelledBefore(t *testing.T, b storage.Backend) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := b.Put(ctx, "c/x", bytes.NewReader([]byte("data")))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a cancelled context = %v, want an error matching context.Canceled", err)
	}
	wantAbsent(t, b, "c/x")
	wantEmpty(t, b)
}

func testPutCancelledMidway(t *testing.T, b storage.Backend) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r := &cancellingReader{data: pattern(6, 24<<20), after: 2 << 20, cancel: cancel}
	_, err := b.Put(ctx, "c/x", r)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Put cancelled after 2 MiB of 24 = %v, want an error matching context.Canceled", err)
	}
	wantAbsent(t, b, "c/x")
	wantEmpty(t, b)
}

func testCancelledContext(t *testing.T, b storage.Backend) {
	put(t, b, "obj", []byte("data"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := b.Stat(ctx, "obj"); !errors.Is(err, context.Canceled) {
		t.Errorf("Stat = %v, want context.Canceled", err)
	}
	if rc, err := b.Open(ctx, "obj", 0, -1); !errors.Is(err, context.Canceled) {
		if err == nil {
			rc.Close()
		}
		t.Errorf("Open = %v, want context.Canceled", err)
	}
	if _, err := b.List(ctx, ""); !errors.Is(err, context.Canceled) {
		t.Errorf("List = %v, want context.Canceled", err)
	}
	if err := b.Delete(ctx, "obj"); !errors.Is(err, context.Canceled) {
		t.Errorf("Delete = %v, want context.Canceled", err)
	}
	if got := read(t, b, "obj", 0, -1); string(got) != "data" {
		t.Errorf("after a cancelled Delete the object reads %q, want it untouched", got)
	}

	// A reader must stop when the context it was opened with ends.
	put(t, b, "big", pattern(8, 4<<20))
	ctx, cancel = context.WithCancel(t.Context())
	rc, err := b.Open(ctx, "big", 0, -1)
	if err != nil {
		t.Fatalf("Open(big): %v", err)
	}
	defer rc.Close()
	if _, err := io.ReadFull(rc, make([]byte, 1000)); err != nil {
		t.Fatalf("first read of big: %v", err)
	}
	cancel()
	if _, err := io.Copy(io.Discard, rc); !errors.Is(err, context.Canceled) {
		t.Errorf("reading on after cancel = %v, want context.Canceled", err)
	}
}

func testOddButValidNames(t *testing.T, b storage.Backend) {
	valid := []string{".hidden", "x.tmp", ".tmpx", "a..b", "...", "a b/c d", "ünï/cödé", "-", "a/.b/c", "z/" + strings.Repeat("n", 200)}
	for i, name := range valid {
		data := pattern(uint64(i), i+1)
		put(t, b, name, data)
		if got := read(t, b, name, 0, -1); !bytes.Equal(got, data) {
			t.Errorf("%q reads %q, want %q", name, got, data)
		}
	}
	want := slices.Clone(valid)
	slices.Sort(want)
	if got := names(list(t, b, "")); !slices.Equal(got, want) {
		t.Errorf("List = %q, want %q", got, want)
	}
}

func testBadNames(t *testing.T, b storage.Backend) {
	bad := []string{"", "/", "/a", "a/", "a//b", ".", "..", "./a", "a/.", "a/./b", "../a", "a/..", "a/../b",
		`a\b`, "a\x00b", "a/\xffb", ".x.tmp", "a/.x.tmp", ".tmp"}
	ctx := t.Context()
	for _, name := range bad {
		check := func(op string, err error) {
			t.Helper()
			if !errors.Is(err, storage.ErrInvalidName) {
				t.Errorf("%s(%q) = %v, want an error matching storage.ErrInvalidName", op, name, err)
			}
		}
		_, err := b.Put(ctx, name, strings.NewReader("data"))
		check("Put", err)
		rc, err := b.Open(ctx, name, 0, -1)
		if err == nil {
			rc.Close()
		}
		check("Open", err)
		_, err = b.Stat(ctx, name)
		check("Stat", err)
		check("Delete", b.Delete(ctx, name))
	}
	for _, prefix := range []string{"/", "/a", "a//", "./", "../", "a/../", `a\`, "a\x00", ".x.tmp/"} {
		if _, err := b.List(ctx, prefix); !errors.Is(err, storage.ErrInvalidName) {
			t.Errorf("List(%q) = %v, want an error matching storage.ErrInvalidName", prefix, err)
		}
	}
	wantEmpty(t, b)
}

func testConcurrentPuts(t *testing.T, b storage.Backend) {
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			name := fmt.Sprintf("conc/%d/%d", i%4, i)
			_, errs[i] = b.Put(t.Context(), name, newShortReader(pattern(uint64(i), 100_000+i)))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Put %d: %v", i, err)
		}
	}
	for i := range n {
		name := fmt.Sprintf("conc/%d/%d", i%4, i)
		if got := read(t, b, name, 0, -1); !bytes.Equal(got, pattern(uint64(i), 100_000+i)) {
			t.Errorf("%s holds %d bytes that are not what was put", name, len(got))
		}
	}
	if got := len(list(t, b, "conc/")); got != n {
		t.Errorf("List(conc/) has %d objects, want %d", got, n)
	}
}

func testConcurrentPutsSameName(t *testing.T, b storage.Backend, o Options) {
	const n = 8
	contents := make([][]byte, n)
	for i := range contents {
		contents[i] = pattern(uint64(i), 300_000+1000*i)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = b.Put(t.Context(), "same/obj", newShortReader(contents[i]))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Put %d: %v", i, err)
		}
	}
	got := read(t, b, "same/obj", 0, -1)
	if !slices.ContainsFunc(contents, func(c []byte) bool { return bytes.Equal(c, got) }) {
		t.Errorf("after concurrent Puts the object holds %d bytes that match none of the puts", len(got))
	}
	if infos := list(t, b, ""); len(infos) != 1 || infos[0].Size != o.size(len(got)) {
		t.Errorf("List after concurrent Puts = %+v, want one object of size %d", infos, o.size(len(got)))
	}
}

// testConcurrentPutDelete puts and deletes neighbours in one directory at
// once: a backend that prunes emptied directories must not make a Put fail.
func testConcurrentPutDelete(t *testing.T, b storage.Backend) {
	const workers, rounds = 4, 40
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			name := fmt.Sprintf("race/dir/%d", w)
			for i := range rounds {
				if _, err := b.Put(t.Context(), name, strings.NewReader("x")); err != nil {
					errs[w] = fmt.Errorf("round %d: %w", i, err)
					return
				}
				if err := b.Delete(t.Context(), name); err != nil {
					errs[w] = fmt.Errorf("round %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Errorf("worker %d: %v", w, err)
		}
	}
	wantEmpty(t, b)
}
