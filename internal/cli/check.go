package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/health"
	"github.com/backstream/backstream/internal/options"
)

func newCheckCmd(g *globals) *cobra.Command {
	var c checkFlags
	cmd := &cobra.Command{
		Use:  "check",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := c.opt.Settle(c.now); err != nil {
				return err
			}
			r, err := g.repos.Open(cmd.Context())
			if err != nil {
				return err
			}
			rep, err := health.Check(cmd.Context(), r, c.opt)
			if err != nil {
				return err
			}
			if c.asJSON {
				if err := printJSON(g.stdout, rep.Summary()); err != nil {
					return err
				}
			}
			if err := rep.Err(); err != nil {
				return fmt.Errorf("check %s: %w", rep.Location, err)
			}
			if c.asJSON {
				return nil
			}
			return rep.WriteText(g.stdout)
		},
	}
	c.register(cmd.Flags())
	return cmd
}

// checkFlags are check's flags: what to check (the --max-* ages, --kind),
// --now and --json.
type checkFlags struct {
	opt    health.Options
	now    string
	asJSON bool
}

// register defines check's flags on f.
func (c *checkFlags) register(f *pflag.FlagSet) {
	o := options.Bind(f)
	o.Span("max-age", &c.opt.MaxAge)
	o.Span("max-binlog-lag", &c.opt.MaxBinlogLag)
	o.Span("max-restore-test-age", &c.opt.MaxRestoreTestAge)
	o.String("kind", &c.opt.Kind)
	o.Bool("json", &c.asJSON)
	o.String("now", &c.now)
}
