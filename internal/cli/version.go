package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/about"
	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/toolpath"
)

func newVersionCmd(g *globals, version string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:  "version",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return printVersion(cmd.Context(), g.stdout, version, toolpath.Parse(g.mariadbPath), asJSON)
		},
	}
	options.Bind(cmd.Flags()).Bool("json", &asJSON)
	return cmd
}

// printVersion prints what about says of this build and this host.
func printVersion(ctx context.Context, w io.Writer, version string, path toolpath.Path, asJSON bool) error {
	info := about.Build(version)
	info.Tools = about.Tools(ctx, path)
	if asJSON {
		return printJSON(w, info)
	}
	fmt.Fprintf(w, "backstream %s\n", info.Version)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if info.Revision != "" {
		rev := info.Revision
		if info.RevisionTime != nil {
			rev += " (" + info.RevisionTime.UTC().Format("2006-01-02 15:04:05 UTC") + ")"
		}
		if info.Modified {
			rev += ", with uncommitted changes"
		}
		fmt.Fprintf(tw, "  revision\t%s\n", rev)
	} else {
		fmt.Fprintf(tw, "  revision\tnot recorded (built without VCS information)\n")
	}
	if info.Module != "" {
		fmt.Fprintf(tw, "  module\t%s %s\n", info.Module, info.ModuleVersion)
	}
	fmt.Fprintf(tw, "  go\t%s %s\n", info.Go, info.Platform)
	for _, t := range info.Tools {
		if t.Error != "" && t.Path == "" {
			fmt.Fprintf(tw, "  %s\t%s\n", t.Name, t.Error)
			continue
		}
		v := t.Version
		if t.Error != "" {
			v = "version unknown: " + t.Error
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", t.Name, v, t.Path)
	}
	return tw.Flush()
}
