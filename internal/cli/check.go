package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/health"
	"github.com/backstream/backstream/internal/options"
)

// checkLong is check's help.
const checkLong = `check judges a repository for monitoring (a Nagios-style check, a systemd unit
with OnFailure=): it exits 0 and prints one line beginning "OK:" when all is well,
and otherwise exits non-zero and prints one line on stderr that names every problem:

  - the newest complete whole-server backup finished longer ago than --max-age (or
    there is none): the newest physical one if the repository has any, else the
    newest logical one, or with --kind the newest of that kind; a logical backup of
    some databases or tables never counts;
  - a backup cannot be restored: its manifest is damaged, an object its manifest
    names is missing, or the last verify of it found damage;
  - a chain of incrementals is broken: an incremental's parent is missing or cannot
    be restored;
  - an archived binary log file or segment is missing (a file between two archived
    ones, or the newest ones the source's head object names, or the head itself):
    a point-in-time restore cannot reach past it;
  - with --max-restore-test-age, no backup passed a restore test (verify
    --restore-test records when one did in the repository) within that long;
  - with --max-binlog-lag, a server's archived binary log was last known to hold all
    the server had written longer ago than that (see binlogs/<source>/status.json).

Exit codes: 0 healthy; 1 a problem (too old, a chain broken by a missing backup,
binary logs lagging, no recent restore test) or the repository could not be read;
3 damage (a damaged manifest, a missing object or archived binary log, damage verify
found, a chain broken at one of these); 2 bad flags. check reads the catalog only and takes no lock: it runs
while a backup does.`

func newCheckCmd(g *globals) *cobra.Command {
	var c checkFlags
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Exit non-zero with a one-line reason when the newest backup is too old, a chain is broken or the binary logs lag",
		Example: `  backstream check --repo /backups --max-age 26h
  backstream check --repo s3://bucket/db1 --max-age 26h --max-binlog-lag 60s`,
		Long: checkLong,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opt, err := c.options()
			if err != nil {
				return err
			}
			r, err := g.openRepo(cmd.Context(), false)
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
	return opt, checkKind(c.kind)
}
