package cli

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/binlog"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/toolpath"
)

func newBinlogCmd(g *globals, version string) *cobra.Command {
	var (
		conn     connFlags
		follow   bool
		compress string
		hash     string
		binary   string
		flush    time.Duration
		allowGap bool
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "binlog",
		Short: "Archive the server's binary logs into the repository",
		Example: `  backstream binlog --repo /backups               # archive what the server has, once
  backstream binlog --repo /backups --follow      # and keep archiving as it writes (a service)`,
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
moves to the next, and reconnects when the server restarts; stop it with Ctrl-C.
Meanwhile the active file's new transactions are stored as segments at least every
--flush-interval (default 1s), cut only between transactions, so a restore loses at
most about that much; a file's segments are removed once it is archived whole.

It checks the server's settings first and refuses what cannot be archived
(log_bin OFF, a server that is not MariaDB), naming the setting. If files were
purged on the server before they were archived (or its server_id changed), the
gap is recorded in the repository (list --binlogs shows it) and binlog exits
non-zero naming the files; --allow-gap records it and archives on. A server
whose binary log holds the last archived transaction of another (a replica
promoted after a failover, with log_slave_updates) continues that archive:
its first run records the link, with no gap, and a point-in-time restore
goes on from the one into the other.

With --follow, --progress json (and plain) show its lag: lag_seconds and
lag_bytes behind the server; list --binlogs shows the last measure.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := parseStorage(compress, hash)
			if err != nil {
				return err
			}
			if flush <= 0 {
				return usageError{fmt.Errorf("--flush-interval %s: must be positive", flush)}
			}
			if asJSON && follow {
				return usagef("--json prints what one run archived; binlog --follow runs until stopped: read its --progress json events, or list --binlogs --json")
			}
			cfg, err := conn.resolve(cmd.Flags())
			if err != nil {
				return err
			}
			r, err := g.openRepo(cmd.Context(), false)
			if err != nil {
				return err
			}
			enc, err := g.encryption(cmd.Context(), r)
			if err != nil {
				return err
			}
			t := g.tracker("binlog", 0)
			res := binlogResult{Archived: []archivedBinlog{}}
			a := &binlog.Archiver{Repo: r, Conn: cfg, Codec: c, Hash: hash, Binary: binary, MariadbPath: toolpath.Parse(g.mariadbPath), Version: version, Encryption: enc, FlushInterval: flush,
				AllowGap: allowGap, Counter: t, Log: func(msg string) { t.Logf("%s", msg) },
				Lag: func(l binlog.Lag) {
					t.SetLag(progress.Lag{Seconds: l.Seconds, Bytes: l.Bytes})
					if asJSON { // without --follow: one goroutine
						res.LagBytes = &l.Bytes
					}
				}}
			if asJSON {
				a.Archived = func(m *archive.Manifest) {
					res.Archived = append(res.Archived, archivedBinlog{BinlogFile: m.Binlog, StoredBytes: m.Stats.StoredBytes})
					res.Bytes += m.Binlog.Size
					res.StoredBytes += m.Stats.StoredBytes
				}
			}
			err = a.Run(cmd.Context(), follow)
			t.Finish(err)
			if err != nil || !asJSON {
				return err
			}
			res.Files = len(res.Archived)
			return printJSON(g.stdout, res)
		},
	}
	f := cmd.Flags()
	conn.register(f)
	f.BoolVar(&follow, "follow", false, "keep archiving as the server writes, until stopped")
	f.StringVar(&compress, "compress", codec.Default, "compression: zstd, lz4, gzip or none, with an optional :level")
	f.StringVar(&hash, "hash", archive.DefaultHash, "digest algorithm: blake3 or sha256")
	f.DurationVar(&flush, "flush-interval", binlog.DefaultFlushInterval, "with --follow, store the active file's new transactions at least this often")
	f.BoolVar(&allowGap, "allow-gap", false, "archive on past a gap (files purged on the server before they were archived), which is recorded")
	f.StringVar(&binary, "mariadb-binlog", "", "mariadb-binlog binary (default: the server's version's, from --mariadb-path, then PATH)")
	f.BoolVar(&asJSON, "json", false, "without --follow: print what the run archived as one JSON object (archived: each file's source, name, size, events, times, GTIDs, stored bytes; files, bytes, stored_bytes; lag_bytes)")
	g.registerEncrypt(f)
	return cmd
}

// binlogResult is what binlog --json prints: the files one run archived,
// their sum, and what the archive still lacks of the server's binary log.
type binlogResult struct {
	Archived    []archivedBinlog `json:"archived"`
	Files       int              `json:"files"`
	Bytes       int64            `json:"bytes"` // binary log archived, as on the server
	StoredBytes int64            `json:"stored_bytes"`
	// LagBytes is the binary log the server holds that the archive does
	// not: without --follow, at least the active file. Absent when not
	// measured (nothing was open on the server to archive).
	LagBytes *int64 `json:"lag_bytes,omitempty"`
}

// archivedBinlog is one file binlog archived: its index, as list
// --binlogs --json has it, and its size in the repository.
type archivedBinlog struct {
	*archive.BinlogFile
	StoredBytes int64 `json:"stored_bytes"`
}

// binlogListJSON is list --binlogs --json: every file archived whole,
// every file held only as segments, and every break, by source and name.
func binlogListJSON(files []repo.BinlogEntry, views []binlog.Overview) []binlogListEntry {
	out := make([]binlogListEntry, 0, len(files))
	for _, f := range files {
		if f.Damage != nil {
			out = append(out, binlogListEntry{BinlogFile: &archive.BinlogFile{Source: f.Source, Name: f.Name}, Damaged: true, Damage: f.Damage.Error()})
			continue
		}
		out = append(out, binlogListEntry{BinlogFile: f.Manifest.Binlog})
	}
	for _, v := range views {
		for _, s := range v.SegmentOnly {
			b := &archive.BinlogFile{Source: v.Source, Name: s.File, Size: s.End}
			if v.To.File == s.File {
				b.LastTime, b.LastGTID = v.To.Time, v.To.GTID
			}
			out = append(out, binlogListEntry{BinlogFile: b, Segments: s.Segments})
		}
		for _, br := range v.Breaks {
			name := br.After
			if br.Tail {
				name = v.To.File
			}
			out = append(out, binlogListEntry{BinlogFile: &archive.BinlogFile{Source: v.Source, Name: name}, Missing: true, Damage: br.Error()})
		}
	}
	slices.SortStableFunc(out, func(a, b binlogListEntry) int {
		return strings.Compare(a.Source+"/"+a.Name, b.Source+"/"+b.Name)
	})
	return out
}

// printBinlogs lists archived binary logs per source, with the gaps in
// their numbering (and the reason, if recorded); a file whose manifest is
// damaged is listed as such, and named with the reason on stderr. Then,
// per source, the window a point-in-time restore reaches, the lag and the
// recorded gaps.
func printBinlogs(g *globals, files []repo.BinlogEntry, views []binlog.Overview) error {
	recorded := map[string]repo.BinlogGap{}
	for _, v := range views {
		for _, gap := range v.Gaps {
			recorded[gap.Source+"/"+gap.Before] = gap
		}
	}
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SOURCE\tFILE\tFIRST EVENT (UTC)\tLAST EVENT (UTC)\tFIRST GTID\tLAST GTID\tSIZE\tSTORED")
	for i, f := range files {
		if gap, ok := recorded[f.Source+"/"+f.Name]; ok {
			fmt.Fprintf(tw, "%s\tGAP: %s %s\t\t\t\t\t\t\n", f.Source, gap.Missing, gap.Reason)
		} else if i > 0 && files[i-1].Source == f.Source {
			if missing := binlog.NumberGap(files[i-1].Name, f.Name); missing != "" {
				fmt.Fprintf(tw, "%s\tMISSING: %s (archived, and no object holds it now)\t\t\t\t\t\t\n", f.Source, missing)
			}
		}
		if f.Damage != nil {
			fmt.Fprintf(tw, "%s\t%s\tDAMAGED\t-\t-\t-\t-\t%s\n", f.Source, f.Name, progress.HumanBytes(f.Size))
			continue
		}
		b := f.Manifest.Binlog
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", b.Source, b.Name, b.FirstTime.Format(time.DateTime), b.LastTime.Format(time.DateTime),
			dash(b.FirstGTID), dash(b.LastGTID), progress.HumanBytes(b.Size), progress.HumanBytes(f.Manifest.Stats.StoredBytes))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, v := range views {
		printOverview(g, v)
	}
	for _, f := range files {
		if f.Damage != nil {
			fmt.Fprintf(g.stderr, "warning: %v; a point-in-time restore that needs %s fails\n", f.Damage, f.Name)
		}
	}
	return nil
}

// printOverview prints what a source's archive covers, how far behind
// its server it is, and its gaps.
func printOverview(g *globals, v binlog.Overview) {
	w := g.stdout
	fmt.Fprintf(w, "\nSERVER %s\n", v.Source)
	point := func(p binlog.Point) string {
		if p.Time.IsZero() {
			return p.File
		}
		return fmt.Sprintf("%s UTC (GTID %s, %s)", p.Time.UTC().Format(time.DateTime), dash(p.GTID), p.File)
	}
	switch {
	case v.From.File == "":
		fmt.Fprintf(w, "  recoverable: nothing archived after the last gap\n")
	case v.FromBackup != "":
		fmt.Fprintf(w, "  recoverable: from backup %s, %s, to %s\n", v.FromBackup, point(v.From), point(v.To))
	default:
		fmt.Fprintf(w, "  recoverable: archived from %s to %s; no physical backup of this server within it to restore from\n", point(v.From), point(v.To))
	}
	switch s := v.Status; {
	case s == nil:
		fmt.Fprintf(w, "  lag: unknown (no run of binlog has measured it); newest archived event %s\n", point(v.To))
	case s.Following:
		fmt.Fprintf(w, "  lag: %s, %s behind the server (binlog --follow, measured %s UTC; %s:%d archived of %s:%d)\n",
			(time.Duration(s.LagSeconds * float64(time.Second))).Round(time.Second), progress.HumanBytes(s.LagBytes),
			s.Updated.UTC().Format(time.DateTime), s.ArchivedFile, s.ArchivedOffset, s.ServerFile, s.ServerSize)
	case s.LagBytes == 0:
		fmt.Fprintf(w, "  lag: none when binlog last ran, %s UTC: the archive held all the server had written (%s:%d)\n",
			s.Updated.UTC().Format(time.DateTime), s.ArchivedFile, s.ArchivedOffset)
	default:
		fmt.Fprintf(w, "  lag: %s behind the server when binlog last ran, %s UTC (without --follow the active file %s is not archived)\n",
			progress.HumanBytes(s.LagBytes), s.Updated.UTC().Format(time.DateTime), s.ServerFile)
	}
	if l := v.Continues; l != nil {
		fmt.Fprintf(w, "  continues %s after GTID %s (a failover; from %s at offset %d): a restore from %s's backups goes on into this server's files\n",
			l.Continues, l.GTID, l.File, l.Offset, l.Continues)
	}
	if !v.CompleteAt.IsZero() {
		fmt.Fprintf(w, "  complete: the archive held all the server had written at %s UTC (a restore --until up to then is exact)\n", v.CompleteAt.UTC().Format(time.DateTime))
	}
	for _, b := range v.Breaks {
		fmt.Fprintf(w, "  BROKEN: %s\n", b.Missing)
	}
	for _, f := range v.SegmentOnly {
		fmt.Fprintf(w, "  segments only: %s, bytes 0..%d in %d segments (not archived whole yet)\n", f.File, f.End, f.Segments)
	}
	for _, gap := range v.Gaps {
		state := "binlog stops on it until run with --allow-gap"
		if gap.Allowed {
			state = "archived on past it (--allow-gap)"
		}
		fmt.Fprintf(w, "  GAP: %s %s (detected %s UTC; lost: after GTID %s up to %s, GTID list %s; %s)\n",
			gap.Missing, gap.Reason, gap.Detected.UTC().Format(time.DateTime), dash(gap.AfterGTID), gap.Before, dash(gap.BeforeGTID), state)
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
