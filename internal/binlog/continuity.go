package binlog

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/repo"
)

// Break is a piece of a source's archive that was stored and is no
// longer there: a file missing between two archived ones (the server
// numbers its files one after the other, so a file's name names its
// predecessor), the newest files or segments the head object says were
// archived, the head object itself, or the rest of a file held only as
// segments when a later file follows. Recorded gap markers (files never
// archived) are not breaks: list shows them as gaps.
type Break struct {
	Source string `json:"source"`
	// Missing names what no object holds.
	Missing string `json:"missing"`
	// After is the last file archived before the break: the window of a
	// point-in-time restore from a backup before it ends there. Empty
	// when the break is at the newest end (the archive lost its tail).
	After string `json:"after,omitempty"`
	// Tail is true when the break is at the newest end of the archive:
	// the end the head object records cannot be reached.
	Tail bool `json:"tail,omitempty"`
}

func (b Break) Error() string {
	if b.Tail {
		return fmt.Sprintf("the binary log archive of %s lost its newest part: %s", b.Source, b.Missing)
	}
	return fmt.Sprintf("the binary log archive of %s has a hole after %s: %s, so no point-in-time restore reaches past %s", b.Source, b.After, b.Missing, b.After)
}

// Damage is b as damage (archive.IsCorrupt): what verify and check report.
func (b Break) Damage() error { return archive.Corruptf("%s", b.Error()) }

// heldFile is what the archive holds of one file of a source.
type heldFile struct {
	name   string
	whole  bool
	end    int64 // bytes held: the size if whole, else where the segments' run from 0 ends
	headed bool  // its record says the archiver keeps a head object
}

// Breaks finds the breaks of the archive of every source named in files
// (r.Binlogs) or segs (r.BinlogSegments). It reads each head first and
// lists what the archive holds after, segments before files: the
// archiver stores an object before the head that names it, and a file
// whole before it deletes its segments, so a run archiving meanwhile
// cannot make a break appear. The listing reads no manifest: files
// gives what they say.
func Breaks(ctx context.Context, r *repo.Repo, files []repo.BinlogEntry, segs []repo.BinlogSegment) (map[string][]Break, error) {
	heads := map[string]*repo.BinlogHead{}
	headErrs := map[string]error{}
	for _, src := range sourcesOf(files, segs) {
		h, err := r.BinlogHeadOf(ctx, src)
		if err != nil && !archive.IsCorrupt(err) {
			return nil, err
		}
		heads[src], headErrs[src] = h, err
	}
	segs, err := r.BinlogSegments(ctx, "")
	if err != nil {
		return nil, err
	}
	names, err := r.BinlogNames(ctx)
	if err != nil {
		return nil, err
	}
	gaps, err := r.BinlogGaps(ctx)
	if err != nil {
		return nil, err
	}
	headed := map[string]bool{} // source/name of the manifests that say so
	for _, f := range files {
		if f.Manifest != nil && f.Manifest.Binlog.Headed {
			headed[f.Source+"/"+f.Name] = true
		}
	}
	bySource := map[string][]heldFile{}
	for _, f := range names {
		bySource[f.Source] = append(bySource[f.Source], heldFile{name: f.Name, whole: true, headed: headed[f.Source+"/"+f.Name]})
	}
	newestSeg := map[string]repo.BinlogSegment{} // of each source's newest file held only as segments
	for i := 0; i < len(segs); {
		j := i
		for j < len(segs) && segs[j].Source == segs[i].Source && segs[j].Name == segs[i].Name {
			j++
		}
		src, name := segs[i].Source, segs[i].Name
		if !slices.ContainsFunc(bySource[src], func(h heldFile) bool { return h.name == name }) {
			_, end, _ := Chain(segs[i:j])
			bySource[src] = append(bySource[src], heldFile{name: name, end: end})
			newestSeg[src] = segs[j-1]
		}
		i = j
	}
	out := map[string][]Break{}
	for src, held := range bySource {
		if _, known := heads[src]; !known {
			continue // archived since the caller listed: judged next time
		}
		slices.SortFunc(held, func(a, b heldFile) int { return strings.Compare(a.name, b.name) })
		// Without a head, whether one was kept: a manifest says, else the
		// newest segment's header (read only then).
		if s, ok := newestSeg[src]; ok && heads[src] == nil && headErrs[src] == nil &&
			!slices.ContainsFunc(held, func(h heldFile) bool { return h.headed }) {
			held[len(held)-1].headed = held[len(held)-1].name == s.Name && segmentHeaded(ctx, r, s)
		}
		if bs := sourceBreaks(src, held, gaps, heads[src], headErrs[src]); len(bs) > 0 {
			out[src] = bs
		}
	}
	return out, nil
}

// sourcesOf lists the sources of files and segs.
func sourcesOf(files []repo.BinlogEntry, segs []repo.BinlogSegment) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Source)
	}
	for _, s := range segs {
		out = append(out, s.Source)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// segmentHeaded reads whether segment s says its archiver keeps a head
// object; a segment that cannot be read says nothing (verify names it).
func segmentHeaded(ctx context.Context, r *repo.Repo, s repo.BinlogSegment) bool {
	rc, err := r.OpenBinlogSegment(ctx, s)
	if err != nil {
		return false
	}
	defer rc.Close()
	h, err := ReadSegment(rc, s.Source, s.Name, s.Start, s.End, nil)
	return err == nil && h.Headed
}

// sourceBreaks compares what the archive holds of src (held, by name)
// with the numbering of its files, its recorded gaps and its head
// (headErr: the head object is damaged).
func sourceBreaks(src string, held []heldFile, gaps []repo.BinlogGap, head *repo.BinlogHead, headErr error) []Break {
	var out []Break
	for i := 1; i < len(held); i++ {
		prev, f := held[i-1], held[i]
		if slices.ContainsFunc(gaps, func(g repo.BinlogGap) bool { return g.Source == src && g.Before == f.name }) {
			continue // lost before it was archived, and recorded: a gap, which list shows
		}
		if !prev.whole {
			out = append(out, Break{Source: src, After: prev.name,
				Missing: fmt.Sprintf("%s is held only as segments, up to offset %d, and %s follows it: the rest of %s is in no object", prev.name, prev.end, f.name, prev.name)})
			continue
		}
		missing := NumberGap(prev.name, f.name)
		if missing == "" {
			continue
		}
		where := repo.BinlogDir(src, missing) + "/"
		if strings.Contains(missing, " .. ") {
			where = repo.BinlogDir(src, "") // several files
		}
		out = append(out, Break{Source: src, After: prev.name,
			Missing: fmt.Sprintf("%s, archived between %s and %s, is missing (under %s)", missing, prev.name, f.name, where)})
	}
	newest := held[len(held)-1]
	switch {
	case headErr != nil:
		out = append(out, Break{Source: src, Tail: true, Missing: headErr.Error() + ": the end of the archive cannot be proven"})
	case head == nil:
		if slices.ContainsFunc(held, func(h heldFile) bool { return h.headed }) {
			out = append(out, Break{Source: src, Tail: true,
				Missing: fmt.Sprintf("its head object %s is missing, so the end of the archive cannot be proven (the newest file held is %s)", repo.BinlogHeadObject(src), newest.name)})
		}
	case newest.name < head.File:
		lost := head.File
		if g := NumberGap(newest.name, head.File); g != "" {
			lost = g + " and " + head.File
		}
		out = append(out, Break{Source: src, Tail: true,
			Missing: fmt.Sprintf("%s, archived up to offset %d (GTID %s, %s UTC) as %s records, is missing after %s", lost, head.End, dashIfEmpty(head.LastGTID), head.LastTime.UTC().Format("2006-01-02 15:04:05"), repo.BinlogHeadObject(src), newest.name)})
	case newest.name == head.File && !newest.whole && newest.end < head.End:
		out = append(out, Break{Source: src, Tail: true,
			Missing: fmt.Sprintf("bytes %d..%d of %s (up to GTID %s, %s UTC), archived as segments as %s records, are in no object", newest.end, head.End, head.File, dashIfEmpty(head.LastGTID), head.LastTime.UTC().Format("2006-01-02 15:04:05"), repo.BinlogHeadObject(src))})
	}
	return out
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
