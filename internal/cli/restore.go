package cli

import (
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/provision"
	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/restorecase"
)

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
	bind.Bool("serial-replay", &o.d.r.Restore.Options.SerialReplay)
	bind.String("as", &o.as)
}

// run restores as the flags ask (restorecase.Run chooses the mode), printing.
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

// request maps the flags to restore's request, reading only what the mode needs.
func (o *restoreFlags) request(f *pflag.FlagSet, g *globals, ref string, named bool) restorecase.Request {
	parallel := o.d.r.Restore.Options.Workers
	if parallel <= 0 {
		parallel = options.DefaultParallel()
	}
	load := firstChanged(f, o.l.onlyLogical())
	o.d.settle(g, f)
	physical := o.d.r.Restore
	physical.Resume = o.l.load.Resume // --resume continues an interrupted restore of either kind
	return restorecase.Request{
		Backup: ref, Named: named, Kind: o.kind,
		Until: o.until, UntilGTID: o.untilGTID, Server: o.server, Base: o.base, ApplyTo: o.applyTo, As: o.as,
		Restore: physical,
		Datadir: o.p.datadir, Force: o.p.force, Start: o.p.start, StartTimeout: o.p.startTimeout, CheckTimeout: o.p.checkTimeout,
		Load: o.l.load, Parallel: parallel, Masking: o.l.mask.given(), Mask: o.l.mask.specs, MaskKeyFile: o.l.mask.keyFile,
		MariadbPath: g.mariadbPath, Log: o.d.log(g), Memory: g.repos.Memory,
		Given: restorecase.Given{Place: firstChanged(f, o.p.names()), Load: load, LoadIsConn: slices.Contains(options.ConnNames, load),
			PlaceMisuse: o.p.check(f)},
		Lock: g.repos.Lock(repoaccess.OpRestore, false),
		Deferred: restorecase.Deferred{
			Open:    g.repos.Open,
			Conn:    o.l.conn.Resolve,
			Tracker: g.tracker,
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
		g.serverless = res.Datadir != nil || res.PointInTime != nil
		err = res.Print(g.stdout, g.stderr, o.l.asJSON, printJSON, err)
	}
	return err
}
