package servercopy

import (
	"fmt"
	"io"
	"strings"

	"github.com/backstream/backstream/internal/logical"
)

// WriteText writes the first lines copy prints of res: the copy, where it
// stands in the source's binary log, and the columns masked. What the load
// did comes after them.
func (res *Result) WriteText(w io.Writer) {
	l := res.Load
	fmt.Fprintf(w, "copy %s complete: %d tables, %d data files, %d rows", res.ID, l.Tables, l.Chunks, l.Rows)
	if res.Resumed {
		fmt.Fprintf(w, " (resumed: %d tables kept from the earlier run)", len(l.Kept))
	}
	fmt.Fprintln(w)
	if p := res.Position; p.BinlogFile != "" {
		fmt.Fprintf(w, "source position: GTID %s, binary log %s at %d (recorded on the target in %s.copies)\n", p.GTID, p.BinlogFile, p.BinlogPosition, logical.JournalDatabase)
	} else {
		fmt.Fprintln(w, "source position: none (the source writes no binary log)")
	}
	if len(res.Masked) > 0 {
		fmt.Fprintf(w, "masked as copied: %s\n", strings.Join(res.Masked, ", "))
	}
}
