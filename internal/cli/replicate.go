package cli

import (
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
	req := provision.ReplicaRequest{FromCopy: rf.fromCopy, FromBackup: rf.from, HasRepo: g.repos.Location.Repo != "", Options: replica.Options{
		Datadir: rf.datadir, UseFilePos: rf.filePos, CatchUp: rf.catchUp, Force: rf.force, WaitTimeout: rf.wait, PrimaryIs: rf.primary.n.Is,
	}}
	var err error
	if req.Primary, err = rf.primary.named(cmd.Flags()).Resolve(replica.Primary{}); err != nil {
		return req, err
	}
	if req.Conn, err = rf.conn.Resolve(); err != nil {
		return req, err
	}
	if err = req.Check(); err == nil && rf.from != "" {
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
	n      replica.Named
	withIs bool // --primary-is is registered
}

func (pf *primaryFlags) register(f *pflag.FlagSet) {
	o := options.Bind(f)
	o.String("primary-host", &pf.n.Given.Host)
	o.Int("primary-port", &pf.n.Given.Port)
	o.String("primary-user", &pf.n.Given.User)
	o.Bool("primary-ssl", &pf.n.Given.SSL)
	o.String("primary-defaults-file", &pf.n.File)
}

// registerIs adds --primary-is, for a replica of a backup that may have
// been taken of a replica.
func (pf *primaryFlags) registerIs(f *pflag.FlagSet) {
	pf.withIs = true
	options.Bind(f).String("primary-is", &pf.n.Is)
}

// names are the flags register (and registerIs) add.
func (pf *primaryFlags) names() []string {
	names := []string{"primary-host", "primary-port", "primary-user", "primary-ssl", "primary-defaults-file"}
	if pf.withIs {
		names = append(names, "primary-is")
	}
	return names
}

// named is the primary as the flags name it (see replica.Named.Resolve).
func (pf *primaryFlags) named(f *pflag.FlagSet) replica.Named {
	n := pf.n
	n.HostGiven, n.PortGiven, n.UserGiven, n.SSLGiven = f.Changed("primary-host"), f.Changed("primary-port"), f.Changed("primary-user"), f.Changed("primary-ssl")
	return n
}
