package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/pitr"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/restoretest"
	"github.com/backstream/backstream/internal/verify"
)

// verifyFlags are verify's flags; rt those of --restore-test and --until.
type verifyFlags struct {
	parallel          int
	binlogs, readData bool
	kind, subset      string
	rt                restoreTestFlags
}

// restoreTestFlags are verify's options for --restore-test.
type restoreTestFlags struct {
	enabled, json                  bool
	until, untilGTID, server, base string
	// job holds --work-dir, --keep, --use-memory, --mariabackup and
	// --server-defaults-file.
	job restoretest.Job
}

func newVerifyCmd(g *globals) *cobra.Command {
	var o verifyFlags
	cmd := &cobra.Command{
		Use:  "verify",
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, g, args) },
	}
	o.register(cmd.Flags())
	return cmd
}

func (o *verifyFlags) register(f *pflag.FlagSet) {
	rt := &o.rt
	bind := options.Bind(f)
	bind.Int("parallel", &o.parallel)
	bind.Bool("restore-test", &rt.enabled)
	bind.String("kind", &o.kind)
	bind.Bool("binlogs", &o.binlogs)
	bind.Bool("read-data", &o.readData)
	bind.String("read-data-subset", &o.subset)
	bind.Bool("json", &rt.json)
	bind.String("work-dir", &rt.job.WorkDir)
	bind.Bool("keep", &rt.job.Keep)
	bind.String("use-memory", &rt.job.UseMemory)
	bind.String("mariabackup", &rt.job.Mariabackup)
	bind.String("server-defaults-file", &rt.job.ServerDefaults)
	bind.String("until", &rt.until)
	bind.String("until-gtid", &rt.untilGTID)
	bind.String("server", &rt.server)
	bind.String("base", &rt.base)
}

// run chooses what to verify from the flags, refusing what does not go
// together before anything is opened.
func (o *verifyFlags) run(cmd *cobra.Command, g *globals, args []string) error {
	rt := &o.rt
	if err := repoaccess.CheckKind(o.kind); err != nil {
		return err
	}
	sub, err := verify.ParseSubset(o.subset, o.readData)
	if err != nil {
		return err
	}
	if o.subset != "" && (o.binlogs || rt.enabled || rt.until != "" || rt.untilGTID != "") {
		return usagef("--read-data-subset reads part of one backup: not with --binlogs, --restore-test or --until")
	}
	if o.binlogs {
		if rt.enabled || len(args) > 0 {
			return usagef("--binlogs checks the archived binary logs: it takes no backup id and no --restore-test")
		}
		return o.verify(cmd, g, verify.Request{Binlogs: true}, "")
	}
	if rt.enabled {
		g.metricsCommand = "restore-test"
		return runRestoreTest(cmd, g, args, o.parallel, o.kind, rt)
	}
	if n := firstChanged(cmd.Flags(), []string{"json", "work-dir", "keep", "use-memory", "mariabackup", "server-defaults-file"}); n != "" {
		return usagef("--%s goes with --restore-test", n)
	}
	if (rt.until != "" || rt.untilGTID != "") && o.kind != "" {
		return usagef("--kind chooses what latest names; --until chooses the newest backup before its target (--base names its kind)")
	}
	t, ref, err := rt.target(args)
	if err != nil {
		return err
	}
	return o.verify(cmd, g, verify.Request{Until: t, Subset: sub}, ref)
}

// target reads what to verify or restore: the point in time of --until or
// --until-gtid, else the backup args name (ref).
func (rt *restoreTestFlags) target(args []string) (t *pitr.Target, ref string, err error) {
	if rt.until == "" && rt.untilGTID == "" {
		if rt.base != "" || rt.server != "" {
			return nil, "", usagef("--server and --base go with --until or --until-gtid")
		}
		ref, err = backupRef(args)
		return nil, ref, err
	}
	pt, err := pitr.ParseTarget(rt.until, rt.untilGTID, rt.server, rt.base, len(args) > 0)
	if err != nil {
		return nil, "", err
	}
	return &pt, "", nil
}

// verify runs req (see verify.Locked) and prints the result.
func (o *verifyFlags) verify(cmd *cobra.Command, g *globals, req verify.Request, ref string) error {
	req.Workers, req.NotRecorded = o.parallel, g.notRecorded("verify's")
	res, err := verify.Locked(cmd.Context(), g.repos, ref, o.kind, req, g.tracker)
	if err != nil {
		return err
	}
	res.WriteText(g.stdout)
	return nil
}

// notRecorded warns that a verdict (the verify's, the restore test's) is
// not recorded: the repository may be read-only to this account.
func (g *globals) notRecorded(whose string) func(error) {
	return func(err error) {
		fmt.Fprintf(g.stderr, "backstream: warning: the %s verdict is not recorded (check cannot report it): %v\n", whose, err)
	}
}

// runRestoreTest runs verify --restore-test and prints its report.
func runRestoreTest(cmd *cobra.Command, g *globals, args []string, parallel int, kind string, rt *restoreTestFlags) error {
	req, ctx, release, err := rt.request(cmd, g, args, parallel, kind)
	if err != nil {
		return err
	}
	defer release()
	rep, err := restoretest.Prove(ctx, req)
	if err != nil {
		return err
	}
	if rt.json {
		if err := printJSON(g.stdout, rep); err != nil {
			return err
		}
	} else {
		rep.WriteText(g.stdout)
	}
	return rep.Failure()
}

// request maps the flags to a restore test's request, with the
// repository locked (release unlocks it).
func (rt *restoreTestFlags) request(cmd *cobra.Command, g *globals, args []string, parallel int, kind string) (req restoretest.Request, ctx context.Context, release func(), err error) {
	req.Job = rt.job // before Until, which is the job's
	var ref string
	if req.Until, ref, err = rt.target(args); err != nil {
		return req, nil, nil, err
	}
	if parallel <= 0 {
		parallel = options.DefaultParallel()
	}
	req.Job.MariadbPath, req.Job.Workers, req.Job.Memory = g.mariadbPath, parallel, g.repos.Memory
	req.Repo, req.Backup, ctx, release, err = g.repos.ResolveLocked(cmd.Context(), ref, kind, repoaccess.OpRestore)
	var title string
	if req.Until != nil {
		title = "restore test --until " + req.Until.String()
	} else if req.Backup != nil {
		title = "restore test " + req.Backup.ID
	}
	req.Progress = func() *progress.Tracker { return g.tracker(title, 0) }
	req.NotRecorded = g.notRecorded("restore test's")
	return req, ctx, release, err
}
