package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/health"
	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/repoaccess"
)

func newCheckCmd(g *globals) *cobra.Command {
	var c checkFlags
	cmd := &cobra.Command{
		Use:  "check",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opt, err := c.options()
			if err != nil {
				return err
			}
			r, err := g.repos.Open(cmd.Context())
			if err != nil {
				return err
			}
			rep, err := health.Check(cmd.Context(), r, opt)
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

// checkFlags are check's flags.
type checkFlags struct {
	limits    health.Options // the --max-* ages
	kind, now string
	asJSON    bool
}

// register defines check's flags on f.
func (c *checkFlags) register(f *pflag.FlagSet) {
	o := options.Bind(f)
	o.Span("max-age", &c.limits.MaxAge)
	o.Span("max-binlog-lag", &c.limits.MaxBinlogLag)
	o.Span("max-restore-test-age", &c.limits.MaxRestoreTestAge)
	o.String("kind", &c.kind)
	o.Bool("json", &c.asJSON)
	o.String("now", &c.now)
}

// options reads check's flags into what to check.
func (c *checkFlags) options() (health.Options, error) {
	opt := c.limits
	opt.Kind = c.kind
	var err error
	if c.now != "" {
		if opt.Now, err = time.Parse(time.RFC3339, c.now); err != nil {
			return opt, usagef("--now %q: want a time like 2026-11-30T00:00:00Z or 2026-11-30T01:00:00+01:00", c.now)
		}
	}
	return opt, repoaccess.CheckKind(c.kind)
}
