package binlog

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
)

// Overview is what the repository says of one source's archive: the
// window a point-in-time restore can reach, the gaps, and how far behind
// the server the last run of binlog saw it.
type Overview struct {
	Source string `json:"source"`
	// From is where the window starts: the position of the oldest
	// physical backup of the source after the last gap whose binary log
	// file is archived (FromBackup), or else the first archived event after
	// the last gap (no backup to start from yet: FromBackup is "").
	From       Point  `json:"from"`
	FromBackup string `json:"from_backup,omitempty"`
	// To is the newest archived event, in a whole file or a segment.
	To Point `json:"to"`
	// Gaps are the recorded gap markers of the source, oldest first.
	Gaps []repo.BinlogGap `json:"gaps,omitempty"`
	// Status is the last run's measure of the lag; nil if none stored.
	Status *repo.BinlogStatus `json:"status,omitempty"`
	// Continues, for a server promoted after a failover, is its link to
	// the archive it continues: a restore from that server's backups goes
	// on into this one's files.
	Continues *repo.BinlogLink `json:"continues,omitempty"`
	// SegmentOnly are the files held only as segments, not (yet) whole:
	// the one being written, or one the server crashed in.
	SegmentOnly []SegmentFile `json:"segment_only,omitempty"`
	// Breaks are archived pieces that are missing (see Break): the window
	// ends before the first one after its start.
	Breaks []Break `json:"breaks,omitempty"`
	// CompleteAt is when the archive was last known to hold all the
	// server had written (the head's complete_at): a restore --until up
	// to then reaches no further event, but is exact. Zero if unknown or
	// the archive lost its tail.
	CompleteAt time.Time `json:"complete_at,omitzero"`
}

// SegmentFile is a file held only as segments: its bytes [0, End) are
// archived without a hole, in Segments objects.
type SegmentFile struct {
	File     string `json:"file"`
	End      int64  `json:"end"`
	Segments int    `json:"segments"`
}

// Point is one position in a source's binary log.
type Point struct {
	File string    `json:"file"`
	Time time.Time `json:"time"`
	GTID string    `json:"gtid,omitempty"`
}

// Overviews describes the archive of every source that has files, whole
// or as segments, in the repository, given its backups ms and archived
// files. A damaged file's manifest or segment says nothing, and is left
// out of the window (list --binlogs names it).
func Overviews(ctx context.Context, r *repo.Repo, ms []*archive.Manifest, files []repo.BinlogEntry) ([]Overview, error) {
	gaps, err := r.BinlogGaps(ctx)
	if err != nil {
		return nil, err
	}
	links, err := r.BinlogLinks(ctx)
	if err != nil {
		return nil, err
	}
	// One listing of every segment, rather than one per server: a server
	// followed since its last rotation has only segments, and is one too.
	allSegs, err := r.BinlogSegments(ctx, "")
	if err != nil {
		return nil, err
	}
	var sources []string
	for _, s := range allSegs {
		if !slices.Contains(sources, s.Source) {
			sources = append(sources, s.Source)
		}
	}
	for _, f := range files {
		if !slices.Contains(sources, f.Source) {
			sources = append(sources, f.Source)
		}
	}
	for _, g := range gaps {
		if !slices.Contains(sources, g.Source) {
			sources = append(sources, g.Source)
		}
	}
	slices.Sort(sources)
	breaks, err := Breaks(ctx, r, files, allSegs)
	if err != nil {
		return nil, err
	}
	var out []Overview
	for _, src := range sources {
		o := Overview{Source: src}
		for i, l := range links {
			if l.Source == src {
				o.Continues = &links[i]
			}
		}
		for _, g := range gaps {
			if g.Source == src {
				o.Gaps = append(o.Gaps, g)
			}
		}
		after := "" // the window starts after the last gap
		if len(o.Gaps) > 0 {
			after = o.Gaps[len(o.Gaps)-1].Before
		}
		held := map[string]bool{}
		for _, f := range files {
			if f.Source != src || f.Manifest == nil {
				continue
			}
			b := f.Manifest.Binlog
			held[b.Name] = true
			if b.Name >= after && o.From.File == "" {
				o.From = Point{File: b.Name, Time: b.FirstTime, GTID: b.FirstGTID}
			}
			o.To = Point{File: b.Name, Time: b.LastTime, GTID: b.LastGTID}
		}
		var segs []repo.BinlogSegment
		for _, s := range allSegs {
			if s.Source == src {
				segs = append(segs, s)
			}
		}
		whole := maps.Clone(held)
		// Sorted by file name: each file's segments are one run.
		for i := 0; i < len(segs); {
			j := i
			for j < len(segs) && segs[j].Name == segs[i].Name {
				j++
			}
			held[segs[i].Name] = true
			if !whole[segs[i].Name] {
				chain, end, _ := Chain(segs[i:j])
				o.SegmentOnly = append(o.SegmentOnly, SegmentFile{File: segs[i].Name, End: end, Segments: len(chain)})
			}
			i = j
		}
		// Segments sort by file: the last one's file, if newer than every
		// whole file, is the one being written.
		if n := len(segs); n > 0 && segs[n-1].Name > o.To.File {
			if p, ok := segmentEnd(ctx, r, segs); ok {
				if o.From.File == "" && p.File >= after {
					o.From = Point{File: p.File}
				}
				o.To = p
			}
		}
		for _, m := range ms {
			if m.Kind != archive.KindPhysical || m.Positions.BinlogFile == "" || SourceKey(m.Server.Hostname, m.Server.ServerID) != src ||
				m.Positions.BinlogFile < after || !held[m.Positions.BinlogFile] {
				continue
			}
			o.From, o.FromBackup = Point{File: m.Positions.BinlogFile, Time: m.Finished.UTC(), GTID: m.Positions.GTID}, m.ID
			break // ms is oldest first
		}
		o.Breaks = breaks[src]
		tail := false
		for _, b := range o.Breaks {
			if b.Tail {
				tail = true
				continue
			}
			if b.After >= o.From.File && b.After < o.To.File {
				o.To = Point{File: b.After}
				for _, f := range files {
					if f.Source == src && f.Name == b.After && f.Manifest != nil {
						o.To = Point{File: f.Name, Time: f.Manifest.Binlog.LastTime, GTID: f.Manifest.Binlog.LastGTID}
					}
				}
				tail = true // what follows the hole is not reached either
				break
			}
		}
		if h, err := r.BinlogHeadOf(ctx, src); err == nil && h != nil && !tail {
			o.CompleteAt = h.CompleteAt
		}
		if o.Status, err = r.BinlogStatusOf(ctx, src); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// segmentEnd reads the header of the last segment of the newest file held
// only as segments: the time and GTID the archive reaches. A GTID-less
// last segment (no transaction in it) keeps the file's.
func segmentEnd(ctx context.Context, r *repo.Repo, segs []repo.BinlogSegment) (Point, bool) {
	name := segs[len(segs)-1].Name
	mine := slices.DeleteFunc(slices.Clone(segs), func(s repo.BinlogSegment) bool { return s.Name != name })
	chain, _, _ := Chain(mine)
	p := Point{File: name}
	for i := len(chain) - 1; i >= 0; i-- {
		rc, err := r.OpenBinlogSegment(ctx, chain[i])
		if err != nil {
			return p, false
		}
		h, err := ReadSegment(rc, chain[i].Source, name, chain[i].Start, chain[i].End, nil)
		rc.Close()
		if err != nil {
			return p, false
		}
		if p.Time.IsZero() {
			p.Time = h.LastTime
		}
		if h.LastGTID != "" {
			p.GTID = h.LastGTID
			return p, true
		}
	}
	return p, !p.Time.IsZero()
}
