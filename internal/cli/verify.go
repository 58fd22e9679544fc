package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/pitr"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/restoretest"
	"github.com/backstream/backstream/internal/toolpath"
	"github.com/backstream/backstream/internal/verify"
)

// restoreTestFlags are verify's options for --restore-test.
type restoreTestFlags struct {
	enabled     bool
	json        bool
	workDir     string
	keep        bool
	useMemory   string
	mariabackup string
	until       string
	untilGTID   string
	server      string
	base        string
	// serverDefaults is read by the server started on a physical
	// backup's restored datadir, after the options the backup recorded.
	serverDefaults string
}

func newVerifyCmd(g *globals) *cobra.Command {
	var parallel int
	var binlogs bool
	var kind string
	var rt restoreTestFlags
	cmd := &cobra.Command{
		Use:   "verify [ID|latest] | --binlogs",
		Short: "Check every checksum of a backup, or restore it into a sandbox and check every table",
		Example: `  backstream verify latest --repo /backups
  backstream verify latest --repo /backups --restore-test
  backstream verify --repo /backups --binlogs`,
		Long: `verify reads every stream object of a backup in parallel and checks the CRC of each
stored frame, the CRC of each xbstream chunk, the stream structure, the digest of each
object and the size and digest of each file against the manifest, and every metadata
object (for a logical backup also that its catalog and its data files agree), writing
nothing.

With --restore-test it proves the backup restores: it restores it (an incremental with
its chain, with prepare; a logical backup by loading it) into a throwaway sandbox server
in a temporary directory, starts the server, runs CHECK TABLE on every table, compares
the row counts and row sums a logical backup recorded with the loaded tables, and
removes the sandbox. The restore checks every checksum on the way. The server on a
physical backup starts with the options the backup recorded in backup-my.cnf (InnoDB's
format; for an encrypted server its encryption plugin and key file, which must be on
this host at the recorded path), then those of --server-defaults-file. --until or
--until-gtid tests a point-in-time restore instead of a named backup. --json prints
the report as JSON for monitoring.

verify ID checks everything a restore of ID reads: for an incremental, every backup of
its chain too. With --until or --until-gtid (and --server, --base) it checks what a
point-in-time restore to that target reads instead: the backup it starts from, with its
chain, and every archived binary log file it replays. What verify finds is recorded in
the backup's directory (verified.json), where check and list report it.

With --binlogs it checks the archived binary logs instead: every file archived whole
against its manifest, every segment of a file being archived against its header's
digest, that those segments leave no hole, and that nothing archived is missing:
no file between two archived ones, and the newest file or segment the source's head
object (binlogs/<source>/head.json) names is there.

Exit code 0 means the backup passed; 3 that it is corrupt or failed its restore test;
1 that the check could not run.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkKind(kind); err != nil {
				return err
			}
			if binlogs {
				if rt.enabled || len(args) > 0 {
					return usagef("--binlogs checks the archived binary logs: it takes no backup id and no --restore-test")
				}
				return runVerifyBinlogs(cmd, g, parallel)
			}
			if rt.enabled {
				g.metricsCommand = "restore-test"
				return runRestoreTest(cmd, g, args, parallel, kind, rt)
			}
			for _, f := range []string{"json", "work-dir", "keep", "use-memory", "mariabackup", "server-defaults-file"} {
				if cmd.Flags().Changed(f) {
					return usagef("--%s goes with --restore-test", f)
				}
			}
			if rt.until != "" || rt.untilGTID != "" {
				if kind != "" {
					return usagef("--kind chooses what latest names; --until chooses the newest backup before its target (--base names its kind)")
				}
				return runVerifyUntil(cmd, g, args, parallel, rt)
			}
			if rt.base != "" || rt.server != "" {
				return usagef("--server and --base go with --until or --until-gtid")
			}
			r, m, ctx, release, err := g.resolveLocked(cmd.Context(), args, kind, repo.OpVerify)
			if err != nil {
				return err
			}
			defer release()
			links, err := r.Chain(ctx, m)
			if err != nil {
				return err
			}
			stored := m.Stats.StoredBytes
			for _, l := range links {
				stored += l.Stats.StoredBytes
			}
			t := g.tracker("verify "+m.ID, stored)
			t.SetBackup(m.ID)
			links, err = verify.Restorable(ctx, r, m, parallel, t)
			t.Finish(err)
			g.recordChecksums(ctx, r, m, links, err)
			if err != nil {
				return err
			}
			streams, files := len(m.Streams), len(m.Files)
			chain := ""
			if len(links) > 0 {
				ids := make([]string, len(links))
				for i, l := range links {
					ids[i] = l.ID
					streams, files = streams+len(l.Streams), files+len(l.Files)
				}
				chain = fmt.Sprintf("with its chain %s: ", strings.Join(ids, ", "))
			}
			fmt.Fprintf(g.stdout, "backup %s: OK (%s%d streams, %d files, every checksum matches)\n", m.ID, chain, streams, files)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&parallel, "parallel", 0, "decoding threads; with --restore-test also loading and checking connections (default: number of CPUs)")
	f.BoolVar(&rt.enabled, "restore-test", false, "restore into a throwaway sandbox server and check every table")
	f.StringVar(&kind, "kind", "", "with latest: the latest backup of this kind, physical or logical (default: the newest whole-server physical backup, else logical)")
	f.BoolVar(&binlogs, "binlogs", false, "check every archived binary log file and segment instead of a backup")
	f.BoolVar(&rt.json, "json", false, "print the restore test's report as JSON")
	f.StringVar(&rt.workDir, "work-dir", "", "where the restore test's sandbox goes; needs room for the restored data (default: the temporary directory)")
	f.BoolVar(&rt.keep, "keep", false, "leave the restore test's sandbox directory (its path is printed)")
	f.StringVar(&rt.useMemory, "use-memory", "", "memory for prepare and the sandbox's buffer pool, e.g. 1G")
	f.StringVar(&rt.mariabackup, "mariabackup", "", "mariabackup binary for prepare")
	f.StringVar(&rt.serverDefaults, "server-defaults-file", "", "option file whose [mysqld] options the restore test's server reads after those the backup recorded; its "+physical.FileKeyVariable+" is also the key file's password that prepare needs (default: $"+physical.FileKeyEnv+")")
	f.StringVar(&rt.until, "until", "", "check (or with --restore-test, restore-test) a point-in-time restore to this time (as restore --until): its backup and the binary logs it replays")
	f.StringVar(&rt.untilGTID, "until-gtid", "", "check (or with --restore-test, restore-test) a point-in-time restore up to this GTID (as restore --until-gtid)")
	f.StringVar(&rt.server, "server", "", "with --until: the server (hostname-server_id, as list shows it) whose backups and binary logs to use, when the repository holds several (as restore --server)")
	f.StringVar(&rt.base, "base", "", "with --until: the kind of backup the point-in-time restore starts from, physical or logical (as restore --base)")
	return cmd
}

// runVerifyUntil checks what a point-in-time restore to --until or
// --until-gtid reads: the backup it starts from, with its chain, and the
// archived binary logs it replays.
func runVerifyUntil(cmd *cobra.Command, g *globals, args []string, parallel int, rt restoreTestFlags) error {
	t, err := pitrTarget(args, rt.until, rt.untilGTID, rt.server, rt.base)
	if err != nil {
		return err
	}
	r, ctx, release, err := g.openLocked(cmd.Context(), repo.OpVerify, false)
	if err != nil {
		return err
	}
	defer release()
	p, err := pitr.Plan(ctx, r, t)
	if err != nil {
		return err
	}
	m := p.Base
	tr := g.tracker("verify --until "+t.String(), 0)
	tr.SetBackup(m.ID)
	links, err := verify.Restorable(ctx, r, m, parallel, tr)
	g.recordChecksums(ctx, r, m, links, err)
	for i := 0; err == nil && i < len(p.Binlogs); i++ {
		b := p.Binlogs[i]
		err = verify.BinlogFile(ctx, r, b.Whole, b.Segments, parallel, tr)
	}
	tr.Finish(err)
	if err != nil {
		return fmt.Errorf("the point-in-time restore to %s (from backup %s) cannot be done: %w", t, m.ID, err)
	}
	fmt.Fprintf(g.stdout, "point-in-time restore to %s: OK (backup %s, %d backups below it, %d binary log files, every checksum matches)\n", t, m.ID, len(links), len(p.Binlogs))
	return nil
}

// runVerifyBinlogs checks every archived binary log.
func runVerifyBinlogs(cmd *cobra.Command, g *globals, parallel int) error {
	r, ctx, release, err := g.openLocked(cmd.Context(), repo.OpVerify, false)
	if err != nil {
		return err
	}
	defer release()
	t := g.tracker("verify --binlogs", 0)
	files, segments, err := verify.Binlogs(ctx, r, parallel, t)
	t.Finish(err)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "binary logs: OK (%d files, %d segments, every checksum matches)\n", files, segments)
	return nil
}

func runRestoreTest(cmd *cobra.Command, g *globals, args []string, parallel int, kind string, rt restoreTestFlags) error {
	if parallel <= 0 {
		parallel = defaultParallel()
	}
	fileKey, err := physical.UserFileKey(rt.serverDefaults)
	if err != nil {
		return err
	}
	job := restoretest.Job{WorkDir: rt.workDir, UseMemory: rt.useMemory, ServerDefaults: rt.serverDefaults, FileKey: fileKey,
		Mariabackup: rt.mariabackup, MariadbPath: toolpath.Parse(g.mariadbPath), Workers: parallel, Keep: rt.keep}
	var release func()
	ctx := cmd.Context()
	title := ""
	if (rt.base != "" || rt.server != "") && rt.until == "" && rt.untilGTID == "" {
		return usagef("--server and --base go with --until or --until-gtid")
	}
	if rt.until != "" || rt.untilGTID != "" {
		t, err := pitrTarget(args, rt.until, rt.untilGTID, rt.server, rt.base)
		if err != nil {
			return err
		}
		if job.Repo, ctx, release, err = g.openLocked(ctx, repo.OpRestore, false); err != nil {
			return err
		}
		job.Until, title = &t, "restore test --until "+t.String()
	} else {
		var err error
		if job.Repo, job.Backup, ctx, release, err = g.resolveLocked(ctx, args, kind, repo.OpRestore); err != nil {
			return err
		}
		if err := job.Repo.CheckReadable(ctx, job.Backup); err != nil {
			release()
			return err
		}
		title = "restore test " + job.Backup.ID
	}
	defer release()
	t := g.tracker(title, 0)
	if job.Backup != nil {
		t.SetBackup(job.Backup.ID)
	}
	job.Progress = t
	rep, err := restoretest.Run(ctx, job)
	t.Finish(err)
	testedID := ""
	switch {
	case rep != nil:
		testedID = rep.Backup
	case job.Backup != nil:
		testedID = job.Backup.ID
	}
	g.recordRestoreTest(ctx, job.Repo, testedID, rep, err)
	if err != nil {
		return err
	}
	if rt.json {
		if err := printJSON(g.stdout, rep); err != nil {
			return err
		}
	} else {
		printRestoreTest(g, rep)
	}
	if !rep.Passed {
		return archive.Corruptf("%s: restore test failed: %s", tested(rep), rep.Problems[0])
	}
	return nil
}

// tested names what a restore test restored: the backup, or, when a
// point-in-time restore failed before it said which, the target.
func tested(rep *restoretest.Report) string {
	if rep.Backup == "" {
		return "the point-in-time restore to " + rep.Until
	}
	what := "backup " + rep.Backup
	if len(rep.Chain) > 0 {
		what += " (on " + strings.Join(rep.Chain, ", ") + ")"
	}
	if rep.Until != "" {
		what += " replayed to " + rep.Until
	}
	return what
}

func printRestoreTest(g *globals, rep *restoretest.Report) {
	what := tested(rep)
	if rep.Dir != "" {
		fmt.Fprintf(g.stdout, "sandbox kept in %s\n", rep.Dir)
	}
	if !rep.Passed {
		for _, p := range rep.Problems {
			fmt.Fprintf(g.stdout, "FAIL %s\n", p)
		}
		fmt.Fprintf(g.stdout, "%s: restore test FAILED (%d problems, %d tables)\n", what, len(rep.Problems), len(rep.Tables))
		return
	}
	compared := 0
	for _, t := range rep.Tables {
		if t.RowSum != "" {
			compared++
		}
	}
	fmt.Fprintf(g.stdout, "%s: restore test passed: the server started, CHECK TABLE passed on %d tables", what, len(rep.Tables))
	if compared > 0 {
		fmt.Fprintf(g.stdout, ", rows and row sums match the backup's record for %d", compared)
	}
	fmt.Fprintf(g.stdout, " (%.1f s)\n", rep.Seconds)
}

// recordChecksums stores in the repository what a verify of m (with its
// chain links) found, so that check and list report it: every backup
// checked passed, or the one found damaged did not. A verify that could
// not run (not damage) records nothing. A failure to store it is a
// warning: the repository may be read-only to this account.
func (g *globals) recordChecksums(ctx context.Context, r *repo.Repo, m *archive.Manifest, links []*archive.Manifest, err error) {
	now := time.Now().UTC()
	record := func(id string, o repo.Outcome) {
		if werr := r.RecordVerdict(ctx, id, &o, nil); werr != nil {
			fmt.Fprintf(g.stderr, "backstream: warning: the verify's verdict is not recorded (check cannot report it): %v\n", werr)
		}
	}
	var link *verify.LinkError
	switch {
	case err == nil:
		for _, l := range append(links, m) {
			record(l.ID, repo.Outcome{At: now, OK: true})
		}
	case errors.As(err, &link) && archive.IsCorrupt(link.Err):
		record(link.Link, repo.Outcome{At: now, Error: oneLine(link.Err)})
	case archive.IsCorrupt(err):
		record(m.ID, repo.Outcome{At: now, Error: oneLine(err)})
	}
}

// recordRestoreTest stores in the repository how a restore test of backup
// id ended (rep is nil when it failed before its report), so that check
// (--max-restore-test-age) can tell when a backup was last proven
// restorable. A test that did not get to name its backup, or could not
// run, records nothing.
func (g *globals) recordRestoreTest(ctx context.Context, r *repo.Repo, id string, rep *restoretest.Report, err error) {
	if id == "" || (err != nil && !archive.IsCorrupt(err)) {
		return
	}
	o := repo.Outcome{At: time.Now().UTC(), OK: err == nil && rep.Passed}
	switch {
	case err != nil:
		o.Error = oneLine(err)
	case !rep.Passed:
		o.Error = rep.Problems[0]
	}
	if werr := r.RecordVerdict(ctx, rep.Backup, nil, &o); werr != nil {
		fmt.Fprintf(g.stderr, "backstream: warning: the restore test's verdict is not recorded (check cannot report it): %v\n", werr)
	}
}

// oneLine is err's message on one line.
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }
