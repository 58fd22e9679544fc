package cli

import (
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/retention"
)

func newExpireCmd(g *globals) *cobra.Command {
	var e expireFlags
	cmd := &cobra.Command{
		Use:  "expire",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			req, err := e.request()
			if err != nil {
				return err
			}
			r, ctx, release, err := g.repos.OpenLocked(cmd.Context(), repoaccess.OpExpire, true)
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
	if err := repoaccess.CheckKind(p.Kind); err != nil {
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
