package backup

import (
	"fmt"
	"io"
	"strings"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/inventory"
)

// WriteText writes res for people: the backup made, and for a logical one
// what it holds without history and what it masked.
func (res *Result) WriteText(w io.Writer) error {
	m := res.Manifest
	what, streams := "full", fmt.Sprintf("%d streams, %d files", len(m.Streams), len(m.Files))
	switch {
	case m.Kind == archive.KindLogical:
		what = fmt.Sprintf("logical, %d databases, %d tables, %d rows", len(m.Databases), res.Tables, res.Rows)
		streams = fmt.Sprintf("%d streams", len(m.Streams))
	case m.Parent != "":
		what = fmt.Sprintf("incremental on %s (depth %d of chain %s)", m.Parent, m.Depth, m.Chain)
	}
	if _, err := fmt.Fprintf(w, "backup %s complete: %s, %s, %s stored\n", m.ID, what, streams, inventory.Stored(m)); err != nil {
		return err
	}
	for _, t := range res.NoHistory {
		fmt.Fprintf(w, "backup %s: table %s: history not in the backup (--versioned-current-only)\n", m.ID, t)
	}
	if len(res.Masked) > 0 {
		fmt.Fprintf(w, "backup %s: masked when dumped: %s\n", m.ID, strings.Join(res.Masked, ", "))
	}
	return nil
}

// JSON is what --json prints of res: the backup as every command that
// makes one prints it.
func (res *Result) JSON() inventory.Made { return inventory.MadeOf(res.Manifest) }
