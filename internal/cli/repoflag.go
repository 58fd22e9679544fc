package cli

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repoaccess"
)

// location is where --repo and the global storage flags say the
// repository is.
func (g *globals) location(repo string) repoaccess.Location {
	return repoaccess.Location{Repo: repo, S3Endpoint: g.s3Endpoint, S3Retry: g.s3Retry, Limits: g.limits}
}

// openRepo opens the repository named by --repo with the keys given; with
// create (init alone) it makes one at an empty location instead.
func (g *globals) openRepo(ctx context.Context, create bool) (*repo.Repo, error) {
	keys := repoaccess.KeyFiles{RecipientFile: g.recipientFile, IdentityFile: g.identityFile, PassphraseFile: g.passphraseFile}
	return repoaccess.Open(ctx, g.location(g.repo), keys, g.encrypt, create)
}

// registerEncrypt adds the flags of the commands that store encrypted.
func (g *globals) registerEncrypt(f *pflag.FlagSet) {
	o := options.Bind(f)
	o.Bool("encrypt", &g.encrypt)
	o.String("recipient-file", &g.recipientFile)
}

// encryption makes r encrypt what it stores from now on when --encrypt
// or the repository asks for it (repoaccess.Encryption).
func (g *globals) encryption(ctx context.Context, r *repo.Repo) (*archive.Encryption, error) {
	return repoaccess.Encryption(ctx, r, g.encrypt)
}
