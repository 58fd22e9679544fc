package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/provision"
	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/restorecase"
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
		Prepare: d.prepare, UseMemory: d.useMemory, Mariabackup: d.mariabackup, MariadbPath: g.mariadbPath, Workers: d.parallel, Memory: g.repos.Memory, Log: d.log(g), NoSync: d.noSync,
		DataDirs: maps, Placed: func(p restore.Placement) { fmt.Fprintln(placed, p) }, FileKey: fileKey}}, nil
}

// log is where mariabackup's and the tools' messages go: stderr with
// --verbose, else nowhere.
func (d *datadirFlags) log(g *globals) io.Writer {
	if d.verbose {
		return g.stderr
	}
	return nil
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

// restoreFlags are restore's flags: the request of each of its modes,
// which the use case chooses from them.
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

// run restores as the flags ask (restorecase.Run chooses the mode) and
// prints the result.
func (o *restoreFlags) run(cmd *cobra.Command, g *globals, args []string) error {
	if err := repoaccess.CheckKind(o.kind); err != nil {
		return err
	}
	ref, err := backupRef(args)
	if err != nil {
		return err
	}
	res, err := restorecase.Run(cmd.Context(), o.request(cmd.Flags(), g, ref, len(args) > 0))
	return o.print(g, res, err)
}

// request maps the flags to restore's request; what it reads (the
// repository, the connection, files) it reads only when the mode needs it.
func (o *restoreFlags) request(f *pflag.FlagSet, g *globals, ref string, named bool) restorecase.Request {
	parallel := o.d.parallel
	if parallel <= 0 {
		parallel = options.DefaultParallel()
	}
	load := firstChanged(f, o.l.onlyLogical())
	return restorecase.Request{
		Backup: ref, Named: named, Kind: o.kind,
		Until: o.until, UntilGTID: o.untilGTID, Server: o.server, Base: o.base, ApplyTo: o.applyTo, As: o.as,
		TargetDir: o.d.target, Prepare: o.d.prepare, ServerDefaults: o.d.serverDefaults,
		Datadir: o.p.datadir, Force: o.p.force, Start: o.p.start, StartTimeout: o.p.startTimeout, CheckTimeout: o.p.checkTimeout,
		Load: o.l.load, Parallel: parallel, Masking: o.l.mask.given(), Mask: o.l.mask.specs, MaskKeyFile: o.l.mask.keyFile,
		MariadbPath: g.mariadbPath, Log: o.d.log(g), Memory: g.repos.Memory,
		Given: restorecase.Given{Place: firstChanged(f, o.p.names()), Load: load, LoadIsConn: slices.Contains(options.ConnNames, load),
			PlaceMisuse: o.p.check(f)},
		Lock: g.repos.Lock(repoaccess.OpRestore, false),
		Deferred: restorecase.Deferred{
			Open:        g.repos.Open,
			Conn:        func() (mariadb.Config, error) { return o.l.conn.Resolve(f) },
			Datadir:     func() (restore.Job, error) { return o.d.job(g, f) },
			ServerFiles: func() (mariadb.ServerFiles, error) { return o.p.serverFiles(o.d.serverDefaults) },
			Tracker:     g.tracker,
		},
	}
}

// print prints what restore did, as text or with --json as one object,
// and returns err, a refusal for what was asked as a usage error.
func (o *restoreFlags) print(g *globals, res *restorecase.Result, err error) error {
	switch {
	case res == nil:
	case res.InPlace != nil: // also when the swap or the start failed
		if in := res.InPlace; !o.l.asJSON {
			provision.DefaultMessages.WritePlaced(g.stdout, in.Backup.ID, in.Target, in.Placed, in.Swapped, o.p.checkTimeout)
		} else if perr := printJSON(g.stdout, in.JSON(err)); perr != nil {
			return perr
		}
		return err
	default:
		err = res.Print(g.stdout, g.stderr, o.l.asJSON, printJSON, err)
	}
	return refused(err)
}
