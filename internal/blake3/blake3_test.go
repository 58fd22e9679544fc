package blake3

import (
	"bytes"
	"hash"
	"math/rand/v2"
	"testing"

	reference "github.com/zeebo/blake3"
)

var _ hash.Hash = (*Hasher)(nil)

// same checks both modes' digests of data, written in the pieces cuts
// make of it, against the reference implementation's.
func same(t testing.TB, key, data []byte, cuts []int) {
	t.Helper()
	ref, _ := reference.NewKeyed(key)
	ref.Write(data)
	keyed, err := NewKeyed(key)
	if err != nil {
		t.Fatal(err)
	}
	refPlain := reference.New()
	refPlain.Write(data)
	plain := New()
	rest := data
	for _, c := range cuts {
		c = min(c, len(rest))
		keyed.Write(rest[:c])
		plain.Write(rest[:c])
		rest = rest[c:]
	}
	keyed.Write(rest)
	plain.Write(rest)
	if got, want := keyed.Sum(nil), ref.Sum(nil); !bytes.Equal(got, want) {
		t.Fatalf("keyed, %d bytes cut at %v: %x, want %x", len(data), cuts, got, want)
	}
	if got, want := plain.Sum([]byte("x")), refPlain.Sum([]byte("x")); !bytes.Equal(got, want) {
		t.Fatalf("%d bytes cut at %v: %x, want %x", len(data), cuts, got, want)
	}
	// Sum leaves the hash as it was, and Reset starts it again.
	keyed.Write([]byte("more"))
	ref.Write([]byte("more"))
	if got, want := keyed.Sum(nil), ref.Sum(nil); !bytes.Equal(got, want) {
		t.Fatalf("keyed, %d bytes and more: %x, want %x", len(data), got, want)
	}
	keyed.Reset()
	keyed.Write(data)
	ref.Reset()
	ref.Write(data)
	if got, want := keyed.Sum(nil), ref.Sum(nil); !bytes.Equal(got, want) {
		t.Fatalf("keyed after Reset, %d bytes: %x, want %x", len(data), got, want)
	}
}

func TestDigestsAreBLAKE3s(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(rng.Uint32())
	}
	data := make([]byte, 40*group+1234)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	// every length around the edges of a chunk and a group, each written
	// whole and in pieces
	var lengths []int
	for _, edge := range []int{0, 1024, 2048, group, 2 * group, 3 * group, 4 * group, 17 * group, 32 * group} {
		for d := -65; d <= 65; d++ {
			if edge+d >= 0 {
				lengths = append(lengths, edge+d)
			}
		}
	}
	for n := 0; n < 5*group; n += 1 + rng.IntN(900) {
		lengths = append(lengths, n)
	}
	lengths = append(lengths, len(data))
	for _, n := range lengths {
		same(t, key, data[:n], nil)
		same(t, key, data[:n], []int{rng.IntN(n + 1), rng.IntN(group + 2), group, rng.IntN(3 * group)})
	}
	if _, err := NewKeyed(key[:31]); err == nil {
		t.Fatal("a 31-byte key was taken")
	}
}

func FuzzDigestsAreBLAKE3s(f *testing.F) {
	f.Add([]byte("abc"), uint16(1), uint16(0))
	f.Add(bytes.Repeat([]byte{7}, 3*group+5), uint16(group), uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, a, b uint16) {
		same(t, bytes.Repeat([]byte{byte(a)}, 32), data, []int{int(a), int(b)})
	})
}

var sink []byte

func benchmark(b *testing.B, h hash.Hash, size int) {
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 7)
	}
	b.SetBytes(int64(size))
	for b.Loop() {
		h.Reset()
		h.Write(data)
		sink = h.Sum(sink[:0])
	}
}

// The block names' case: a 64 KiB block, keyed.
func BenchmarkKeyed64KiB(b *testing.B) {
	h, _ := NewKeyed(make([]byte, 32))
	benchmark(b, h, 64<<10)
}

func BenchmarkReferenceKeyed64KiB(b *testing.B) {
	h, _ := reference.NewKeyed(make([]byte, 32))
	benchmark(b, h, 64<<10)
}

// The file digests' case: a stream of 1 MiB writes.
func Benchmark1MiB(b *testing.B) { benchmark(b, New(), 1<<20) }

func BenchmarkReference1MiB(b *testing.B) { benchmark(b, reference.New(), 1<<20) }
