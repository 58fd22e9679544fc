package crypt

import (
	"io"

	"filippo.io/age"
)

// Keys are what a Backend encrypts to and decrypts with. The zero value
// holds none; add them with the methods, each of which reads one source.
type Keys struct {
	Recipients []age.Recipient
	Identities []age.Identity
	// Public lists the recipients' age public keys, for the record.
	Public []string
	// Passphrase opens the store's passphrase keys (see Backend.Encrypt).
	Passphrase string
}

// AddRecipients reads age public keys, one per line (# starts a comment).
func (k *Keys) AddRecipients(r io.Reader) error {
	rs, err := age.ParseRecipients(r)
	if err != nil {
		return err
	}
	k.Recipients = append(k.Recipients, rs...)
	for _, r := range rs {
		if x, ok := r.(*age.X25519Recipient); ok {
			k.Public = append(k.Public, x.String())
		}
	}
	return nil
}

// AddIdentities reads age secret keys, one per line.
func (k *Keys) AddIdentities(r io.Reader) error {
	ids, err := age.ParseIdentities(r)
	if err != nil {
		return err
	}
	k.Identities = append(k.Identities, ids...)
	return nil
}

// SetPassphrase makes the passphrase serve both ways: it opens the
// passphrase keys, and objects encrypted to the passphrase itself (as
// backstream did before passphrase keys) stay readable.
func (k *Keys) SetPassphrase(pass string) error {
	if pass == "" {
		return nil
	}
	id, err := age.NewScryptIdentity(pass)
	if err != nil {
		return err
	}
	k.Identities = append(k.Identities, id)
	k.Passphrase = pass
	return nil
}
