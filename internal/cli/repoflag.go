package cli

import (
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/repoaccess"
)

// access is how the global flags say the command reaches its repository
// (checkGlobals makes it once, as g.repos).
func (g *globals) access() repoaccess.Options {
	return repoaccess.Options{
		Location: repoaccess.Location{Repo: g.repo, S3Endpoint: g.s3Endpoint, S3Retry: g.s3Retry,
			Limits: repoaccess.NewLimits(g.limitUpload, g.limitDownload)},
		Keys:     repoaccess.KeyFiles{RecipientFile: g.recipientFile, IdentityFile: g.identityFile, PassphraseFile: g.passphraseFile},
		Encrypt:  g.encrypt,
		LockWait: g.lockWait,
		Notes:    g.stderr,
		Memory:   repoaccess.NewMemory(g.memory),
	}
}

// registerEncrypt adds the flags of the commands that store encrypted.
func (g *globals) registerEncrypt(f *pflag.FlagSet) {
	o := options.Bind(f)
	o.Bool("encrypt", &g.encrypt)
	o.String("recipient-file", &g.recipientFile)
}
