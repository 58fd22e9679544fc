package archive

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"strings"

	"github.com/zeebo/blake3"
	"github.com/zeebo/xxh3"
)

// Digests in the manifest name their algorithm: "blake3:<hex>" or
// "sha256:<hex>" (and files' digests "xxh3:<hex>", see HashXXH3). BLAKE3
// is the default because it is a cryptographic hash that runs about 7x
// faster than SHA-256 on CPUs without SHA extensions
// (2.5 GB/s against 0.33 GB/s per core on the reference machine, see
// docs/format.md), so hashing every byte never becomes the bottleneck.
const (
	HashBLAKE3 = "blake3"
	HashSHA256 = "sha256"
)

// DefaultHash is the algorithm new backups use unless told otherwise.
const DefaultHash = HashBLAKE3

// HashXXH3 is XXH3-128: a checksum, not a cryptographic hash, and never
// a backup's Hash. It is the files' digest algorithm of a stream whose
// output proves its content otherwise (ContentVerifier: a deduplicating
// repository names every block by its keyed BLAKE3, which every read
// checks). There the files' digests only check that the blocks were put
// back together as they were cut, and a second cryptographic hash of
// every byte took a tenth of a first night's backup on two busy cores
// (docs/benchmarks.md); XXH3 takes under 0.05 CPU-seconds a GB.
const HashXXH3 = "xxh3"

// NewHash returns a fresh hasher for alg.
func NewHash(alg string) (hash.Hash, error) {
	switch alg {
	case HashBLAKE3:
		return blake3.New(), nil
	case HashSHA256:
		return sha256.New(), nil
	}
	return nil, fmt.Errorf("unknown hash algorithm %q (known: %s, %s)", alg, HashBLAKE3, HashSHA256)
}

// newDigestHash returns a fresh hasher for alg, a backup's Hash or a
// files' digest algorithm (Manifest.FileDigests).
func newDigestHash(alg string) (hash.Hash, error) {
	if alg == HashXXH3 {
		return xxh3Hash{xxh3.New()}, nil
	}
	return NewHash(alg)
}

// xxh3Hash is XXH3-128 as a hash.Hash: its Sum appends all 128 bits.
type xxh3Hash struct{ *xxh3.Hasher }

func (h xxh3Hash) Size() int { return 16 }

func (h xxh3Hash) Sum(b []byte) []byte {
	sum := h.Sum128().Bytes()
	return append(b, sum[:]...)
}

// formatDigest renders a finished hash as "alg:hex".
func formatDigest(alg string, h hash.Hash) string {
	return alg + ":" + hex.EncodeToString(h.Sum(nil))
}

// digestAlg returns the algorithm named by a digest string, one a
// backup's Hash may be.
func digestAlg(d string) (string, error) { return parseDigest(d, NewHash) }

// parseDigest returns the algorithm named by a digest string, one known
// to newHash.
func parseDigest(d string, newHash func(string) (hash.Hash, error)) (string, error) {
	alg, sum, ok := strings.Cut(d, ":")
	if !ok || sum == "" {
		return "", fmt.Errorf("malformed digest %q", d)
	}
	if _, err := newHash(alg); err != nil {
		return "", err
	}
	if _, err := hex.DecodeString(sum); err != nil {
		return "", fmt.Errorf("malformed digest %q: %w", d, err)
	}
	return alg, nil
}

// CheckDigest checks data against a digest string ("alg:hex"): an
// object's or a file's, as the manifest gives it (which allows XXH3 for
// files' digests alone).
func CheckDigest(data []byte, want string) error {
	alg, err := parseDigest(want, newDigestHash)
	if err != nil {
		return err
	}
	h, _ := newDigestHash(alg)
	h.Write(data)
	if got := formatDigest(alg, h); got != want {
		return fmt.Errorf("digest %s, the manifest says %s", got, want)
	}
	return nil
}
