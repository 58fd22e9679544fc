package about

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteText writes info for people: the version on its own line, then a
// table of the revision, the module, the Go and each MariaDB tool. Info
// itself is the JSON form.
func (info Info) WriteText(w io.Writer) error {
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
