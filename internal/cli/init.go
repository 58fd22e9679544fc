package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/repo"
)

func newInitCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "init --repo LOCATION",
		Short: "Create a repository",
		Long: `init creates an empty repository at --repo: a directory (created if absent, or empty) or
an S3 prefix that holds no objects. It is the only command that creates one: backup,
binlog and receive --repo refuse a location without a repository, so that a mistyped
--repo fails instead of scattering backups. A location that already holds a repository,
or other objects, is refused.

With --encrypt the repository gets its own encryption: every backup, archived binary log
and received backup written into it is encrypted (age) to the keys given here, with no
key flag: to --recipient-file's public keys, or to a repository key made now and stored
encrypted with the passphrase (--passphrase-file or $BACKSTREAM_PASSPHRASE). The hosts
that write then hold no secret; reading needs --identity-file or the passphrase. Such a
repository has format 2, which older backstreams refuse rather than write into it plainly.
Without --encrypt, encryption is chosen per backup (backup --encrypt).`,
		Example: `  backstream init --repo /backups
  backstream init --repo s3://bucket/prod/db1 --encrypt --recipient-file /etc/backstream/backup.pub
  backstream init --repo /backups --encrypt --passphrase-file /root/backstream.pass`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := g.openRepo(cmd.Context(), true)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g.stdout, struct {
					Repository string    `json:"repository"`
					ID         string    `json:"id"`
					Format     int       `json:"format"`
					Created    time.Time `json:"created"`
					Recipients []string  `json:"recipients,omitempty"` // what everything written is encrypted to
				}{r.Backend.Location(), r.Config.ID, r.Config.Format, r.Config.Created, recipients(r)})
			}
			fmt.Fprintf(g.stdout, "created repository %s (id %s, format %d)\n", r.Backend.Location(), r.Config.ID, r.Config.Format)
			if e := r.Config.Encryption; e != nil {
				fmt.Fprintf(g.stdout, "everything written into it is encrypted to %s\n", strings.Join(e.Recipients, ", "))
			}
			return nil
		},
	}
	g.registerEncrypt(cmd.Flags())
	options.Bind(cmd.Flags()).Bool("json", &asJSON)
	return cmd
}

// recipients are what a repository with its own encryption encrypts to.
func recipients(r *repo.Repo) []string {
	if r.Config.Encryption == nil {
		return nil
	}
	return r.Config.Encryption.Recipients
}
