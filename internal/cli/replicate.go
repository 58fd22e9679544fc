package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/provision"
	"github.com/backstream/backstream/internal/replica"
	"github.com/backstream/backstream/internal/servercopy"
)

func newReplicateCmd(g *globals) *cobra.Command {
	var rf replicateFlags
	cmd := &cobra.Command{Use: "replicate"}
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		p, err := rf.primary.resolve(cmd.Flags(), replica.Primary{})
		if err != nil {
			return err
		}
		cfg, err := rf.conn.resolve(cmd.Flags())
		if err != nil {
			return err
		}
		opt, err := rf.options(cmd.Context(), g, cfg)
		if err != nil {
			return err
		}
		res, err := replica.SetupOn(cmd.Context(), cfg, p, opt)
		if err != nil {
			return err
		}
		if rf.asJSON {
			return printJSON(g.stdout, res)
		}
		printReplication(g.stdout, res)
		return nil
	}
	rf.register(cmd)
	return cmd
}

// options are the replication's options the flags ask for, with the
// positions from the newest copy into the server cfg reaches
// (--from-copy) or a backup's manifest (--from-backup), else the datadir.
func (rf *replicateFlags) options(ctx context.Context, g *globals, cfg mariadb.Config) (replica.Options, error) {
	opt := replica.Options{
		Datadir: rf.datadir, UseFilePos: rf.filePos, CatchUp: rf.catchUp, Force: rf.force, WaitTimeout: rf.wait, PrimaryIs: rf.primary.is,
	}
	if rf.fromCopy {
		if rf.datadir != "" || rf.from != "" {
			return opt, usagef("--from-copy takes the position the server recorded of a copy into it: it goes without --datadir and --from-backup")
		}
		if err := positionOfLastCopy(ctx, cfg, &opt); err != nil {
			return opt, err
		}
	}
	if rf.from != "" {
		if rf.datadir != "" {
			return opt, usagef("--from-backup takes the positions from the backup's manifest: it goes without --datadir")
		}
		if err := positionsOfBackup(ctx, g, rf.from, &opt); err != nil {
			return opt, err
		}
	}
	return opt, nil
}

// replicateFlags are replicate's flags.
type replicateFlags struct {
	conn     connFlags
	primary  primaryFlags
	datadir  string
	from     string
	fromCopy bool
	filePos  bool
	catchUp  bool
	force    bool
	wait     time.Duration
	asJSON   bool
}

func (rf *replicateFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	rf.conn.register(f)
	rf.primary.register(f)
	rf.primary.registerIs(f)
	o := options.Bind(f)
	o.String("datadir", &rf.datadir)
	o.Bool("from-copy", &rf.fromCopy)
	o.String("from-backup", &rf.from)
	o.Bool("use-file-pos", &rf.filePos)
	o.Bool("catch-up", &rf.catchUp)
	o.Bool("force", &rf.force)
	o.Duration("wait", &rf.wait)
	o.Bool("json", &rf.asJSON)
}

// positionOfLastCopy sets opt to start where the newest finished copy
// into the server cfg reaches left it (--from-copy).
func positionOfLastCopy(ctx context.Context, cfg mariadb.Config, opt *replica.Options) error {
	c, err := servercopy.LastCopy(ctx, cfg)
	if err != nil {
		return err
	}
	c.StartAt(opt)
	return nil
}

// positionsOfBackup sets opt to choose among the positions of backup id's
// manifest (--from-backup), refusing a masked backup.
func positionsOfBackup(ctx context.Context, g *globals, id string, opt *replica.Options) error {
	if g.repo == "" {
		return usagef("--from-backup needs the repository holding the backup: --repo R")
	}
	r, err := g.openRepo(ctx, false)
	if err != nil {
		return err
	}
	m, err := r.Resolve(ctx, id)
	if err != nil {
		return err
	}
	if cols := archive.MaskedColumns(m.Databases); len(cols) > 0 {
		return usagef("backup %s was masked when dumped (%s): replication would bring the source's later changes, unmasked, onto the masked rows; seed a replica from an unmasked backup", m.ID, strings.Join(cols, ", "))
	}
	opt.Backup = replica.FromManifest(m)
	return nil
}

// primaryFlags name the primary a replica replicates from.
type primaryFlags struct {
	p      replica.Primary
	file   string
	is     string
	withIs bool // --primary-is is registered
}

func (pf *primaryFlags) register(f *pflag.FlagSet) {
	o := options.Bind(f)
	o.String("primary-host", &pf.p.Host)
	o.Int("primary-port", &pf.p.Port)
	o.String("primary-user", &pf.p.User)
	o.Bool("primary-ssl", &pf.p.SSL)
	o.String("primary-defaults-file", &pf.file)
}

// registerIs adds --primary-is, for a replica of a backup that may have
// been taken of a replica.
func (pf *primaryFlags) registerIs(f *pflag.FlagSet) {
	pf.withIs = true
	options.Bind(f).String("primary-is", &pf.is)
}

// names are the flags register (and registerIs) add.
func (pf *primaryFlags) names() []string {
	names := []string{"primary-host", "primary-port", "primary-user", "primary-ssl", "primary-defaults-file"}
	if pf.withIs {
		names = append(names, "primary-is")
	}
	return names
}

// resolve reads the [backstream-primary] group of the option files
// (the global ones, ~/.my.cnf, then --primary-defaults-file), then the
// flags given. def's host and port stand where neither names a host.
func (pf *primaryFlags) resolve(f *pflag.FlagSet, def replica.Primary) (replica.Primary, error) {
	files := append([]string(nil), mariadb.GlobalOptionFiles...)
	if home, err := os.UserHomeDir(); err == nil {
		files = append(files, filepath.Join(home, ".my.cnf"))
	}
	if pf.file != "" {
		files = append(files, pf.file)
	}
	p, _, err := replica.PrimaryDefaults(files, os.LookupEnv)
	if err != nil {
		return p, err
	}
	if p.Host == "" {
		p.Host = def.Host
		if p.Port == 0 {
			p.Port = def.Port
		}
	}
	if f.Changed("primary-host") {
		p.Host = pf.p.Host
	}
	if f.Changed("primary-port") {
		p.Port = pf.p.Port
	}
	if f.Changed("primary-user") {
		p.User = pf.p.User
	}
	if f.Changed("primary-ssl") {
		p.SSL = pf.p.SSL
	}
	if p.Host == "" || p.User == "" {
		return p, usagef("name the primary: --primary-host and --primary-user (or host= and user= in [backstream-primary])")
	}
	switch pf.is {
	case "", replica.PrimaryIsSource, replica.PrimaryIsSourcePrimary:
	default:
		return p, usagef("--primary-is %q: want %s (the primary is the backup's source) or %s (it is the source's primary)", pf.is, replica.PrimaryIsSource, replica.PrimaryIsSourcePrimary)
	}
	return p, nil
}

// replicationResult is what replicate --json prints (and receive --json
// of the replica it started).
type replicationResult = replica.Summary

// printReplication says on out that the replica replicates, as s says.
func printReplication(out io.Writer, s *replicationResult) {
	provision.DefaultMessages.WriteReplication(out, s)
}
