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
			e.req.Now = time.Now()
			if err := e.req.Check(); err != nil {
				return err
			}
			r, ctx, release, err := g.repos.OpenLocked(cmd.Context(), repoaccess.OpExpire, true)
			if err != nil {
				return err
			}
			defer release()
			res, failed := retention.Run(ctx, r, e.req)
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

// expireFlags are expire's flags: its request, and --json.
type expireFlags struct {
	req    retention.Request
	asJSON bool
}

// register defines expire's flags on f.
func (e *expireFlags) register(f *pflag.FlagSet) {
	o := options.Bind(f)
	p := &e.req.Policy
	o.String("kind", &p.Kind)
	o.Int("keep-last", &p.KeepLast)
	o.Span("keep-within", &p.KeepWithin)
	o.Int("keep-daily", &p.KeepDaily)
	o.Int("keep-weekly", &p.KeepWeekly)
	o.Int("keep-monthly", &p.KeepMonthly)
	o.Int("keep-yearly", &p.KeepYearly)
	o.Span("keep-pitr", &p.KeepPITR)
	o.Bool("prune-incomplete", &e.req.PruneIncomplete)
	o.Bool("confirm", &e.req.Confirm)
	o.Bool("json", &e.asJSON)
}
