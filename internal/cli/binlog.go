package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/binlog"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/progress"
)

func newBinlogCmd(g *globals, version string) *cobra.Command {
	var (
		conn     connFlags
		follow   bool
		compress string
		hash     string
		binary   string
	)
	cmd := &cobra.Command{
		Use:   "binlog",
		Short: "Archive the server's binary logs into the repository",
		Long: `binlog copies the server's binary log files into the repository through the
replication protocol (mariadb-binlog --read-from-remote-server --raw), so it runs on any
host that can connect, with an account that has REPLICATION SLAVE and BINLOG MONITOR.
Every closed file the repository lacks is stored compressed and checksummed under
binlogs/<host>-<server_id>/<file>/, with an index of its first and last GTID and event
time; list --binlogs shows what is covered. It resumes where the repository stops.

With --encrypt (to --recipient-file, or a passphrase from --passphrase-file or
$BACKSTREAM_PASSPHRASE) each file's stream object and index are stored encrypted with
age, as a backup's are; a point-in-time restore then needs the key.

With --follow it keeps streaming the active file, archives each file once the server
moves to the next, and reconnects when the server restarts; stop it with Ctrl-C.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
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
			enc, err := g.encryption(cmd.Context(), r)
			if err != nil {
				return err
			}
			a := &binlog.Archiver{Repo: r, Conn: cfg, Codec: c, Hash: hash, Binary: binary, Version: version, Encryption: enc,
				Log: func(msg string) { fmt.Fprintln(g.stderr, msg) }}
			return a.Run(cmd.Context(), follow)
		},
	}
	f := cmd.Flags()
	conn.register(f)
	f.BoolVar(&follow, "follow", false, "keep archiving as the server writes, until stopped")
	f.StringVar(&compress, "compress", codec.Default, "compression: zstd, lz4, gzip or none, with an optional :level")
	f.StringVar(&hash, "hash", archive.DefaultHash, "digest algorithm: blake3 or sha256")
	f.StringVar(&binary, "mariadb-binlog", "", "mariadb-binlog binary (default: from PATH)")
	g.registerEncrypt(f)
	return cmd
}

// printBinlogs lists archived binary logs per source, with the gaps in
// their numbering (files purged from the server before they were archived).
func printBinlogs(g *globals, ms []*archive.Manifest) error {
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SOURCE\tFILE\tFIRST EVENT (UTC)\tLAST EVENT (UTC)\tFIRST GTID\tLAST GTID\tSIZE\tSTORED")
	for i, m := range ms {
		b := m.Binlog
		if i > 0 {
			if prev := ms[i-1].Binlog; prev.Source == b.Source {
				if missing := binlog.NumberGap(prev.Name, b.Name); missing != "" {
					fmt.Fprintf(tw, "%s\tGAP: %s not archived\t\t\t\t\t\t\n", b.Source, missing)
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", b.Source, b.Name, b.FirstTime.Format(time.DateTime), b.LastTime.Format(time.DateTime),
			dash(b.FirstGTID), dash(b.LastGTID), progress.HumanBytes(b.Size), progress.HumanBytes(m.Stats.StoredBytes))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
