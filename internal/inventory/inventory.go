// Package inventory lists what a repository holds: its backups, each with
// what the catalog and the last verify say of whether a restore would give
// it back, and its archived binary logs with the window each server's
// archive covers: the use case behind list, and its listing as list
// prints it; and a backup as every command that makes one prints it
// (Made, Stored). It reads the catalog only, writes nothing and takes no lock,
// so it runs beside a backup. It knows nothing of exit codes, and of
// flags only the names its notes tell people about.
package inventory

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/backupid"
	"github.com/backstream/backstream/internal/binlog"
	"github.com/backstream/backstream/internal/health"
	"github.com/backstream/backstream/internal/repo"
)

// Request says what to list.
type Request struct {
	// Kind, when set (archive.KindPhysical or KindLogical), lists only the
	// backups of that kind; a backup whose manifest is damaged has no
	// known kind and is always listed.
	Kind string
}

// Backup is one backup of a listing: a complete one as its manifest
// describes it, or one whose manifest is damaged. Its JSON is what list
// --json prints of it.
type Backup struct {
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

// Of is the listing of complete backup m.
func Of(m *archive.Manifest) Backup {
	return Backup{ID: m.ID, Kind: m.Kind, Parent: m.Parent, Chain: m.Chain, Depth: m.Depth, MergedFrom: m.MergedFrom, Started: m.Started, Finished: m.Finished,
		Server: m.Server, Positions: m.Positions, Codec: m.Codec, Streams: len(m.Streams), Files: m.FileCount(),
		RawBytes: m.Stats.RawBytes, StoredBytes: m.Stats.StoredBytes, Databases: m.Databases, Partial: m.Partial}
}

// Listing is the backups of a repository, oldest first: every complete
// one and every one whose manifest is damaged (a backup that never
// committed is not listed). Its JSON is what list --json prints.
type Listing []Backup

// List reads the catalog of r and lists its backups as req asks.
func List(ctx context.Context, r *repo.Repo, req Request) (Listing, error) {
	entries, err := r.Scan(ctx)
	if err != nil {
		return nil, err
	}
	verdicts, err := health.Verdicts(ctx, r, entries)
	if err != nil {
		return nil, err
	}
	broken := health.Unrestorable(r.Backend.Location(), entries, verdicts)
	if req.Kind != "" {
		entries = slices.DeleteFunc(entries, func(e repo.Entry) bool { return e.Manifest != nil && e.Manifest.Kind != req.Kind })
	}
	out := make(Listing, 0, len(entries))
	for _, e := range entries {
		switch {
		case e.Manifest != nil:
			b := Of(e.Manifest)
			if err := broken[e.ID]; err != nil {
				b.Unrestorable = err.Error()
			}
			out = append(out, b)
		case e.Damage != nil:
			started, _ := backupid.Time(e.ID)
			out = append(out, Backup{ID: e.ID, Started: started, StoredBytes: e.Size, Damaged: true, Damage: e.Damage.Error()})
		}
	}
	return out, nil
}

// Binlogs is what a repository holds of binary logs: every file archived
// whole (or whose manifest is damaged), by source and name, and for each
// source what its archive covers (binlog.Overview).
type Binlogs struct {
	Files     []repo.BinlogEntry
	Overviews []binlog.Overview
}

// ListBinlogs reads the binary log archives of r.
func ListBinlogs(ctx context.Context, r *repo.Repo) (Binlogs, error) {
	files, err := r.Binlogs(ctx)
	if err != nil {
		return Binlogs{}, err
	}
	ms, err := r.List(ctx)
	if err != nil {
		return Binlogs{}, err
	}
	views, err := binlog.Overviews(ctx, r, ms, files)
	if err != nil {
		return Binlogs{}, err
	}
	return Binlogs{Files: files, Overviews: views}, nil
}

// BinlogEntry is one archived binary log file in `list --binlogs --json`.
type BinlogEntry struct {
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

// Entries is `list --binlogs --json`: every file archived whole, every
// file held only as segments, and every break, by source and name.
func (b Binlogs) Entries() []BinlogEntry {
	out := make([]BinlogEntry, 0, len(b.Files))
	for _, f := range b.Files {
		if f.Damage != nil {
			out = append(out, BinlogEntry{BinlogFile: &archive.BinlogFile{Source: f.Source, Name: f.Name}, Damaged: true, Damage: f.Damage.Error()})
			continue
		}
		out = append(out, BinlogEntry{BinlogFile: f.Manifest.Binlog})
	}
	for _, v := range b.Overviews {
		for _, s := range v.SegmentOnly {
			f := &archive.BinlogFile{Source: v.Source, Name: s.File, Size: s.End}
			if v.To.File == s.File {
				f.LastTime, f.LastGTID = v.To.Time, v.To.GTID
			}
			out = append(out, BinlogEntry{BinlogFile: f, Segments: s.Segments})
		}
		for _, br := range v.Breaks {
			name := br.After
			if br.Tail {
				name = v.To.File
			}
			out = append(out, BinlogEntry{BinlogFile: &archive.BinlogFile{Source: v.Source, Name: name}, Missing: true, Damage: br.Error()})
		}
	}
	slices.SortStableFunc(out, func(a, b BinlogEntry) int {
		return strings.Compare(a.Source+"/"+a.Name, b.Source+"/"+b.Name)
	})
	return out
}
