// Package verify checks a stored backup without writing anything: with
// the backups of its chain, every metadata object against its digest, a
// logical backup's catalog against its data files, a physical backup's
// table list against its files and its redo log against its end, and
// every stream
// object frame by frame, chunk by chunk and file by file against the
// manifest; and the archived binary logs, whole files and segments
// alike. Damage is reported as corruption (archive.IsCorrupt) naming the
// backup and the object.
//
// Run is the verify use case: a typed Request (a backup with its chain,
// what a point-in-time restore to a target reads, or every archived
// binary log) and a Result that writes itself as verify's text; what it
// finds of a backup is recorded in the repository (repo.Verdict). The
// package knows backups through the repository's API; it knows nothing
// of flags or exit codes.
package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/binlog"
	"github.com/backstream/backstream/internal/logical"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/repo"
)

// Restorable checks everything a restore of backup m of r reads: every
// backup of its chain, the full base first, then m itself (see Backup). A
// link that is gone, or damaged, is an error naming m, the link and the
// object. It returns the chain it checked, without m.
func Restorable(ctx context.Context, r *repo.Repo, m *archive.Manifest, how Reading) ([]*archive.Manifest, error) {
	links, err := r.Chain(ctx, m)
	if err != nil {
		return nil, err
	}
	for _, l := range links {
		if err := Backup(ctx, r, l, how); err != nil {
			return links, &LinkError{Backup: m.ID, Link: l.ID, Err: err}
		}
	}
	return links, Backup(ctx, r, m, how)
}

// Reading is how a verify reads backups: their streams as Read says
// (workers, counter, memory), and with a Subset only its files, counted
// in Sampled.
type Reading struct {
	Read    archive.ReadOptions
	Subset  Subset
	Sampled *Sampled
}

// LinkError is damage in a backup that another one builds on.
type LinkError struct {
	Backup, Link string
	Err          error
}

func (e *LinkError) Error() string {
	return fmt.Sprintf("backup %s cannot be restored: its chain's %s is damaged: %v", e.Backup, e.Link, e.Err)
}

func (e *LinkError) Unwrap() error { return e.Err }

// Backup checks every object of backup m of r: its metadata (Meta), that
// its files hold the tables it lists (Tables), then every stream, read as
// how says; with a subset, the frames of its files alone (and whole the
// streams whose files kept no frame ranges, see archive.Plan). Read whole,
// a physical backup's redo log must reach the backup's end.
func Backup(ctx context.Context, r *repo.Repo, m *archive.Manifest, how Reading) error {
	m, err := r.Whole(ctx, m)
	if err != nil {
		return err
	}
	if err := Meta(ctx, r, m); err != nil {
		return err
	}
	if err := Tables(m); err != nil {
		return err
	}
	read := how.Read.Of(r.Input(m), m)
	if !how.Subset.All() {
		chosen := how.Subset.choose(m, how.Sampled)
		read.Only = func(p string) bool { return chosen[p] }
	}
	// A physical backup's copy of the redo log must reach where the
	// backup ends, or its prepare fails (physical.RedoCopy): backups
	// committed before backstream checked it at backup time are checked
	// here.
	redo := &physical.RedoCopy{}
	if how.Subset.All() {
		read.Sink = redo
	}
	err = archive.Read(ctx, read)
	if err == nil && how.Subset.All() {
		err = redo.CheckBackup(m)
	}
	if err != nil {
		return fmt.Errorf("backup %s: %w", m.ID, err)
	}
	return nil
}

// Meta checks every metadata object of m against its digest, and a
// logical backup's catalog against its files.
func Meta(ctx context.Context, r *repo.Repo, m *archive.Manifest) error {
	for _, o := range m.Meta {
		data, err := r.ReadMeta(ctx, m, o.Name)
		if err != nil {
			return err
		}
		if o.Name == logical.CatalogName {
			c, err := logical.ParseCatalog(data)
			if err == nil {
				err = c.Check(m)
			}
			if err != nil {
				return archive.Corruptf("backup %s: %v", m.ID, err)
			}
		}
	}
	return nil
}

// Binlogs checks every archived binary log of r: each file archived whole
// frame by frame against its manifest, each segment of a file being
// written against the digest of its header, and that the segments of a
// file not archived whole leave no hole. It stops at the first damage (a damaged manifest too),
// named; it returns how many files and segments it checked.
func Binlogs(ctx context.Context, r *repo.Repo, how archive.ReadOptions) (files, segments int, err error) {
	entries, err := r.Binlogs(ctx)
	if err != nil {
		return 0, 0, err
	}
	whole := map[string]bool{}
	for _, e := range entries {
		whole[e.Source+"/"+e.Name] = true
		if e.Damage != nil {
			return files, segments, e.Damage
		}
		if err := wholeBinlog(ctx, r, e.Manifest, how); err != nil {
			return files, segments, err
		}
		files++
	}
	segs, err := r.BinlogSegments(ctx, "")
	if err != nil {
		return files, segments, err
	}
	for i := 0; i < len(segs); {
		j := i
		for j < len(segs) && segs[j].Source == segs[i].Source && segs[j].Name == segs[i].Name {
			j++
		}
		// Segments of a file archived whole since are leftovers of a run
		// that stopped before removing them all: only what they hold counts.
		if _, _, gap := binlog.Chain(segs[i:j]); gap != "" && !whole[segs[i].Source+"/"+segs[i].Name] {
			return files, segments, archive.Corruptf("the segments of binary log %s of %s have a hole: %s are in no segment (under %s/segments/)",
				segs[i].Name, segs[i].Source, gap, repo.BinlogDir(segs[i].Source, segs[i].Name))
		}
		for _, s := range segs[i:j] {
			if err := checkSegment(ctx, r, s); err != nil {
				return files, segments, err
			}
			segments++
		}
		i = j
	}
	breaks, err := binlog.Breaks(ctx, r, entries, segs)
	if err != nil {
		return files, segments, err
	}
	var errs []error
	for _, src := range slices.Sorted(maps.Keys(breaks)) {
		for _, b := range breaks[src] {
			errs = append(errs, b.Damage())
		}
	}
	return files, segments, errors.Join(errs...)
}

// BinlogFile checks one archived binary log file that a replay reads:
// archived whole (whole, a binary log manifest), else as the segments
// segs, in order. What the replay needs of the archive besides (that no
// file is missing on the way to its target) is for the plan that chose
// the files to refuse.
func BinlogFile(ctx context.Context, r *repo.Repo, whole *archive.Manifest, segs []repo.BinlogSegment, how archive.ReadOptions) error {
	if whole != nil {
		return wholeBinlog(ctx, r, whole, how)
	}
	for _, s := range segs {
		if err := checkSegment(ctx, r, s); err != nil {
			return err
		}
	}
	return nil
}

// wholeBinlog checks a binary log file archived whole, frame by frame.
func wholeBinlog(ctx context.Context, r *repo.Repo, m *archive.Manifest, how archive.ReadOptions) error {
	if err := archive.Read(ctx, how.Of(r.BinlogInput(m), m)); err != nil {
		return fmt.Errorf("binlog %s/%s: %w", m.Binlog.Source, m.Binlog.Name, err)
	}
	return nil
}

func checkSegment(ctx context.Context, r *repo.Repo, s repo.BinlogSegment) error {
	rc, err := r.OpenBinlogSegment(ctx, s)
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = binlog.ReadSegment(rc, s.Source, s.Name, s.Start, s.End, io.Discard)
	return err
}
