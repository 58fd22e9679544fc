package inventory

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/binlog"
	"github.com/backstream/backstream/internal/progress"
)

// timeLayout is how the listing writes a backup's start, in UTC.
const timeLayout = "2006-01-02 15:04:05"

// WriteText writes l for people: a table of the backups to w, then what
// each logical backup holds; a warning for each backup that is damaged or
// cannot be restored goes to warn.
func (l Listing) WriteText(w, warn io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tSTARTED (UTC)\tTOOK\tSIZE\tSTORED\tRATIO\tSERVER\tBINLOG POSITION")
	for _, b := range l {
		fmt.Fprintln(tw, b.row())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, b := range l {
		if b.Damaged {
			fmt.Fprintf(warn, "warning: %s; latest and new incrementals skip backup %s\n", b.Damage, b.ID)
		}
		if b.Unrestorable != "" {
			fmt.Fprintf(warn, "warning: %s\n", b.Unrestorable)
		}
	}
	return l.writeDatabases(w)
}

// row is b's line of the table, its columns separated by tabs.
func (b Backup) row() string {
	started := b.Started.UTC().Format(timeLayout)
	if b.Damaged {
		return strings.Join([]string{b.ID, "DAMAGED", started, "-", "-", progress.HumanBytes(b.StoredBytes), "-", "-", "-"}, "\t")
	}
	ratio := "-"
	if b.StoredBytes > 0 {
		ratio = fmt.Sprintf("%.2fx", float64(b.RawBytes)/float64(b.StoredBytes))
	}
	pos := "-"
	if b.Positions.BinlogFile != "" {
		pos = fmt.Sprintf("%s:%d", b.Positions.BinlogFile, b.Positions.BinlogPosition)
	}
	if gp := b.Positions.Galera; gp != nil {
		pos += " galera " + gp.String()
	}
	kind := b.Kind
	switch {
	case b.Parent != "":
		kind = fmt.Sprintf("%s +%d", b.Kind, b.Depth)
	case len(b.MergedFrom) > 0:
		kind = b.Kind + " merged"
	case b.Partial:
		kind = b.Kind + " partial"
	}
	if b.Unrestorable != "" {
		kind += " BROKEN"
	}
	return strings.Join([]string{b.ID, kind, started, b.Finished.Sub(b.Started).Round(100 * time.Millisecond).String(),
		progress.HumanBytes(b.RawBytes), progress.HumanBytes(b.StoredBytes), ratio, b.Server.Version, pos}, "\t")
}

// writeDatabases writes what each logical backup of l holds, under the
// table of backups: its databases, the tables whose history it lacks, the
// columns its dump masked.
func (l Listing) writeDatabases(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := false
	for _, b := range l {
		for _, d := range b.Databases {
			if !header {
				fmt.Fprintln(tw, "\nLOGICAL BACKUP\tDATABASE\tTABLES\tROWS\tSIZE")
				header = true
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", b.ID, d.Name, d.Tables, d.Rows, progress.HumanBytes(d.Bytes))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, b := range l {
		for _, d := range b.Databases {
			for _, t := range d.NoHistory {
				fmt.Fprintf(w, "backup %s: table %s.%s: history not in the backup (--versioned-current-only)\n", b.ID, d.Name, t)
			}
		}
		if cols := archive.MaskedColumns(b.Databases); len(cols) > 0 {
			fmt.Fprintf(w, "backup %s: masked when dumped: %s\n", b.ID, strings.Join(cols, ", "))
		}
	}
	return nil
}

// WriteText writes b for people: list --binlogs (every file, then each
// server's window, warnings to warn) or, with status, list --status (each
// server's window only).
func (b Binlogs) WriteText(w, warn io.Writer, status bool) error {
	if !status {
		return binlog.WriteListing(w, warn, b.Files, b.Overviews)
	}
	for _, v := range b.Overviews {
		v.WriteText(w)
	}
	return nil
}

// JSON is what list --binlogs --json prints of b (Entries) or, with
// status, list --status --json (the windows, [] when there are none).
func (b Binlogs) JSON(status bool) any {
	if status {
		return append([]binlog.Overview{}, b.Overviews...)
	}
	return b.Entries()
}
