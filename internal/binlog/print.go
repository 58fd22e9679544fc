package binlog

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/repo"
)

// WriteListing writes what list --binlogs prints: the archived files per
// source, with the gaps in their numbering (and the reason, if recorded),
// a file whose manifest is damaged listed as such and named with the
// reason on warn; then, per source, its Overview.
func WriteListing(w, warn io.Writer, files []repo.BinlogEntry, views []Overview) error {
	if err := writeFiles(w, files, views); err != nil {
		return err
	}
	for _, v := range views {
		v.WriteText(w)
	}
	for _, f := range files {
		if f.Damage != nil {
			fmt.Fprintf(warn, "warning: %v; a point-in-time restore that needs %s fails\n", f.Damage, f.Name)
		}
	}
	return nil
}

// writeFiles writes the table of archived files, a gap's row before the
// file after it.
func writeFiles(w io.Writer, files []repo.BinlogEntry, views []Overview) error {
	recorded := map[string]repo.BinlogGap{}
	for _, v := range views {
		for _, gap := range v.Gaps {
			recorded[gap.Source+"/"+gap.Before] = gap
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SOURCE\tFILE\tFIRST EVENT (UTC)\tLAST EVENT (UTC)\tFIRST GTID\tLAST GTID\tSIZE\tSTORED")
	for i, f := range files {
		if gap, ok := recorded[f.Source+"/"+f.Name]; ok {
			fmt.Fprintf(tw, "%s\tGAP: %s %s\t\t\t\t\t\t\n", f.Source, gap.Missing, gap.Reason)
		} else if i > 0 && files[i-1].Source == f.Source {
			if missing := NumberGap(files[i-1].Name, f.Name); missing != "" {
				fmt.Fprintf(tw, "%s\tMISSING: %s (archived, and no object holds it now)\t\t\t\t\t\t\n", f.Source, missing)
			}
		}
		if f.Damage != nil {
			fmt.Fprintf(tw, "%s\t%s\tDAMAGED\t-\t-\t-\t-\t%s\n", f.Source, f.Name, progress.HumanBytes(f.Size))
			continue
		}
		b := f.Manifest.Binlog
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", b.Source, b.Name, b.FirstTime.Format(time.DateTime), b.LastTime.Format(time.DateTime),
			dashed(b.FirstGTID), dashed(b.LastGTID), progress.HumanBytes(b.Size), progress.HumanBytes(f.Manifest.Stats.StoredBytes))
	}
	return tw.Flush()
}

// WriteText writes what the source's archive covers, how far behind its
// server it is, and its gaps.
func (v Overview) WriteText(w io.Writer) {
	fmt.Fprintf(w, "\nSERVER %s\n", v.Source)
	switch {
	case v.From.File == "":
		fmt.Fprintf(w, "  recoverable: nothing archived after the last gap\n")
	case v.FromBackup != "":
		fmt.Fprintf(w, "  recoverable: from backup %s, %s, to %s\n", v.FromBackup, v.From.text(), v.To.text())
	default:
		fmt.Fprintf(w, "  recoverable: archived from %s to %s; no physical backup of this server within it to restore from\n", v.From.text(), v.To.text())
	}
	v.writeLag(w)
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
			gap.Missing, gap.Reason, gap.Detected.UTC().Format(time.DateTime), dashed(gap.AfterGTID), gap.Before, dashed(gap.BeforeGTID), state)
	}
}

// writeLag writes how far behind its server the archive was when binlog
// last measured it.
func (v Overview) writeLag(w io.Writer) {
	switch s := v.Status; {
	case s == nil:
		fmt.Fprintf(w, "  lag: unknown (no run of binlog has measured it); newest archived event %s\n", v.To.text())
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
}

// text is p as the listing says it: its file, or its time, GTID and file.
func (p Point) text() string {
	if p.Time.IsZero() {
		return p.File
	}
	return fmt.Sprintf("%s UTC (GTID %s, %s)", p.Time.UTC().Format(time.DateTime), dashed(p.GTID), p.File)
}

// Track reports a's work on t, as binlog's progress shows it: the bytes
// stored (Counter), each file archived and each restart as a log line
// (Log), and, following, how far the archive is behind the server (Lag).
func (a *Archiver) Track(t *progress.Tracker) {
	a.Counter, a.Log = t, func(msg string) { t.Logf("%s", msg) }
	a.Lag = func(l Lag) { t.SetLag(progress.Lag{Seconds: l.Seconds, Bytes: l.Bytes}) }
}
