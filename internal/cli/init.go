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
		Use:  "init",
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
