package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/provision"
	"github.com/backstream/backstream/internal/replica"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/servercopy"
)

// copyFlags are copy's flags.
type copyFlags struct {
	from, to                         options.Endpoint
	choices                          restorecase.Choices
	masks                            maskFlags
	primary                          primaryFlags
	parallel                         int
	chunkSize, maxRate               int64
	blockDDL, currentOnly, replicate bool
	asJSON                           bool
}

func newCopyCmd(g *globals) *cobra.Command {
	var cf copyFlags
	cmd := &cobra.Command{Use: "copy"}
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		job, err := cf.job(cmd.Flags(), g)
		if err != nil {
			return err
		}
		t := g.tracker("copy", 0)
		job.Progress = t
		res, err := servercopy.Run(cmd.Context(), job)
		sum := t.Finish(err)
		return cf.print(g, res, sum.Elapsed, err)
	}
	cf.register(cmd.Flags())
	return cmd
}

func (cf *copyFlags) register(f *pflag.FlagSet) {
	choices := &cf.choices
	cf.from.Register(f, "from", "source")
	cf.to.Register(f, "to", "target")
	o := options.Bind(f)
	o.Int("parallel", &cf.parallel)
	o.Size("chunk-size", &cf.chunkSize, minChunk)
	o.Rate("max-rate", &cf.maxRate)
	o.Strings("database", &choices.Databases)
	o.Strings("exclude-database", &choices.ExcludeDatabases)
	o.Strings("table", &choices.Tables)
	o.Strings("exclude-table", &choices.ExcludeTables)
	filterAliases(f)
	o.Strings("rename-database", &choices.Rename)
	o.String("definer", &choices.Definer)
	o.Bool("drop-existing", &choices.DropExisting)
	o.Bool("resume", &choices.Resume)
	o.Bool("no-binlog", &choices.NoBinlog)
	o.Bool("users", &choices.Users)
	o.Bool("replace-users", &choices.ReplaceUsers)
	s := &choices.Skip
	registerSkip(f, &s.Views, &s.Triggers, &s.Routines, &s.Events, &s.Users)
	cf.masks.register(f, "as they are read from the source, so that they never reach the target")
	o.Bool("block-ddl", &cf.blockDDL)
	o.Bool("versioned-current-only", &cf.currentOnly)
	o.Bool("replicate", &cf.replicate)
	cf.primary.register(f)
	o.Bool("json", &cf.asJSON)
}

// job checks the flags and builds the copy they ask for, less its
// progress.
func (cf *copyFlags) job(f *pflag.FlagSet, g *globals) (servercopy.Job, error) {
	job := servercopy.Job{Parallel: cf.parallel, BlockDDL: cf.blockDDL, VersionedCurrentOnly: cf.currentOnly,
		ChunkBytes: cf.chunkSize, MaxRate: cf.maxRate,
		OnServers: func(s, t servercopy.Server) { fmt.Fprintf(g.stderr, "copy: from %s\ncopy: into %s\n", s, t) }}
	var err error
	if job.From, err = cf.from.Resolve(g.defaultsFile, g.defaultsExtraFile, g.noDefaults); err != nil {
		return job, err
	}
	if job.To, err = cf.to.Resolve(g.defaultsFile, g.defaultsExtraFile, g.noDefaults); err != nil {
		return job, err
	}
	if err := job.SetChoices(cf.choices); err != nil {
		return job, err
	}
	if cf.parallel < 1 {
		return job, usagef("--parallel must be at least 1")
	}
	if err := cf.masks.set(job.SetMask); err != nil {
		return job, err
	}
	job.Replicate, err = cf.replicateTo(f, replica.PrimaryAt(job.From))
	return job, err
}

// minChunk is the least --chunk-size taken (copy, backup --logical):
// below it the number was most likely meant in other units.
const minChunk = 64 << 10

// replicateTo is the primary the target replicates from with --replicate
// (the source src, unless the --primary-* flags say how the target reaches
// it), nil without.
func (cf *copyFlags) replicateTo(f *pflag.FlagSet, def replica.Primary) (*replica.Primary, error) {
	if !cf.replicate {
		if name := firstChanged(f, cf.primary.names()); name != "" {
			return nil, usagef("--%s names the primary of --replicate", name)
		}
		return nil, nil
	}
	if name := firstChanged(f, []string{"database", "exclude-database", "table", "exclude-table", "rename-database"}); name != "" {
		return nil, usagef("--replicate copies the whole server: a replica applies every write of its primary, and would stop at the first to what --%s leaves out or renames", name)
	}
	p, err := cf.primary.named(f).Resolve(def)
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// print prints the copy res as text or, with --json, as one object (also
// when it failed after the load); and returns err.
func (cf *copyFlags) print(g *globals, res *servercopy.Result, elapsed time.Duration, err error) error {
	if res == nil || res.Load == nil {
		return err
	}
	restorecase.WarnPasswordless(g.stderr, res.Load)
	if !cf.asJSON {
		res.WriteText(g.stdout, cf.choices.Users)
		if res.Replication != nil {
			provision.DefaultMessages.WriteReplication(g.stdout, res.Replication)
		}
		return err
	}
	if perr := printJSON(g.stdout, res.JSON(elapsed, err)); perr != nil {
		return perr
	}
	return err
}
