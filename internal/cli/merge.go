package cli

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/merge"
	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/repoaccess"
)

// mergeFlags are merge's flags, most of them bound into its job.
type mergeFlags struct {
	j       merge.Job
	verbose bool
}

func newMergeCmd(g *globals, version string) *cobra.Command {
	var o mergeFlags
	cmd := &cobra.Command{
		Use:  "merge",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, g, version, args) },
	}
	f := cmd.Flags()
	g.registerJSON(f)
	o.register(f)
	g.registerEncrypt(f)
	return cmd
}

func (o *mergeFlags) register(f *pflag.FlagSet) {
	bind := options.Bind(f)
	bind.Int("parallel", &o.j.Parallel)
	bind.Codec("compress", &o.j.Codec)
	bind.Hash("hash", &o.j.Hash)
	bind.String("work-dir", &o.j.WorkDir)
	bind.String("use-memory", &o.j.Restore.UseMemory)
	bind.String("mariabackup", &o.j.Restore.Mariabackup)
	bind.String("server-defaults-file", &o.j.ServerDefaults)
	bind.Bool("verbose", &o.verbose)
}

// job maps the flags to a merge, less the repository, the backup and the
// encryption.
func (o *mergeFlags) job(g *globals, version string) (merge.Job, error) {
	job := o.j
	if job.Parallel < 1 {
		return job, usagef("--parallel must be at least 1")
	}
	if o.verbose {
		job.Restore.Log = g.stderr
	}
	job.Version, job.Restore.MariadbPath, job.Restore.Workers, job.Restore.Memory = version, g.mariadbPath, job.Parallel, g.repos.Memory
	return job, nil
}

// run merges the chain ending at the backup args name, under the
// repository's exclusive lock, and prints the backup made.
func (o *mergeFlags) run(cmd *cobra.Command, g *globals, version string, args []string) error {
	job, err := o.job(g, version)
	if err != nil {
		return err
	}
	ref, err := backupRef(args)
	if err != nil {
		return err
	}
	if job.Repo, err = g.repos.Open(cmd.Context()); err != nil {
		return err
	}
	ctx, release, err := g.repos.Acquire(cmd.Context(), job.Repo, repoaccess.OpMerge, true)
	if err != nil {
		return err
	}
	defer release()
	if job.Backup, err = job.Repo.Resolve(ctx, ref); err != nil {
		return err
	}
	if job.Encryption, err = g.repos.Encryption(ctx, job.Repo); err != nil {
		return err
	}
	t := g.tracker("merge "+job.Backup.ID, job.Backup.Stats.StoredBytes)
	job.Restore.Progress = t
	merged, err := merge.Merge(ctx, job)
	t.Finish(err)
	if err != nil {
		return err
	}
	return g.reportMade(inventory.MadeOf(merged), merge.Text(merged))
}
