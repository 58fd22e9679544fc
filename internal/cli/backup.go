package cli

import (
	"fmt"
	"io"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/physical"
)

func newBackupCmd(g *globals, version string) *cobra.Command {
	var (
		conn        connFlags
		parallel    int
		compress    string
		hash        string
		mariabackup string
		extra       []string
		verbose     bool
	)
	cmd := &cobra.Command{
		Use:   "backup",
		Short: "Take a hot physical backup into a repository",
		Long: `backup runs mariabackup --backup --stream=xbstream on this host, splits its stream into
--parallel stream objects of independently compressed frames, hashes everything, and
commits the backup by writing its manifest last. The repository is created if the
location is empty. Credentials reach mariabackup through a private 0600 option file,
never its command line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if parallel < 1 {
				return usagef("--parallel must be at least 1")
			}
			c, err := codec.Parse(compress)
			if err != nil {
				return usageError{err}
			}
			if _, err := archive.NewHash(hash); err != nil {
				return usageError{err}
			}
			cfg, err := conn.resolve(cmd.Flags())
			if err != nil {
				return err
			}
			r, err := g.openRepo(cmd.Context(), true)
			if err != nil {
				return err
			}
			var log io.Writer
			if verbose {
				log = g.stderr
			}
			t := g.tracker("backup", 0)
			m, err := physical.RunBackup(cmd.Context(), physical.BackupJob{
				Dest: r, Conn: cfg, Mariabackup: mariabackup, Parallel: parallel, Codec: c, Hash: hash,
				ExtraArgs: extra, Log: log, Progress: t, Version: version,
			})
			t.Finish(err)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "backup %s complete: %d streams, %d files, %s stored\n", m.ID, len(m.Streams), len(m.Files), humanRatio(m))
			return nil
		},
	}
	f := cmd.Flags()
	conn.register(f)
	f.IntVar(&parallel, "parallel", defaultParallel(), "parallel streams and mariabackup copy threads")
	f.StringVar(&compress, "compress", codec.Default, "compression: zstd, lz4, gzip or none, with an optional :level")
	f.StringVar(&hash, "hash", archive.DefaultHash, "digest algorithm: blake3 or sha256")
	f.StringVar(&mariabackup, "mariabackup", "", "mariabackup binary (default: mariabackup or mariadb-backup in PATH)")
	f.StringArrayVar(&extra, "mariabackup-option", nil, "extra option passed to mariabackup as given, e.g. --mariabackup-option=--databases=app (repeatable)")
	f.BoolVarP(&verbose, "verbose", "v", false, "copy mariabackup's log to stderr as it runs")
	return cmd
}

// defaultParallel is the number of CPUs, at least 2: two streams already
// overlap compression with I/O on a small machine.
func defaultParallel() int {
	return max(2, runtime.NumCPU())
}

func humanRatio(m *archive.Manifest) string {
	s := fmt.Sprintf("%d bytes", m.Stats.StoredBytes)
	if m.Stats.StoredBytes > 0 {
		s += fmt.Sprintf(" (%.2fx of %d)", float64(m.Stats.RawBytes)/float64(m.Stats.StoredBytes), m.Stats.RawBytes)
	}
	return s
}
