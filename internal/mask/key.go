package mask

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"math/bits"
	"os"
	"sync"

	"github.com/zeebo/blake3"
)

// MinKeyBytes is the least a key file must hold.
const MinKeyBytes = 16

// Context strings of the keys derived from the key material (BLAKE3's
// key derivation): one per use, so that no output of one function says
// anything of another's.
const (
	hashContext        = "backstream 2026-11-28 mask: keyed hash of strings v1"
	permutationContext = "backstream 2026-11-28 mask: permutation of integers v1"
	fingerprintContext = "backstream 2026-11-28 mask: key fingerprint v1"
)

// keys are what the functions are keyed with.
type keys struct {
	hashKey [32]byte
	perm    cipher.Block // AES-256: the rounds of the integer permutation
	// hashers are BLAKE3 hashers keyed with hashKey, ready to Reset: one
	// costs 8 KiB, too much to make for every value.
	hashers sync.Pool
	id      string // "random", or "file " and a fingerprint
}

// RandomKey is Rules.Key of rules keyed with a random key.
const RandomKey = "random"

func newKeys(material []byte, fromFile bool) *keys {
	k := &keys{id: RandomKey}
	blake3.DeriveKey(hashContext, material, k.hashKey[:])
	var aesKey [32]byte
	blake3.DeriveKey(permutationContext, material, aesKey[:])
	k.perm, _ = aes.NewCipher(aesKey[:]) // a 32-byte key never fails
	if fromFile {
		var fp [8]byte
		blake3.DeriveKey(fingerprintContext, material, fp[:])
		k.id = "file " + hex.EncodeToString(fp[:])
	}
	k.hashers.New = func() any {
		h, _ := blake3.NewKeyed(k.hashKey[:]) // a 32-byte key never fails
		return h
	}
	return k
}

// randomKeys are keys no one else has, for one run.
func randomKeys() *keys {
	var material [32]byte
	rand.Read(material[:])
	return newKeys(material[:], false)
}

// ReadKeyFile reads a key file: its bytes less one trailing newline (or
// CR LF), so that a key written with echo or an editor is the same key.
func ReadKeyFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, errorf("mask key file: %v", err)
	}
	data = bytes.TrimSuffix(data, []byte("\n"))
	data = bytes.TrimSuffix(data, []byte("\r"))
	if len(data) < MinKeyBytes {
		return nil, errorf("mask key file %s holds %d bytes; a key needs at least %d (make one with: head -c 32 /dev/urandom > %s)", path, len(data), MinKeyBytes, path)
	}
	return data, nil
}

// sum appends the keyed hash of tag and v to dst: 32 bytes.
func (k *keys) sum(dst []byte, tag string, v []byte) []byte {
	h := k.hashers.Get().(*blake3.Hasher)
	h.Reset()
	h.WriteString(tag)
	h.Write(v)
	dst = h.Sum(dst)
	k.hashers.Put(h)
	return dst
}

// stream returns a reader of as many keyed bytes of tag and v as wanted.
func (k *keys) stream(tag string, v []byte) *blake3.Digest {
	h := k.hashers.Get().(*blake3.Hasher)
	h.Reset()
	h.WriteString(tag)
	h.Write(v)
	d := h.Digest()
	k.hashers.Put(h)
	return d
}

// permute maps x, below n, to a value below n, distinct inputs to
// distinct outputs: a Feistel network of permutationRounds rounds over
// the smallest even number of bits that holds n-1, each round's function
// AES-256 of the round, the domain and the right half, and cycle walking
// (encrypting again until the result falls below n, at most four times
// on average). tweak tells domains of the same size apart.
func (k *keys) permute(x, n uint64, tweak byte) uint64 {
	width := bits.Len64(n - 1)
	width += width % 2
	width = max(width, 2)
	half := uint(width / 2)
	mask := uint64(1)<<half - 1
	var in, out [aes.BlockSize]byte
	for {
		l, r := x>>half, x&mask
		for round := range permutationRounds {
			in[0], in[1], in[2] = byte(round), byte(width), tweak
			binary.LittleEndian.PutUint64(in[3:11], n)
			binary.LittleEndian.PutUint32(in[11:15], uint32(r))
			k.perm.Encrypt(out[:], in[:])
			l, r = r, l^(binary.LittleEndian.Uint64(out[:8])&mask)
		}
		x = l<<half | r
		if x < n {
			return x
		}
	}
}

// permutationRounds: ten, as NIST's FF1 has.
const permutationRounds = 10

// fingerprint says which key the rules use: "random" (a key made for
// this run and never kept) or "file" and a fingerprint of a key file's
// key, the same for every run with that key. It cannot give the key back.
func (k *keys) fingerprint() string { return k.id }
