package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
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
or other objects, is refused. Encryption is chosen per backup (backup --encrypt).`,
		Example: `  backstream init --repo /backups
  backstream init --repo s3://bucket/prod/db1`,
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
				}{r.Backend.Location(), r.Config.ID, r.Config.Format, r.Config.Created})
			}
			fmt.Fprintf(g.stdout, "created repository %s (id %s, format %d)\n", r.Backend.Location(), r.Config.ID, r.Config.Format)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the repository created as one JSON object (repository, id, format, created)")
	return cmd
}
