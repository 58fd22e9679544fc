package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/pitr"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/provision"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/serverup"
	"github.com/backstream/backstream/internal/toolpath"
)

// datadirFlags are the options of writing a datadir, shared by restore and
// receive.
type datadirFlags struct {
	target      string
	prepare     bool
	useMemory   string
	owner       string
	mariabackup string
	parallel    int
	verbose     bool
	noSync      bool
	dataDirs    []string
	// serverDefaults is an option file for what prepares and serves the
	// result: the key file's password, and a point-in-time replay's
	// server options.
	serverDefaults string
}

func (d *datadirFlags) register(f *pflag.FlagSet) {
	o := options.Bind(f)
	o.String("target-dir", &d.target)
	o.Bool("prepare", &d.prepare)
	o.String("use-memory", &d.useMemory)
	o.String("owner", &d.owner)
	o.String("mariabackup", &d.mariabackup)
	o.Int("parallel", &d.parallel)
	o.Bool("verbose", &d.verbose)
	o.Bool("no-sync", &d.noSync)
	o.Strings("map-data-directory", &d.dataDirs)
	o.String("server-defaults-file", &d.serverDefaults)
}

// job is the restore job these flags describe, less what it restores.
func (d *datadirFlags) job(g *globals, f *pflag.FlagSet) (restore.Job, error) {
	var maps []restore.DirMap
	for _, s := range d.dataDirs {
		m, err := restore.ParseDirMap(s)
		if err != nil {
			return restore.Job{}, usagef("--map-data-directory %v", err)
		}
		maps = append(maps, m)
	}
	owner := d.owner
	if !f.Changed("owner") {
		owner = physical.DefaultOwner()
	}
	var log io.Writer
	if d.verbose {
		log = g.stderr
	}
	fileKey, err := physical.UserFileKey(d.serverDefaults)
	if err != nil {
		return restore.Job{}, err
	}
	// With --json stdout carries the one object: where tablespaces went
	// is said on stderr.
	placed := g.stdout
	if asJSON, _ := f.GetBool("json"); asJSON {
		placed = g.stderr
	}
	return restore.Job{TargetDir: d.target, Owner: owner, Options: restore.Options{
		Prepare: d.prepare, UseMemory: d.useMemory, Mariabackup: d.mariabackup, MariadbPath: toolpath.Parse(g.mariadbPath), Workers: d.parallel, Memory: g.mem, Log: log, NoSync: d.noSync,
		DataDirs: maps, Placed: func(p restore.Placement) { fmt.Fprintln(placed, p) }, FileKey: fileKey}}, nil
}

// refused makes a restore refused for what it was asked (restore.RefusedError)
// a usage error.
func refused(err error) error {
	var re *restore.RefusedError
	if errors.As(err, &re) {
		return usageError{err}
	}
	return err
}

func newRestoreCmd(g *globals) *cobra.Command {
	var o restoreFlags
	cmd := &cobra.Command{
		Use:  "restore",
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, g, args) },
	}
	o.register(cmd.Flags())
	return cmd
}

// restoreFlags are restore's flags: which of its modes they choose, and
// the request of each.
type restoreFlags struct {
	d                                        datadirFlags
	l                                        logicalRestoreFlags
	p                                        placeFlags
	until, untilGTID, server, base, as, kind string
	applyTo                                  bool
}

func (o *restoreFlags) register(f *pflag.FlagSet) {
	o.d.register(f)
	o.l.register(f)
	o.p.register(f)
	bind := options.Bind(f)
	bind.String("until", &o.until)
	bind.String("until-gtid", &o.untilGTID)
	bind.String("kind", &o.kind)
	bind.String("base", &o.base)
	bind.String("server", &o.server)
	bind.Bool("apply-to", &o.applyTo)
	bind.String("as", &o.as)
}

func (o *restoreFlags) pointInTime() bool { return o.until != "" || o.untilGTID != "" }

func (o *restoreFlags) masking() bool { return len(o.l.mask.specs) > 0 || o.l.mask.keyFile != "" }

// run chooses the mode from the flags, refusing what does not go
// together before anything is opened, and runs it.
func (o *restoreFlags) run(cmd *cobra.Command, g *globals, args []string) error {
	f := cmd.Flags()
	if err := checkKind(o.kind); err != nil {
		return err
	}
	if o.kind != "" && (o.pointInTime() || o.applyTo) {
		return usagef("--kind chooses what latest names; a point-in-time restore or an import chooses its backup itself (--base with --until)")
	}
	if o.masking() && (o.applyTo || o.pointInTime()) {
		return usagef("--mask masks the load of a logical backup; --until, --until-gtid and --apply-to restore, replay or import data as it is, so they refuse it (the rules may come from an option file)")
	}
	if o.applyTo && !o.pointInTime() && (len(o.l.tables) > 0 || len(o.l.databases) > 0) {
		if o.server != "" || o.base != "" {
			return usagef("--server and --base go with --until or --until-gtid")
		}
		if n := firstChanged(f, o.p.names()); n != "" {
			return usagef("--%s restores a whole backup into place; --table --apply-to imports tables into a running server", n)
		}
		return runImport(cmd, g, &o.d, &o.l, args, o.as)
	}
	if o.as != "" {
		return usagef("--as goes with --table and --apply-to")
	}
	if o.pointInTime() {
		return o.runPointInTime(cmd, g, args)
	}
	if o.d.serverDefaults != "" && !o.d.prepare && o.p.datadir == "" {
		return usagef("--server-defaults-file goes with --prepare, --datadir, --until or --until-gtid: only they prepare the backup or start a server")
	}
	if o.applyTo || o.server != "" || o.base != "" {
		return usagef("--apply-to, --server and --base go with --until or --until-gtid")
	}
	if err := o.p.check(f); err != nil {
		return err
	}
	return o.runBackup(cmd, g, args)
}

// runPointInTime restores to a point in time, or with --apply-to replays
// onto a running server.
func (o *restoreFlags) runPointInTime(cmd *cobra.Command, g *globals, args []string) error {
	if n := firstChanged(cmd.Flags(), o.p.names()); n != "" {
		return usagef("--%s restores a backup into place; a point-in-time restore writes a --target-dir", n)
	}
	t, err := pitrTarget(args, o.until, o.untilGTID, o.server, o.base)
	if err != nil {
		return err
	}
	if !o.applyTo {
		return runPITR(cmd, g, &o.d, t, o.l.asJSON)
	}
	if o.base != "" {
		return usagef("--base chooses the backup a point-in-time restore starts from; --apply-to starts from the position of the server it replays onto")
	}
	return runApply(cmd, g, &o.d, &o.l, t)
}

// runBackup restores the backup named (or latest) through the engine its
// manifest chooses.
func (o *restoreFlags) runBackup(cmd *cobra.Command, g *globals, args []string) error {
	r, m, ctx, release, err := g.resolveLocked(cmd.Context(), args, o.kind, repo.OpRestore)
	if err != nil {
		return err
	}
	defer release()
	eng, err := restorecase.EngineFor(m)
	if err != nil {
		return err
	}
	req, err := o.request(cmd, g, r, m, eng.Kind())
	if err != nil {
		return err
	}
	res, err := eng.Restore(ctx, req)
	switch {
	case res != nil && res.Load != nil:
		restorecase.WarnPasswordless(g.stderr, &res.Load.LoadResult)
		return printResult(g, o.l.asJSON, res.Load.JSON(), res.Load.WriteText)
	case res != nil && res.InPlace != nil:
		return o.printInPlace(g, res.InPlace, err)
	case res != nil && res.Datadir != nil:
		return printResult(g, o.l.asJSON, res.Datadir.JSON(), res.Datadir.WriteText)
	}
	return maskUsage(refused(err))
}

// printResult prints a result: with --json its JSON form, else its text.
func printResult(g *globals, asJSON bool, form any, text func(io.Writer)) error {
	if asJSON {
		return printJSON(g.stdout, form)
	}
	text(g.stdout)
	return nil
}

// request maps the flags to the request of a backup of kind, refusing
// those that are for the other kind.
func (o *restoreFlags) request(cmd *cobra.Command, g *globals, r *repo.Repo, m *archive.Manifest, kind string) (restorecase.Request, error) {
	f := cmd.Flags()
	req := restorecase.Request{Repo: r, Backup: m, Progress: func() *progress.Tracker { return g.tracker("restore "+m.ID, m.Stats.StoredBytes) }}
	var err error
	if kind == archive.KindLogical {
		if o.d.target != "" || o.d.prepare || o.p.datadir != "" {
			return req, usagef("backup %s is logical: it loads into a running server (--host/--socket), not a --target-dir or --datadir", m.ID)
		}
		req.Load, err = o.l.job(f, o.d.parallel)
		req.Load.Memory = g.mem
		return req, err
	}
	if o.masking() {
		return req, usagef("--mask masks the load of a logical backup; backup %s is physical: its files are restored as they are and cannot be masked (the rules may come from an option file)", m.ID)
	}
	if n := firstChanged(f, o.l.onlyLogical()); n != "" && n != "json" && (o.p.start == "" || !slices.Contains(connFlagNames, n)) {
		return req, usagef("--%s is for logical backups (or, to reach the started server, with --start); backup %s is physical", n, m.ID)
	}
	switch {
	case o.p.datadir != "" && o.d.target != "":
		return req, usagef("--datadir restores into place, --target-dir into a new directory: give one")
	case o.p.datadir != "":
		if req.InPlace, err = o.place(f); err != nil {
			return req, err
		}
	case o.d.target == "":
		return req, usagef("--target-dir (or --datadir) is required")
	}
	req.Datadir, err = o.d.job(g, f)
	return req, err
}

// place is the request of a restore into place (--datadir), with --start
// the server to start there.
func (o *restoreFlags) place(f *pflag.FlagSet) (*restorecase.Place, error) {
	sf, err := o.p.serverFiles(o.d.serverDefaults)
	if err != nil {
		return nil, err
	}
	pl := &restorecase.Place{Dir: o.p.datadir, Force: o.p.force, ServerFiles: sf}
	if o.p.start == "" {
		return pl, nil
	}
	cfg, err := o.l.conn.resolve(f)
	if err != nil {
		return nil, err
	}
	pl.Start = &serverup.Options{How: o.p.start, Conn: cfg, Timeout: o.p.startTimeout, CheckTimeout: o.p.checkTimeout, Biggest: 5}
	return pl, nil
}

// runPITR restores to a point in time: the backup is chosen, not named.
func runPITR(cmd *cobra.Command, g *globals, d *datadirFlags, t pitr.Target, asJSON bool) error {
	if d.target == "" {
		return usagef("--target-dir is required")
	}
	r, ctx, release, err := g.openLocked(cmd.Context(), repo.OpRestore, false)
	if err != nil {
		return err
	}
	defer release()
	job, err := d.job(g, cmd.Flags())
	if err != nil {
		return err
	}
	res, err := restorecase.PointInTime(ctx, restorecase.PointInTimeRequest{Repo: r, Target: t, Job: job, ServerDefaults: d.serverDefaults,
		Progress: func() *progress.Tracker { return g.tracker("restore --until "+t.String(), 0) }})
	if err != nil {
		return refused(err)
	}
	return printResult(g, asJSON, res.JSON(), res.WriteText)
}

// runApply replays the archived binary logs onto a running server.
func runApply(cmd *cobra.Command, g *globals, d *datadirFlags, l *logicalRestoreFlags, t pitr.Target) error {
	if d.target != "" || d.prepare || d.serverDefaults != "" {
		return usagef("--apply-to replays onto the running server that --host/--socket name: it takes no --target-dir, --prepare or --server-defaults-file")
	}
	conn, err := l.conn.resolve(cmd.Flags())
	if err != nil {
		return err
	}
	r, ctx, release, err := g.openLocked(cmd.Context(), repo.OpRestore, false)
	if err != nil {
		return err
	}
	defer release()
	req := restorecase.ApplyRequest{Repo: r, Target: t, Conn: conn, MariadbPath: toolpath.Parse(g.mariadbPath), Memory: g.mem}
	if d.verbose {
		req.Log = g.stderr
	}
	res, err := restorecase.Apply(ctx, req)
	if err != nil {
		return refused(err)
	}
	return printResult(g, l.asJSON, res.JSON(), res.WriteText)
}

// pitrTarget reads --until or --until-gtid, which choose the backup
// themselves, --server and --base.
func pitrTarget(args []string, until, untilGTID, server, base string) (pitr.Target, error) {
	t := pitr.Target{Server: server, Base: base}
	switch {
	case base != "" && base != archive.KindPhysical && base != archive.KindLogical:
		return t, usagef("--base %q: want physical or logical", base)
	case len(args) > 0:
		return t, usagef("--until and --until-gtid choose the backup themselves; give no backup id")
	case until != "" && untilGTID != "":
		return t, usagef("give --until or --until-gtid, not both")
	case until == "end":
		t.End = true
	case until != "":
		tm, err := parseUntil(until)
		if err != nil {
			return t, usageError{err}
		}
		t.Time = tm
	default:
		if _, err := pitr.ParseTargetGTIDs(untilGTID); err != nil {
			return t, usagef("--until-gtid %q: %v", untilGTID, err)
		}
		t.GTID = untilGTID
	}
	return t, nil
}

// parseUntil reads a point in time: "2006-01-02 15:04:05" (UTC) or RFC 3339
// (also with a space for the T, as RFC 3339 allows).
func parseUntil(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	for _, layout := range []string{time.DateTime, "2006-01-02T15:04:05", "2006-01-02 15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--until %q: want a time like 2026-11-21 10:15:00 (UTC), 2026-11-21T10:15:00+01:00, or end", s)
}

// printInPlace prints a restore into place, also when the swap or the
// start failed with err, and returns err.
func (o *restoreFlags) printInPlace(g *globals, res *restorecase.InPlaceResult, err error) error {
	if !o.l.asJSON {
		provision.DefaultMessages.WritePlaced(g.stdout, res.Backup.ID, res.Target, res.Placed, res.Swapped, o.p.checkTimeout)
	} else if perr := printJSON(g.stdout, res.JSON(err)); perr != nil {
		return perr
	}
	return err
}
