package cli

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/about"
	"github.com/backstream/backstream/internal/options"
)

func newVersionCmd(g *globals, version string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:  "version",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return printVersion(cmd.Context(), g.stdout, version, g.mariadbPath, asJSON)
		},
	}
	options.Bind(cmd.Flags()).Bool("json", &asJSON)
	return cmd
}

// printVersion prints what about says of this build and this host.
func printVersion(ctx context.Context, w io.Writer, version string, path []string, asJSON bool) error {
	info := about.Gather(ctx, version, path)
	if asJSON {
		return printJSON(w, info)
	}
	return info.WriteText(w)
}
