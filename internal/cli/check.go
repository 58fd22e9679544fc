package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/health"
	"github.com/backstream/backstream/internal/retention"
)

func newCheckCmd(g *globals) *cobra.Command {
	var maxAge, maxLag, maxTest, kind, now string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Exit non-zero with a one-line reason when the newest backup is too old, a chain is broken or the binary logs lag",
		Example: `  backstream check --repo /backups --max-age 26h
  backstream check --repo s3://bucket/db1 --max-age 26h --max-binlog-lag 60s`,
		Long: `check judges a repository for monitoring (a Nagios-style check, a systemd unit
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
while a backup does.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opt, err := checkOptions(maxAge, maxLag, maxTest, now)
			if err != nil {
				return err
			}
			if err := checkKind(kind); err != nil {
				return err
			}
			opt.Kind = kind
			r, err := g.openRepo(cmd.Context(), false)
			if err != nil {
				return err
			}
			rep, err := health.Check(cmd.Context(), r, opt)
			if err != nil {
				return err
			}
			if asJSON {
				if err := printJSON(g.stdout, checkReportOf(rep)); err != nil {
					return err
				}
			}
			if err := rep.Err(); err != nil {
				return fmt.Errorf("check %s: %w", rep.Location, err)
			}
			if !asJSON {
				fmt.Fprintln(g.stdout, healthyLine(rep, opt))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&maxAge, "max-age", "", "fail when the newest complete backup finished longer ago than this, e.g. 26h or 8d (default: not checked)")
	f.StringVar(&maxLag, "max-binlog-lag", "", "fail when a server's archived binary log was last known to hold everything longer ago than this, e.g. 60s or 2h (default: not checked)")
	f.StringVar(&maxTest, "max-restore-test-age", "", "fail when no backup passed a restore test (verify --restore-test) within this long, e.g. 8d (default: not checked)")
	f.StringVar(&kind, "kind", "", "judge only backups of this kind, physical or logical, by --max-age and --max-restore-test-age (default: the whole-server physical backups if there are any, else the logical ones)")
	f.BoolVar(&asJSON, "json", false, "also print the report as one JSON object on stdout (ok, newest backup and its age, binary log lags, problems); the exit code stays")
	f.StringVar(&now, "now", "", "judge as if it were this time (RFC 3339, e.g. 2026-11-30T00:00:00Z), to try an alert (default: the clock)")
	return cmd
}

// checkOptions reads check's flags.
func checkOptions(maxAge, maxLag, maxTest, now string) (health.Options, error) {
	var opt health.Options
	var err error
	if maxAge != "" {
		if opt.MaxAge, err = retention.ParseDuration(maxAge); err != nil {
			return opt, usagef("--max-age: %v", err)
		}
	}
	if maxLag != "" {
		if opt.MaxBinlogLag, err = retention.ParseDuration(maxLag); err != nil {
			return opt, usagef("--max-binlog-lag: %v", err)
		}
	}
	if maxTest != "" {
		if opt.MaxRestoreTestAge, err = retention.ParseDuration(maxTest); err != nil {
			return opt, usagef("--max-restore-test-age: %v", err)
		}
	}
	if now != "" {
		if opt.Now, err = time.Parse(time.RFC3339, now); err != nil {
			return opt, usagef("--now %q: want a time like 2026-11-30T00:00:00Z or 2026-11-30T01:00:00+01:00", now)
		}
	}
	return opt, nil
}

// healthyLine is check's one line for a repository without problems.
func healthyLine(rep health.Report, opt health.Options) string {
	parts := []string{"OK: " + rep.Location}
	if m := rep.Newest; m != nil {
		s := fmt.Sprintf("newest backup %s (%s) finished %s ago", m.ID, m.Kind, health.Round(rep.Age))
		if opt.MaxAge > 0 {
			s += fmt.Sprintf(" (at most %s)", health.Round(opt.MaxAge))
		}
		parts = append(parts, s)
	} else {
		parts = append(parts, "no backups")
	}
	if m := rep.RestoreTested; m != nil {
		s := fmt.Sprintf("backup %s passed a restore test %s ago", m.ID, health.Round(rep.Now.Sub(rep.RestoreTestAt)))
		if opt.MaxRestoreTestAge > 0 {
			s += fmt.Sprintf(" (at most %s)", health.Round(opt.MaxRestoreTestAge))
		}
		parts = append(parts, s)
	}
	parts = append(parts, fmt.Sprintf("%d complete backups (%d incremental), no chain broken", rep.Backups, rep.Incrementals))
	for _, s := range rep.Sources {
		parts = append(parts, fmt.Sprintf("binary logs of %s archived up to %s ago (at most %s)", s.Source, health.Round(s.Lag), health.Round(opt.MaxBinlogLag)))
	}
	return strings.Join(parts, "; ")
}

// checkReport is what check --json prints.
type checkReport struct {
	OK           bool      `json:"ok"`
	Location     string    `json:"location"`
	Now          time.Time `json:"now"`
	Newest       string    `json:"newest,omitempty"` // the newest complete backup's id
	AgeSeconds   float64   `json:"age_seconds,omitempty"`
	Backups      int       `json:"backups"`
	Incrementals int       `json:"incrementals"`
	// RestoreTested is the backup that last passed a restore test, at
	// RestoreTestAt.
	RestoreTested string         `json:"restore_tested,omitempty"`
	RestoreTestAt *time.Time     `json:"restore_test_at,omitempty"`
	Binlogs       []checkSource  `json:"binlogs,omitempty"`
	Problems      []checkProblem `json:"problems,omitempty"`
}

type checkSource struct {
	Source     string    `json:"source"`
	CompleteAt time.Time `json:"complete_at"`
	LagSeconds float64   `json:"lag_seconds"`
}

type checkProblem struct {
	Kind   string `json:"kind"` // stale, broken-chain, damaged, binlog-lag, untested
	Backup string `json:"backup,omitempty"`
	Source string `json:"source,omitempty"`
	Error  string `json:"error"`
}

func checkReportOf(rep health.Report) checkReport {
	out := checkReport{OK: rep.Err() == nil, Location: rep.Location, Now: rep.Now, Backups: rep.Backups, Incrementals: rep.Incrementals}
	if rep.Newest != nil {
		out.Newest, out.AgeSeconds = rep.Newest.ID, rep.Age.Seconds()
	}
	if m := rep.RestoreTested; m != nil {
		out.RestoreTested, out.RestoreTestAt = m.ID, &rep.RestoreTestAt
	}
	for _, s := range rep.Sources {
		out.Binlogs = append(out.Binlogs, checkSource{Source: s.Source, CompleteAt: s.CompleteAt, LagSeconds: s.Lag.Seconds()})
	}
	for _, p := range rep.Problems {
		out.Problems = append(out.Problems, checkProblem{Kind: string(p.Kind), Backup: p.Backup, Source: p.Source, Error: p.Err.Error()})
	}
	return out
}
