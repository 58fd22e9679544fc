package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/pitr"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/restore"
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
	f.StringVar(&d.target, "target-dir", "", "directory to restore into (must be empty or absent)")
	f.BoolVar(&d.prepare, "prepare", false, "run mariabackup --prepare on the result")
	f.StringVar(&d.useMemory, "use-memory", "", "memory for --prepare, e.g. 1G")
	f.StringVar(&d.owner, "owner", "", "user to own the restored files (default: mysql when running as root)")
	f.StringVar(&d.mariabackup, "mariabackup", "", "mariabackup binary for --prepare")
	f.IntVar(&d.parallel, "parallel", 0, "decoding threads (default: number of CPUs)")
	f.BoolVarP(&d.verbose, "verbose", "v", false, "copy mariabackup's prepare log to stderr")
	f.BoolVar(&d.noSync, "no-sync", false, "restoring a datadir: do not wait until the restored files are on disk before reporting success (faster; a crash of the host soon after can lose them)")
	f.StringArrayVar(&d.dataDirs, "map-data-directory", nil, "OLD=NEW: place the tablespaces of tables created with DATA DIRECTORY under OLD in NEW (repeatable; needs --prepare); default: in the datadir")
	f.StringVar(&d.serverDefaults, "server-defaults-file", "", "option file whose [mysqld] "+physical.FileKeyVariable+" is the key file's password that --prepare needs (default: $"+physical.FileKeyEnv+"); with --until also options of the replaying server, read after those the backup recorded; with --datadir the option file of the server that runs on it, whose redo, undo and binary log places outside the datadir are checked (default with --start: the files the server reads)")
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
		Prepare: d.prepare, UseMemory: d.useMemory, Mariabackup: d.mariabackup, MariadbPath: toolpath.Parse(g.mariadbPath), Workers: d.parallel, Log: log, NoSync: d.noSync,
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
	var d datadirFlags
	var l logicalRestoreFlags
	var p placeFlags
	var until, untilGTID, server, base, as, kind string
	var applyTo bool
	cmd := &cobra.Command{
		Use:   "restore [ID|latest]",
		Short: "Restore a physical backup into a new datadir, or load a logical one into a server",
		Example: `  backstream restore latest --repo /backups --target-dir /var/lib/mysql.new --prepare
  backstream restore latest --repo /backups --datadir /var/lib/mysql --force --start
  backstream restore --repo /backups --until "2026-11-21 10:15:00" --target-dir /srv/pitr
  backstream restore latest --repo /backups --table shop.orders --apply-to --as shop.orders_restored --socket /run/mysqld/mysqld.sock
  backstream restore latest --repo /backups --socket /run/mysqld/mysqld.sock    # a logical backup into a running server
  backstream restore latest --repo /backups --socket /run/mysqld/mysqld.sock --mask 'shop.*.email=email' --mask-key-file /etc/backstream/mask.key`,
		Long: `restore reads every stream of a backup in parallel, verifies every checksum and writes
the files into --target-dir, which must be empty or absent. With --prepare it then runs
mariabackup --prepare, so that a server starts on the result. Ownership and modes
(directories 0700, files 0660, as the server makes them) are set at the end. A failed restore leaves the target empty.
Tablespaces of tables created with DATA DIRECTORY stay in the datadir (their .isl links,
which name the source's paths, are removed) unless --map-data-directory OLD=NEW places
them elsewhere; a destination a running server uses, or holding such a file, is refused.

A logical backup is loaded into the server that --host/--socket (and option files) name:
tables are created without their secondary indexes, their data files load in parallel
through LOAD DATA, each checked against the manifest and recorded in a journal on the
target in the same transaction, then indexes, foreign keys, views, triggers, routines,
events follow. Before anything changes, the target server is named on stderr (host or
socket, port, version, @@hostname). Accounts are created only with --users (accounts the
target has are kept unless --replace-users). Tables the target already has are refused
(--drop-existing), and an interrupted load continues with --resume. --database, --table
and their --exclude- forms pick what to load (each filter narrows: see the guide); views,
triggers, routines, events and grants that refer to what is not loaded are left out and
listed; --rename-database a:b loads a as b. --mask db.table.column=FUNCTION (names as in
the backup; repeatable) replaces a column's values in every data file before it loads,
so that the target, its binary log included, never holds them.

With --datadir DIR (physical) the backup is restored and prepared beside DIR, owned, and
renamed into place only when complete; a DIR that holds anything is refused unless
--force, which moves it aside to DIR.replaced-<time>. A DIR that is a mount point or a
symbolic link is restored inside itself (in DIR/.backstream-new) and its entries swapped:
what it held moves into DIR/.backstream-replaced-<time>, lost+found stays. The redo log, undo tablespaces and
binary logs that the server's options (--server-defaults-file, or the option files --start
makes it read) keep outside DIR are refused in the same way if they hold files, which
--force moves aside while the restored ones take their places. --start then starts the server
(systemctl start mariadb, or --start='a command'), waits until it answers on the
connection flags, makes sure it runs on DIR, runs CHECK TABLE on the system tables and
counts the rows of the biggest tables.

With --table db.t --apply-to (physical), the backup is restored and prepared in a work
directory and each table's InnoDB tablespace is exported there and imported into the
running server the connection flags name (on this host, same MariaDB major.minor), created
from the backup's definition, with its triggers; --as db.t2 gives it another name, beside
the live table (its triggers are then named, not created). --database db --apply-to imports
every table of db. Only the tables' files and the system's are read from the repository. A
table the target has is refused, and each import must give the backup's CHECKSUM TABLE.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkKind(kind); err != nil {
				return err
			}
			if kind != "" && (until != "" || untilGTID != "" || applyTo) {
				return usagef("--kind chooses what latest names; a point-in-time restore or an import chooses its backup itself (--base with --until)")
			}
			masking := len(l.mask.specs) > 0 || l.mask.keyFile != ""
			if masking && (applyTo || until != "" || untilGTID != "") {
				return usagef("--mask masks the load of a logical backup; --until, --until-gtid and --apply-to restore, replay or import data as it is, so they refuse it (the rules may come from an option file)")
			}
			if applyTo && until == "" && untilGTID == "" && (len(l.tables) > 0 || len(l.databases) > 0) {
				if server != "" || base != "" {
					return usagef("--server and --base go with --until or --until-gtid")
				}
				if f := firstChanged(cmd.Flags(), p.names()); f != "" {
					return usagef("--%s restores a whole backup into place; --table --apply-to imports tables into a running server", f)
				}
				return runImport(cmd, g, &d, &l, args, as)
			}
			if as != "" {
				return usagef("--as goes with --table and --apply-to")
			}
			if until != "" || untilGTID != "" {
				if f := firstChanged(cmd.Flags(), p.names()); f != "" {
					return usagef("--%s restores a backup into place; a point-in-time restore writes a --target-dir", f)
				}
				t, err := pitrTarget(args, until, untilGTID, server, base)
				if err != nil {
					return err
				}
				if applyTo {
					if base != "" {
						return usagef("--base chooses the backup a point-in-time restore starts from; --apply-to starts from the position of the server it replays onto")
					}
					return runApply(cmd, g, &d, &l, t, d.serverDefaults)
				}
				return runPITR(cmd, g, &d, t, l.asJSON)
			}
			if d.serverDefaults != "" && !d.prepare && p.datadir == "" {
				return usagef("--server-defaults-file goes with --prepare, --datadir, --until or --until-gtid: only they prepare the backup or start a server")
			}
			if applyTo || server != "" || base != "" {
				return usagef("--apply-to, --server and --base go with --until or --until-gtid")
			}
			if err := p.check(cmd.Flags()); err != nil {
				return err
			}
			r, m, ctx, release, err := g.resolveLocked(cmd.Context(), args, kind, repo.OpRestore)
			if err != nil {
				return err
			}
			defer release()
			if err := r.CheckReadable(ctx, m); err != nil {
				return err
			}
			if m.Kind == archive.KindLogical {
				if d.target != "" || d.prepare || p.datadir != "" {
					return usagef("backup %s is logical: it loads into a running server (--host/--socket), not a --target-dir or --datadir", m.ID)
				}
				job, err := l.job(cmd.Flags(), d.parallel)
				if err != nil {
					return err
				}
				return runLoad(ctx, g, r, m, job, l.asJSON)
			}
			if masking {
				return usagef("--mask masks the load of a logical backup; backup %s is physical: its files are restored as they are and cannot be masked (the rules may come from an option file)", m.ID)
			}
			if f := firstChanged(cmd.Flags(), l.onlyLogical()); f != "" && f != "json" && (p.start == "" || !slices.Contains(connFlagNames, f)) {
				return usagef("--%s is for logical backups (or, to reach the started server, with --start); backup %s is physical", f, m.ID)
			}
			var place *restore.Place
			switch {
			case p.datadir != "" && d.target != "":
				return usagef("--datadir restores into place, --target-dir into a new directory: give one")
			case p.datadir != "":
				sf, err := p.serverFiles(d.serverDefaults)
				if err != nil {
					return err
				}
				if place, err = restore.PlaceFor(p.datadir, p.force, sf); err != nil {
					return refused(err)
				}
				// A datadir in place is prepared: a server runs on it.
				d.target, d.prepare = place.Staging, true
			case d.target == "":
				return usagef("--target-dir (or --datadir) is required")
			}
			job, err := d.job(g, cmd.Flags())
			if err != nil {
				return err
			}
			if job.Links, err = restore.Links(ctx, r, m); err != nil {
				return err
			}
			t := g.tracker("restore "+m.ID, m.Stats.StoredBytes)
			t.SetBackup(m.ID)
			job.Progress = t
			err = restore.Datadir(ctx, job)
			sum := t.Finish(err)
			if err != nil {
				return refused(err)
			}
			restored := restoredResult{Backup: m.ID, Chain: linkIDs(job.Links), Target: d.target, Prepared: d.prepare,
				ReadBytes: sum.BytesIn, Seconds: sum.Elapsed.Seconds()}
			if place != nil {
				if !l.asJSON {
					_, err := p.finish(cmd, g.stdout, &l.conn, m, place)
					return err
				}
				did, err := p.finish(cmd, io.Discard, &l.conn, m, place)
				restored.Target = place.Dir
				res := placedResult{restoredResult: restored, inPlace: did}
				if err != nil {
					res.Error = err.Error()
				}
				if perr := printJSON(g.stdout, res); perr != nil {
					return perr
				}
				return err
			}
			if l.asJSON {
				return printJSON(g.stdout, restored)
			}
			state := "restored (not prepared: run with --prepare, or mariabackup --prepare, before starting a server)"
			if d.prepare {
				state = "restored and prepared: a server can start on it"
			}
			fmt.Fprintf(g.stdout, "backup %s %s: %s\n", m.ID, state, d.target)
			if gp := m.Positions.Galera; gp != nil && d.prepare {
				fmt.Fprintf(g.stdout, "Galera: its grastate.dat holds %s: a node started on it joins its cluster by IST while a donor's gcache still holds the write sets after it (else by a snapshot), or bootstraps a new cluster with --wsrep-new-cluster\n", gp)
			}
			return nil
		},
	}
	d.register(cmd.Flags())
	l.register(cmd.Flags())
	p.register(cmd.Flags())
	cmd.Flags().StringVar(&until, "until", "", `point-in-time restore: the newest backup before this time, then the archived binary logs up to it ("2026-11-21 10:15:00", UTC unless a zone is given as in RFC 3339: 2026-11-21T10:15:00+01:00); "end" replays everything archived`)
	cmd.Flags().StringVar(&untilGTID, "until-gtid", "", "point-in-time restore up to and including these GTIDs' transactions, one per domain, e.g. 0-1-4711,1-1-20")
	cmd.Flags().StringVar(&kind, "kind", "", "with latest (or no backup id): the latest backup of this kind, physical or logical (default: the newest whole-server physical backup, else logical)")
	cmd.Flags().StringVar(&base, "base", "", "with --until: the kind of backup to start from, physical or logical (default: the newest before the target of either kind; a logical one only if it took the whole server)")
	cmd.Flags().StringVar(&server, "server", "", "with --until: the server (hostname-server_id, as list shows it) whose backups and binary logs to use, when the repository holds several")
	cmd.Flags().BoolVar(&applyTo, "apply-to", false, "with --until: replay the archived binary logs onto the running server that --host/--socket name, from the GTID position it has reached, instead of restoring a datadir; with --table and a physical backup: import those InnoDB tables into that server")
	cmd.Flags().StringVar(&as, "as", "", "with --table db.t --apply-to: the name the table takes on the target, as db.table (e.g. beside the live one)")
	cmd.Flags().Lookup("parallel").Usage = "decoding threads; for a logical backup also loading connections (default: number of CPUs)"
	return cmd
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
	tr := g.tracker("restore --until "+t.String(), 0)
	job.Progress = tr
	res, err := pitr.Run(ctx, r, t, job, d.serverDefaults)
	sum := tr.Finish(err)
	if err != nil {
		return refused(err)
	}
	if asJSON {
		return printJSON(g.stdout, struct {
			Backup   string   `json:"backup"`
			Binlogs  []string `json:"binlogs"`
			Replayed string   `json:"replayed"` // the position replay stopped at, as asked
			Target   string   `json:"target"`
			Seconds  float64  `json:"seconds"`
		}{res.Backup.ID, res.Binlogs, res.Replayed, d.target, sum.Elapsed.Seconds()})
	}
	fmt.Fprintf(g.stdout, "restored backup %s and replayed %s up to %s: %s is ready\n", res.Backup.ID, strings.Join(res.Binlogs, ", "), res.Replayed, d.target)
	return nil
}

// runApply replays the archived binary logs onto a running server.
func runApply(cmd *cobra.Command, g *globals, d *datadirFlags, l *logicalRestoreFlags, t pitr.Target, serverDefaults string) error {
	if d.target != "" || d.prepare || serverDefaults != "" {
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
	var log io.Writer
	if d.verbose {
		log = g.stderr
	}
	res, err := pitr.Apply(ctx, r, t, conn, toolpath.Parse(g.mariadbPath), log)
	if err != nil {
		return refused(err)
	}
	if l.asJSON {
		return printJSON(g.stdout, struct {
			Server  string   `json:"server"` // whose binary logs, hostname-server_id
			Target  string   `json:"target"` // the server applied onto
			Binlogs []string `json:"binlogs"`
			From    string   `json:"from"` // the target's GTID position before and after
			To      string   `json:"to"`
		}{res.Server, conn.String(), res.Binlogs, res.From.String(), res.To.String()})
	}
	if len(res.Binlogs) == 0 || res.To.String() == res.From.String() {
		fmt.Fprintf(g.stdout, "%s is at GTID %s: nothing of %s to apply up to %s\n", conn, res.From, res.Server, t)
		return nil
	}
	fmt.Fprintf(g.stdout, "applied %s of %s onto %s: GTID %s to %s (up to %s)\n", strings.Join(res.Binlogs, ", "), res.Server, conn, res.From, res.To, t)
	return nil
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

// restoredResult is what restore --json prints of a physical backup
// restored into a directory.
type restoredResult struct {
	Backup    string   `json:"backup"`
	Chain     []string `json:"chain"` // the links written, base first
	Target    string   `json:"target"`
	Prepared  bool     `json:"prepared"`
	ReadBytes int64    `json:"read_bytes"` // stored bytes read from the repository
	Seconds   float64  `json:"seconds"`
}

// placedResult is what restore --datadir --json prints: the restore, then
// what was moved aside and the server started. Once the restore is done
// it is printed also when what follows fails, with the error.
type placedResult struct {
	restoredResult // target is the datadir
	inPlace
	Error string `json:"error,omitempty"`
}

func linkIDs(links []restore.Link) []string {
	ids := make([]string, len(links))
	for i, l := range links {
		ids[i] = l.Manifest.ID
	}
	return ids
}
