package cli

import (
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/inventory"
	"github.com/backstream/backstream/internal/merge"
	"github.com/backstream/backstream/internal/options"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/toolpath"
)

// mergeFlags are merge's flags.
type mergeFlags struct {
	parallel                                                        int
	compress, hash, workDir, useMemory, mariabackup, serverDefaults string
	verbose                                                         bool
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
	bind.Int("parallel", &o.parallel)
	bind.String("compress", &o.compress)
	bind.String("hash", &o.hash)
	bind.String("work-dir", &o.workDir)
	bind.String("use-memory", &o.useMemory)
	bind.String("mariabackup", &o.mariabackup)
	bind.String("server-defaults-file", &o.serverDefaults)
	bind.Bool("verbose", &o.verbose)
}

// job maps the flags to a merge, less the repository, the backup and the
// encryption.
func (o *mergeFlags) job(g *globals, version string) (merge.Job, error) {
	if o.parallel < 1 {
		return merge.Job{}, usagef("--parallel must be at least 1")
	}
	c, err := parseStorage(o.compress, o.hash)
	if err != nil {
		return merge.Job{}, err
	}
	fileKey, err := physical.UserFileKey(o.serverDefaults)
	if err != nil {
		return merge.Job{}, err
	}
	var log io.Writer
	if o.verbose {
		log = g.stderr
	}
	return merge.Job{WorkDir: o.workDir, Parallel: o.parallel, Codec: c, Hash: o.hash, Version: version,
		Restore: restore.Options{UseMemory: o.useMemory, Mariabackup: o.mariabackup, MariadbPath: toolpath.Parse(g.mariadbPath), Workers: o.parallel, Memory: g.repos.Memory, Log: log, FileKey: fileKey},
	}, nil
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
		return refused(err)
	}
	return g.reportMade(inventory.MadeOf(merged), merge.Text(merged))
}
