package retention

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/progress"
)

// WriteText writes res for people: a table of the plan (what is kept and
// why, what goes), what unfinished writes left, and one line of what was,
// or in a dry run would be, deleted.
func (res Result) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTARTED (UTC)\tSIZE\tACTION\tWHY")
	var dels, freed int64
	var left, blocks *Entry
	for i, e := range res.Entries {
		switch e.Kind {
		case KindLeftovers:
			left = &res.Entries[i]
			continue
		case KindBlocks:
			blocks = &res.Entries[i]
			continue
		}
		fmt.Fprintln(tw, res.row(e))
		if !e.Keep && (!res.Request.Confirm || e.Deleted) {
			dels++
			freed += e.Size
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if left != nil && left.Leftovers != nil {
		writeLeftovers(w, *left)
	}
	if blocks != nil {
		fmt.Fprintf(w, "collected %s: %s\n", progress.HumanBytes(blocks.Size), strings.Join(blocks.Reasons, ", "))
	}
	_, err := fmt.Fprintln(w, res.total(dels, freed, left != nil))
	return err
}

// row is e's line of the plan's table, its columns separated by tabs.
func (res Result) row(e Entry) string {
	action, why := "KEEP", strings.Join(e.Reasons, ", ")
	if e.Damaged != "" {
		why += " (" + e.Damaged + ")"
	}
	if !e.Keep {
		action, why = "DELETE", "not kept by "+policyFlags(res.Request.Policy)
		switch {
		case e.Kind == archive.KindBinlog:
			why = strings.Join(e.Reasons, ", ")
		case !e.Complete:
			why = "incomplete (--prune-incomplete)"
		}
		if e.Deleted {
			action = "DELETED"
		}
	}
	started := "-" // an archived binary log whose manifest is damaged, or that is held only as segments, has no known time
	if !e.Started.IsZero() {
		started = e.Started.UTC().Format("2006-01-02 15:04:05")
	}
	return strings.Join([]string{e.ID, started, progress.HumanBytes(e.Size), action, why}, "\t")
}

// writeLeftovers writes what unfinished writes left, removed or found.
func writeLeftovers(w io.Writer, left Entry) {
	size := ""
	if left.Size > 0 {
		size = " (" + progress.HumanBytes(left.Size) + ")"
	}
	verb := "would remove"
	if left.Deleted {
		verb = "removed"
	}
	fmt.Fprintf(w, "%s what unfinished writes left under backups/: %s%s\n", verb, left.Leftovers, size)
}

// total is the plan's last line: dels entries, of freed bytes, deleted or
// to delete; leftovers says whether unfinished writes left anything.
func (res Result) total(dels, freed int64, leftovers bool) string {
	switch {
	case dels == 0 && leftovers:
		return "no backups to delete"
	case dels == 0:
		return "nothing to delete"
	case res.Request.Confirm:
		return fmt.Sprintf("deleted %d backups or binary log files, %s", dels, progress.HumanBytes(freed))
	}
	return fmt.Sprintf("dry run: would delete %d backups or binary log files, %s; run again with --confirm to delete", dels, progress.HumanBytes(freed))
}

// policyFlags names the rules of p as the flags that set them, e.g.
// "--keep-last 3 --keep-daily 7".
func policyFlags(p Policy) string {
	var parts []string
	if p.KeepLast > 0 {
		parts = append(parts, fmt.Sprintf("--keep-last %d", p.KeepLast))
	}
	if p.KeepWithin > 0 {
		parts = append(parts, "--keep-within "+FormatDuration(p.KeepWithin))
	}
	if p.KeepDaily > 0 {
		parts = append(parts, fmt.Sprintf("--keep-daily %d", p.KeepDaily))
	}
	if p.KeepWeekly > 0 {
		parts = append(parts, fmt.Sprintf("--keep-weekly %d", p.KeepWeekly))
	}
	if p.KeepMonthly > 0 {
		parts = append(parts, fmt.Sprintf("--keep-monthly %d", p.KeepMonthly))
	}
	if p.KeepYearly > 0 {
		parts = append(parts, fmt.Sprintf("--keep-yearly %d", p.KeepYearly))
	}
	if p.KeepPITR > 0 {
		parts = append(parts, "--keep-pitr "+FormatDuration(p.KeepPITR))
	}
	return strings.Join(parts, " ")
}
