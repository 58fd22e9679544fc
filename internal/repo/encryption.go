package repo

import (
	"context"
	"path"
	"slices"
	"strings"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/storage/crypt"
)

// KeysDir holds the repository's passphrase keys, keys/<public key>.age:
// each an age X25519 identity encrypted with a passphrase. A backup
// "encrypted with a passphrase" is encrypted to such a key (see
// crypt.Backend.Encrypt).
const KeysDir = "keys/"

// Encrypted reports whether the repository stores the object name
// encrypted, when what wrote it encrypts: every object of a backup or an
// archived binary log except the manifests, begun markers, verdicts, binary log status and head, gap markers and links, which hold
// no row data and must stay readable to list, plan and clean up without a
// key. The config, locks and keys are never encrypted this way.
func Encrypted(name string) bool {
	switch path.Base(name) {
	case ManifestName, BegunName, VerdictName:
		return false
	}
	// A binary log source's status, head, gap markers and link: what
	// list --binlogs shows, with no row data either.
	if parts := strings.Split(name, "/"); parts[0] == binlogsDir &&
		(len(parts) == 3 && (parts[2] == statusName || parts[2] == headName || parts[2] == linkName) || len(parts) == 4 && parts[2] == gapsDir) {
		return false
	}
	return strings.HasPrefix(name, backupsDir+"/") || strings.HasPrefix(name, binlogsDir+"/") || strings.HasPrefix(name, "dedup/")
}

// Options say how OpenWith opens a repository.
type Options struct {
	// Keys decrypt the encrypted objects read, and are what Encrypt
	// encrypts to (a repository with its own encryption encrypts to its
	// recipients when Keys names none).
	Keys crypt.Keys
	// Encrypt, for Init, gives the repository its own encryption, to
	// Keys: see Config.Encryption.
	Encrypt bool
	// Dedup, for Init, makes a deduplicating repository: see Config.Dedup.
	Dedup bool
}

// Encrypt makes the repository encrypt what it stores from now on (the
// objects Encrypted names) to the keys it was opened with, and returns
// what the manifests record of them. With a passphrase, objects are
// encrypted to the repository's key for that passphrase, made now if
// there is none yet.
func (r *Repo) Encrypt(ctx context.Context) (*archive.Encryption, error) {
	public, key, err := r.crypt.Encrypt(ctx)
	if err != nil {
		return nil, err
	}
	if e := r.Config.Encryption; key == "" && e != nil && slices.Equal(public, e.Recipients) {
		key = e.PassphraseKey
	}
	return &archive.Encryption{Scheme: "age", Recipients: public, PassphraseKey: key}, nil
}
