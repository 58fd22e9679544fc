package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/merge"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/scratch"
	"github.com/backstream/backstream/internal/toolpath"
)

func newMergeCmd(g *globals, version string) *cobra.Command {
	var parallel int
	var compress, hash, workDir, useMemory, mariabackup, serverDefaults string
	var verbose bool
	cmd := &cobra.Command{
		Use:     "merge [ID|latest]",
		Short:   "Build a full backup from an incremental chain, without touching the server",
		Example: `  backstream merge latest --repo /backups     # a full backup from the newest chain`,
		Long: `merge restores the chain that ends at the named incremental (the newest backup by
default) into a work directory, prepares it, and stores the prepared datadir in the
repository as a new full backup of the chain's end: the same positions (LSNs, binary log,
GTID), the same finishing time, and merged_from naming the chain. Restoring it reads one
backup instead of the chain; incrementals can build on it; the chain's links stay until
expire drops them. The source server is not contacted.

The chain is prepared in a new subdirectory of --work-dir (default: under $TMPDIR),
which needs the space of the restored datadir and is removed at the end.
An encrypted chain is merged only with --encrypt, so that the new backup is too.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if parallel < 1 {
				return usagef("--parallel must be at least 1")
			}
			c, err := parseStorage(compress, hash)
			if err != nil {
				return err
			}
			ref, err := backupRef(args)
			if err != nil {
				return err
			}
			fileKey, err := physical.UserFileKey(serverDefaults)
			if err != nil {
				return err
			}
			r, err := g.openRepo(cmd.Context(), false)
			if err != nil {
				return err
			}
			ctx, release, err := g.lockRepo(cmd.Context(), r, repo.OpMerge, true)
			if err != nil {
				return err
			}
			defer release()
			m, err := r.Resolve(ctx, ref)
			if err != nil {
				return err
			}
			enc, err := g.encryption(ctx, r)
			if err != nil {
				return err
			}
			if workDir == "" {
				if workDir, err = scratch.Dir(); err != nil {
					return err
				}
			}
			var log io.Writer
			if verbose {
				log = g.stderr
			}
			t := g.tracker("merge "+m.ID, m.Stats.StoredBytes)
			merged, err := merge.Merge(ctx, merge.Job{
				Repo: r, Backup: m, WorkDir: workDir, Parallel: parallel, Codec: c, Hash: hash, Encryption: enc, Version: version,
				Restore: restore.Options{UseMemory: useMemory, Mariabackup: mariabackup, MariadbPath: toolpath.Parse(g.mariadbPath), Workers: parallel, Log: log, Progress: t, FileKey: fileKey},
			})
			t.Finish(err)
			if err != nil {
				return refused(err)
			}
			return g.reportMade(merged, fmt.Sprintf("backup %s complete: full, merged from %s, %d streams, %d files, %s stored",
				merged.ID, strings.Join(merged.MergedFrom, " + "), len(merged.Streams), len(merged.Files), humanRatio(merged)))
		},
	}
	f := cmd.Flags()
	g.registerJSON(f)
	f.IntVar(&parallel, "parallel", defaultParallel(), "decoding threads, and stream objects of the merged backup")
	f.StringVar(&compress, "compress", codec.Default, "compression of the merged backup: zstd, lz4, gzip or none, with an optional :level")
	f.StringVar(&hash, "hash", archive.DefaultHash, "digest algorithm of the merged backup: blake3 or sha256")
	f.StringVar(&workDir, "work-dir", "", "directory to prepare the chain in, in a subdirectory backstream-merge-<id> removed at the end; needs room for the datadir (default: under $TMPDIR)")
	f.StringVar(&useMemory, "use-memory", "", "memory for mariabackup --prepare, e.g. 1G")
	f.StringVar(&mariabackup, "mariabackup", "", "mariabackup binary for --prepare")
	f.StringVar(&serverDefaults, "server-defaults-file", "", "option file whose [mysqld] "+physical.FileKeyVariable+" is the key file's password that --prepare needs (default: $"+physical.FileKeyEnv+")")
	f.BoolVarP(&verbose, "verbose", "v", false, "copy mariabackup's prepare log to stderr")
	g.registerEncrypt(f)
	return cmd
}
