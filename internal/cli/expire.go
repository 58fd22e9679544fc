package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/retention"
)

func newExpireCmd(g *globals) *cobra.Command {
	var (
		p               retention.Policy
		within          string
		pruneIncomplete bool
		pitrWindow      string
		confirm         bool
		asJSON          bool
	)
	cmd := &cobra.Command{
		Use:   "expire --keep-last N | --keep-within D | --keep-daily N | --keep-weekly N | --keep-monthly N | --keep-yearly N ... [--confirm]",
		Short: "Delete old backups by a retention policy (a dry run unless --confirm)",
		Example: `  backstream expire --repo /backups --keep-daily 7 --keep-weekly 5 --keep-monthly 12          # the plan, deleting nothing
  backstream expire --repo /backups --keep-daily 7 --keep-weekly 5 --keep-monthly 12 --confirm
  backstream expire --repo /backups --keep-pitr 7d --prune-incomplete --confirm`,
		Long: `expire decides for every complete backup whether the policy keeps it and prints the plan:
a backup is kept if any rule keeps it, and the newest backup of each kind is always kept.
The rules apply to physical and logical backups apart (--keep-last 7 keeps the newest 7
of each), or with --kind to that kind only, keeping the others. They
count backups by their start time in UTC: --keep-last N the newest N, --keep-within D
those started within D (14d, 36h, 2w), --keep-daily N, --keep-weekly N, --keep-monthly N
and --keep-yearly N the newest backup of each of the last N calendar days, ISO weeks,
calendar months or years that have one. Nothing is
deleted without --confirm; each deletion removes the manifest first.
--prune-incomplete also removes the leftovers of failed or crashed backups (directories
without a manifest), and what writes that never finished left anywhere under backups/:
the temporary files of a local repository (a backup killed with SIGKILL leaves its
streams' behind) and the incomplete multipart uploads an S3 server keeps. expire holds the exclusive repository lock, so no backup that could still commit
is running while it works: a writer whose lock goes stale stops itself.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkKind(p.Kind); err != nil {
				return err
			}
			if within != "" {
				d, err := retention.ParseDuration(within)
				if err != nil {
					return usagef("--keep-within: %v", err)
				}
				p.KeepWithin = d
			}
			if pitrWindow != "" {
				d, err := retention.ParseDuration(pitrWindow)
				if err != nil {
					return usagef("--keep-pitr: %v", err)
				}
				p.KeepPITR = d
			}
			if p.Empty() && !pruneIncomplete {
				return usagef("give at least one of --keep-last, --keep-within, --keep-daily, --keep-weekly, --keep-monthly, --keep-yearly, --keep-pitr, or only --prune-incomplete (expire never deletes everything)")
			}
			if p.KeepLast < 0 || p.KeepDaily < 0 || p.KeepWeekly < 0 {
				return usagef("retention counts must not be negative")
			}
			r, ctx, release, err := g.openLocked(cmd.Context(), repo.OpExpire, true)
			if err != nil {
				return err
			}
			defer release()
			out, failed := retention.Run(ctx, r, retention.Request{Policy: p, PruneIncomplete: pruneIncomplete, Confirm: confirm, Now: time.Now()})
			if failed != nil && out == nil {
				return failed // nothing was planned
			}
			for i := range out {
				if !out[i].Complete && out[i].Kind == "" && out[i].Keep && out[i].Damaged == "" {
					out[i].Reasons = []string{"incomplete (--prune-incomplete removes it)"}
				}
			}
			if asJSON {
				if err := printJSON(g.stdout, out); err != nil {
					return err
				}
				return failed
			}
			printExpirePlan(g, out, confirm, p)
			return failed
		},
	}
	f := cmd.Flags()
	f.StringVar(&p.Kind, "kind", "", "apply the rules to backups of this kind only, physical or logical, and keep the others (default: to each kind apart)")
	f.IntVar(&p.KeepLast, "keep-last", 0, "keep the newest N backups")
	f.StringVar(&within, "keep-within", "", "keep backups started within this long, e.g. 14d, 36h, 2w")
	f.IntVar(&p.KeepDaily, "keep-daily", 0, "keep the newest backup of each of the last N days (UTC) that have one")
	f.IntVar(&p.KeepWeekly, "keep-weekly", 0, "keep the newest backup of each of the last N ISO weeks (UTC) that have one")
	f.IntVar(&p.KeepMonthly, "keep-monthly", 0, "keep the newest backup of each of the last N calendar months (UTC) that have one")
	f.IntVar(&p.KeepYearly, "keep-yearly", 0, "keep the newest backup of each of the last N years (UTC) that have one")
	f.StringVar(&pitrWindow, "keep-pitr", "", "keep what a point-in-time restore to any moment of this window needs (the backup before it, and binary logs from there); older archived binary logs are deleted")
	f.BoolVar(&pruneIncomplete, "prune-incomplete", false, "also remove leftovers of failed backups (no manifest), temporary files and incomplete uploads included")
	f.BoolVar(&confirm, "confirm", false, "delete; without it expire only prints the plan")
	f.BoolVar(&asJSON, "json", false, "print the plan as JSON")
	return cmd
}

// policyFlags names the rules of p as the flags that set them, e.g.
// "--keep-last 3 --keep-daily 7".
func policyFlags(p retention.Policy) string {
	var parts []string
	if p.KeepLast > 0 {
		parts = append(parts, fmt.Sprintf("--keep-last %d", p.KeepLast))
	}
	if p.KeepWithin > 0 {
		parts = append(parts, "--keep-within "+retention.FormatDuration(p.KeepWithin))
	}
	if p.KeepDaily > 0 {
		parts = append(parts, fmt.Sprintf("--keep-daily %d", p.KeepDaily))
	}
	if p.KeepWeekly > 0 {
		parts = append(parts, fmt.Sprintf("--keep-weekly %d", p.KeepWeekly))
	}
	if p.KeepPITR > 0 {
		parts = append(parts, "--keep-pitr "+retention.FormatDuration(p.KeepPITR))
	}
	return strings.Join(parts, " ")
}

func printExpirePlan(g *globals, out []retention.Entry, confirm bool, p retention.Policy) {
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTARTED (UTC)\tSIZE\tACTION\tWHY")
	var dels, freed int64
	var left *retention.Entry
	for i, e := range out {
		if e.Kind == retention.KindLeftovers {
			left = &out[i]
			continue
		}
		action, why := "KEEP", strings.Join(e.Reasons, ", ")
		if e.Damaged != "" {
			why += " (" + e.Damaged + ")"
		}
		if !e.Keep {
			action, why = "DELETE", "not kept by "+policyFlags(p)
			switch {
			case e.Kind == archive.KindBinlog:
				why = strings.Join(e.Reasons, ", ")
			case !e.Complete:
				why = "incomplete (--prune-incomplete)"
			}
			if e.Deleted {
				action = "DELETED"
			}
			if !confirm || e.Deleted {
				dels++
				freed += e.Size
			}
		}
		started := "-" // an archived binary log whose manifest is damaged, or that is held only as segments, has no known time
		if !e.Started.IsZero() {
			started = e.Started.UTC().Format("2006-01-02 15:04:05")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.ID, started, progress.HumanBytes(e.Size), action, why)
	}
	tw.Flush()
	if left != nil && left.Leftovers != nil {
		size := ""
		if left.Size > 0 {
			size = " (" + progress.HumanBytes(left.Size) + ")"
		}
		verb := "would remove"
		if left.Deleted {
			verb = "removed"
		}
		fmt.Fprintf(g.stdout, "%s what unfinished writes left under backups/: %s%s\n", verb, left.Leftovers, size)
	}
	switch {
	case dels == 0 && left != nil:
		fmt.Fprintln(g.stdout, "no backups to delete")
	case dels == 0:
		fmt.Fprintln(g.stdout, "nothing to delete")
	case confirm:
		fmt.Fprintf(g.stdout, "deleted %d backups or binary log files, %s\n", dels, progress.HumanBytes(freed))
	default:
		fmt.Fprintf(g.stdout, "dry run: would delete %d backups or binary log files, %s; run again with --confirm to delete\n", dels, progress.HumanBytes(freed))
	}
}
