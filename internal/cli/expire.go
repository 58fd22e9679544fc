package cli

import (
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/retention"
)

// expireLong is expire's help.
const expireLong = `expire decides for every complete backup whether the policy keeps it and prints the plan:
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
is running while it works: a writer whose lock goes stale stops itself.`

func newExpireCmd(g *globals) *cobra.Command {
	var e expireFlags
	cmd := &cobra.Command{
		Use:   "expire --keep-last N | --keep-within D | --keep-daily N | --keep-weekly N | --keep-monthly N | --keep-yearly N ... [--confirm]",
		Short: "Delete old backups by a retention policy (a dry run unless --confirm)",
		Example: `  backstream expire --repo /backups --keep-daily 7 --keep-weekly 5 --keep-monthly 12          # the plan, deleting nothing
  backstream expire --repo /backups --keep-daily 7 --keep-weekly 5 --keep-monthly 12 --confirm
  backstream expire --repo /backups --keep-pitr 7d --prune-incomplete --confirm`,
		Long: expireLong,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			req, err := e.request()
			if err != nil {
				return err
			}
			r, ctx, release, err := g.openLocked(cmd.Context(), repo.OpExpire, true)
			if err != nil {
				return err
			}
			defer release()
			res, failed := retention.Run(ctx, r, req)
			if failed != nil && res.Entries == nil {
				return failed // nothing was planned
			}
			if e.asJSON {
				if err := printJSON(g.stdout, res.Entries); err != nil {
					return err
				}
				return failed
			}
			werr := res.WriteText(g.stdout)
			if failed != nil {
				return failed
			}
			return werr
		},
	}
	e.register(cmd.Flags())
	return cmd
}

// expireFlags are expire's flags.
type expireFlags struct {
	policy          retention.Policy
	pruneIncomplete bool
	confirm         bool
	asJSON          bool
}

// register defines expire's flags on f.
func (e *expireFlags) register(f *pflag.FlagSet) {
	o := options.Bind(f)
	o.String("kind", &e.policy.Kind)
	o.Int("keep-last", &e.policy.KeepLast)
	o.Span("keep-within", &e.policy.KeepWithin)
	o.Int("keep-daily", &e.policy.KeepDaily)
	o.Int("keep-weekly", &e.policy.KeepWeekly)
	o.Int("keep-monthly", &e.policy.KeepMonthly)
	o.Int("keep-yearly", &e.policy.KeepYearly)
	o.Span("keep-pitr", &e.policy.KeepPITR)
	o.Bool("prune-incomplete", &e.pruneIncomplete)
	o.Bool("confirm", &e.confirm)
	o.Bool("json", &e.asJSON)
}

// request reads expire's flags into the request, refusing a policy that
// would delete everything.
func (e *expireFlags) request() (retention.Request, error) {
	p := e.policy
	if err := checkKind(p.Kind); err != nil {
		return retention.Request{}, err
	}
	if p.Empty() && !e.pruneIncomplete {
		return retention.Request{}, usagef("give at least one of --keep-last, --keep-within, --keep-daily, --keep-weekly, --keep-monthly, --keep-yearly, --keep-pitr, or only --prune-incomplete (expire never deletes everything)")
	}
	if p.KeepLast < 0 || p.KeepDaily < 0 || p.KeepWeekly < 0 {
		return retention.Request{}, usagef("retention counts must not be negative")
	}
	return retention.Request{Policy: p, PruneIncomplete: e.pruneIncomplete, Confirm: e.confirm, Now: time.Now()}, nil
}
