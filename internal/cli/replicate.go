package cli

import (
	"errors"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/provision"
	"github.com/backstream/backstream/internal/replica"
)

func newReplicateCmd(g *globals) *cobra.Command {
	var rf replicateFlags
	cmd := &cobra.Command{Use: "replicate"}
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		req, err := rf.request(cmd, g)
		if err != nil {
			return err
		}
		res, err := provision.SetupReplica(cmd.Context(), req)
		if err != nil {
			var masked *replica.MaskedError
			if errors.As(err, &masked) {
				return usageError{err}
			}
			return err
		}
		if rf.asJSON {
			return printJSON(g.stdout, res)
		}
		provision.DefaultMessages.WriteReplication(g.stdout, res)
		return nil
	}
	rf.register(cmd)
	return cmd
}

// request is the replication the flags ask for: from the newest copy into
// the server (--from-copy), a backup's manifest (--from-backup), else the
// datadir.
func (rf *replicateFlags) request(cmd *cobra.Command, g *globals) (provision.ReplicaRequest, error) {
	req := provision.ReplicaRequest{FromCopy: rf.fromCopy, FromBackup: rf.from, Options: replica.Options{
		Datadir: rf.datadir, UseFilePos: rf.filePos, CatchUp: rf.catchUp, Force: rf.force, WaitTimeout: rf.wait, PrimaryIs: rf.primary.is,
	}}
	var err error
	if req.Primary, err = rf.primary.resolve(cmd.Flags(), replica.Primary{}); err != nil {
		return req, err
	}
	if req.Conn, err = rf.conn.Resolve(); err != nil {
		return req, err
	}
	switch {
	case rf.fromCopy && (rf.datadir != "" || rf.from != ""):
		return req, usagef("--from-copy takes the position the server recorded of a copy into it: it goes without --datadir and --from-backup")
	case rf.from != "" && rf.datadir != "":
		return req, usagef("--from-backup takes the positions from the backup's manifest: it goes without --datadir")
	case rf.from != "" && g.repos.Location.Repo == "":
		return req, usagef("--from-backup needs the repository holding the backup: --repo R")
	case rf.from != "":
		req.Backups, err = g.repos.Open(cmd.Context())
	}
	return req, err
}

// replicateFlags are replicate's flags.
type replicateFlags struct {
	conn     options.Conn
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
	rf.conn.Register(f)
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
	p, err := replica.LoadPrimary(pf.file)
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
