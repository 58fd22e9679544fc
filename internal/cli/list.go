package cli

import (
	"fmt"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/backupid"
	"github.com/backstream/backstream/internal/binlog"
	"github.com/backstream/backstream/internal/health"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/repo"
)

// listEntry is one backup in `list --json`.
type listEntry struct {
	ID          string            `json:"id"`
	Kind        string            `json:"kind"`
	Parent      string            `json:"parent,omitempty"`
	Chain       string            `json:"chain,omitempty"`
	Depth       int               `json:"depth,omitempty"`
	MergedFrom  []string          `json:"merged_from,omitempty"` // the chain a merged full backup was built from
	Started     time.Time         `json:"started"`
	Finished    time.Time         `json:"finished"`
	Server      archive.Server    `json:"server"`
	Positions   archive.Positions `json:"positions"`
	Codec       string            `json:"codec"`
	Streams     int               `json:"streams"`
	Files       int               `json:"files"`
	RawBytes    int64             `json:"raw_bytes"`
	StoredBytes int64             `json:"stored_bytes"`
	// Databases of a logical backup, with their tables, rows and bytes.
	Databases []archive.DatabaseStats `json:"databases,omitempty"`
	// Damaged marks a backup whose manifest is stored but cannot be
	// trusted; Damage says why. Only the id (and its time) are known of it.
	Damaged bool   `json:"damaged,omitempty"`
	Damage  string `json:"damage,omitempty"`
	// Partial marks a logical backup of some databases or tables.
	Partial bool `json:"partial,omitempty"`
	// Unrestorable says why a complete backup cannot be restored, as the
	// catalog and the last verify show: an object missing, damage a
	// verify found, a link of its chain missing or damaged.
	Unrestorable string `json:"unrestorable,omitempty"`
}

// entryOf is the listing of complete backup m.
func entryOf(m *archive.Manifest) listEntry {
	return listEntry{ID: m.ID, Kind: m.Kind, Parent: m.Parent, Chain: m.Chain, Depth: m.Depth, MergedFrom: m.MergedFrom, Started: m.Started, Finished: m.Finished,
		Server: m.Server, Positions: m.Positions, Codec: m.Codec, Streams: len(m.Streams), Files: len(m.Files),
		RawBytes: m.Stats.RawBytes, StoredBytes: m.Stats.StoredBytes, Databases: m.Databases, Partial: m.Partial}
}

// madeResult is what --json prints of a backup a command made: its
// listing, how long it took, and the encryption it got.
type madeResult struct {
	listEntry
	Seconds    float64             `json:"seconds"`
	Encryption *archive.Encryption `json:"encryption,omitempty"`
	NoHistory  []string            `json:"no_history,omitempty"`
	Masked     []string            `json:"masked,omitempty"` // logical: columns the dump masked, as db.table.column=function
}

// reportMade prints the backup m the command made: with --json one JSON
// object (madeResult), else text.
func (g *globals) reportMade(m *archive.Manifest, text string) error {
	g.made = m
	if !g.json {
		_, err := fmt.Fprintln(g.stdout, text)
		return err
	}
	return printJSON(g.stdout, madeOf(m))
}

// madeOf is what --json prints of backup m, made by the command.
func madeOf(m *archive.Manifest) madeResult {
	r := madeResult{listEntry: entryOf(m), Seconds: m.Stats.Seconds, Encryption: m.Encryption}
	for _, d := range m.Databases {
		for _, t := range d.NoHistory {
			r.NoHistory = append(r.NoHistory, d.Name+"."+t)
		}
	}
	r.Masked = maskedIn(m)
	return r
}

// registerJSON adds --json to a command that makes a backup.
func (g *globals) registerJSON(f *pflag.FlagSet) {
	f.BoolVar(&g.json, "json", false, "print the backup made as one JSON object (id, kind, parent, positions, sizes, seconds) instead of the text line")
}

// binlogListEntry is one archived binary log file in `list --binlogs
// --json`.
type binlogListEntry struct {
	*archive.BinlogFile
	// Damaged marks a file whose manifest is stored but cannot be
	// trusted; Damage says why. Only its source and name are known.
	Damaged bool   `json:"damaged,omitempty"`
	Damage  string `json:"damage,omitempty"`
	// Segments, for a file held only as segments (the one binlog
	// --follow is writing), is how many; its size is the bytes they hold
	// from the start of the file.
	Segments int `json:"segments,omitempty"`
	// Missing marks where the archive lost what it held (a break, named
	// by the file before it; Damage says what is missing).
	Missing bool `json:"missing,omitempty"`
}

func newListCmd(g *globals) *cobra.Command {
	var asJSON, binlogs, status bool
	var kind string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the complete backups of a repository",
		Example: `  backstream list --repo /backups
  backstream list --repo /backups --json
  backstream list --repo /backups --binlogs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkKind(kind); err != nil {
				return err
			}
			r, err := g.openRepo(cmd.Context(), false)
			if err != nil {
				return err
			}
			if binlogs || status {
				files, err := r.Binlogs(cmd.Context())
				if err != nil {
					return err
				}
				ms, err := r.List(cmd.Context())
				if err != nil {
					return err
				}
				views, err := binlog.Overviews(cmd.Context(), r, ms, files)
				if err != nil {
					return err
				}
				switch {
				case asJSON && !status:
					return printJSON(g.stdout, binlogListJSON(files, views))
				case status && asJSON:
					return printJSON(g.stdout, append([]binlog.Overview{}, views...))
				case status:
					for _, v := range views {
						printOverview(g, v)
					}
					return nil
				}
				return printBinlogs(g, files, views)
			}
			entries, err := r.Scan(cmd.Context())
			if err != nil {
				return err
			}
			verdicts, err := health.Verdicts(cmd.Context(), r, entries)
			if err != nil {
				return err
			}
			broken := health.Unrestorable(r.Backend.Location(), entries, verdicts)
			if kind != "" {
				// A damaged manifest's kind is unknown: it stays listed.
				entries = slices.DeleteFunc(entries, func(e repo.Entry) bool { return e.Manifest != nil && e.Manifest.Kind != kind })
			}
			var ms []*archive.Manifest
			for _, e := range entries {
				if e.Manifest != nil {
					ms = append(ms, e.Manifest)
				}
			}
			if asJSON {
				out := make([]listEntry, 0, len(entries))
				for _, e := range entries {
					if m := e.Manifest; m != nil {
						le := entryOf(m)
						if err := broken[m.ID]; err != nil {
							le.Unrestorable = err.Error()
						}
						out = append(out, le)
					} else if e.Damage != nil {
						started, _ := backupid.Time(e.ID)
						out = append(out, listEntry{ID: e.ID, Started: started, StoredBytes: e.Size, Damaged: true, Damage: e.Damage.Error()})
					}
				}
				return printJSON(g.stdout, out)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tKIND\tSTARTED (UTC)\tTOOK\tSIZE\tSTORED\tRATIO\tSERVER\tBINLOG POSITION")
			for _, e := range entries {
				if e.Damage != nil {
					started, _ := backupid.Time(e.ID)
					fmt.Fprintf(tw, "%s\tDAMAGED\t%s\t-\t-\t%s\t-\t-\t-\n", e.ID, started.UTC().Format("2006-01-02 15:04:05"), progress.HumanBytes(e.Size))
					continue
				}
				m := e.Manifest
				if m == nil {
					continue
				}
				ratio := "-"
				if m.Stats.StoredBytes > 0 {
					ratio = fmt.Sprintf("%.2fx", float64(m.Stats.RawBytes)/float64(m.Stats.StoredBytes))
				}
				pos := "-"
				if m.Positions.BinlogFile != "" {
					pos = fmt.Sprintf("%s:%d", m.Positions.BinlogFile, m.Positions.BinlogPosition)
				}
				if gp := m.Positions.Galera; gp != nil {
					pos += " galera " + gp.String()
				}
				kind := m.Kind // shadows the flag, used above
				switch {
				case m.Parent != "":
					kind = fmt.Sprintf("%s +%d", m.Kind, m.Depth)
				case len(m.MergedFrom) > 0:
					kind = m.Kind + " merged"
				case m.Partial:
					kind = m.Kind + " partial"
				}
				if broken[m.ID] != nil {
					kind += " BROKEN"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.ID, kind, m.Started.UTC().Format("2006-01-02 15:04:05"),
					m.Finished.Sub(m.Started).Round(100*time.Millisecond), progress.HumanBytes(m.Stats.RawBytes),
					progress.HumanBytes(m.Stats.StoredBytes), ratio, m.Server.Version, pos)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, e := range entries {
				if e.Damage != nil {
					fmt.Fprintf(g.stderr, "warning: %v; latest and new incrementals skip backup %s\n", e.Damage, e.ID)
				}
				if err := broken[e.ID]; err != nil {
					fmt.Fprintf(g.stderr, "warning: %v\n", err)
				}
			}
			return printDatabases(g, ms)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&kind, "kind", "", "list only the backups of this kind, physical or logical")
	cmd.Flags().BoolVar(&binlogs, "binlogs", false, "list the archived binary logs instead, with the gaps between them")
	cmd.Flags().BoolVar(&status, "status", false, "print per server only the recoverable window, the lag and the gaps of the archived binary logs (--json: one object per server)")
	return cmd
}

// printDatabases lists what each logical backup holds, under the table of
// backups.
func printDatabases(g *globals, ms []*archive.Manifest) error {
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	header := false
	for _, m := range ms {
		for _, d := range m.Databases {
			if !header {
				fmt.Fprintln(tw, "\nLOGICAL BACKUP\tDATABASE\tTABLES\tROWS\tSIZE")
				header = true
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", m.ID, d.Name, d.Tables, d.Rows, progress.HumanBytes(d.Bytes))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, m := range ms {
		printNoHistory(g, m)
		printMasked(g, m)
	}
	return nil
}
