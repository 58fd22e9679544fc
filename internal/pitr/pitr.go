// Package pitr restores a server to a point in time: the newest backup
// before the target, then the archived binary logs from the backup's
// position up to the target, replayed by a throwaway server and stopped
// cleanly (through the server's parallel replication applier, over relay
// logs written from the archive and cut where the target stops, or,
// where that cannot stop exactly as mariadb-binlog would, through
// mariadb-binlog | mariadb); or, with Apply, onto a running server from
// the position it has reached. A physical base (its chain included) is restored and prepared,
// and a throwaway server (package restoredserver) starts on it with the
// options the backup recorded to replay them; a logical base of the whole
// server is loaded, accounts too, into a server made in the target
// directory. ParseTarget reads the target as it is asked for. It reads
// the repository through its API and writes the datadir through packages
// restore and logical; it reads no flags (its refusals name the options
// the user gives) and knows nothing of how progress is shown.
package pitr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/binlog"
	"github.com/backstream/backstream/internal/childenv"
	"github.com/backstream/backstream/internal/gtid"
	"github.com/backstream/backstream/internal/logical"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/restoredserver"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/scratch"
)

// Result says what was restored and replayed.
type Result struct {
	Backup   *archive.Manifest
	Binlogs  []string
	Replayed string // the position replay stopped at, as asked
	// Workers is how many workers the server's parallel applier replayed
	// with; 0 when mariadb-binlog | mariadb did.
	Workers int
	// ServerOptions are what a server on the result starts with (see
	// ServerOptions).
	ServerOptions []mariadb.Option
}

// Run restores into job.TargetDir the newest backup of r before target t
// (of the kind t.Base names, if any) and replays the archived binary logs
// up to t. For a physical base job.Links is chosen here (its chain) and
// prepare is implied; a logical base is loaded into a server made there
// (see fromLogical). The replaying server reads the option file
// serverDefaults ("" for none) after the backup's options. On any failure
// the target directory is left empty (or absent, if Run made it).
func Run(ctx context.Context, r *repo.Repo, t Target, job restore.Job, serverDefaults string) (res *Result, err error) {
	p, err := plan(ctx, r, t)
	if err != nil {
		return nil, err
	}
	base, needed := p.Base, p.needed
	// A missing or wrong key must fail before the datadir is written,
	// naming what it cannot open.
	if err := checkReadable(ctx, r, needed); err != nil {
		return nil, err
	}
	if job.Progress != nil {
		job.Progress.SetBackup(base.ID)
	}
	if base.Kind == archive.KindLogical {
		return fromLogical(ctx, r, t, job, serverDefaults, base, p.catalog, needed)
	}
	links, err := restore.Links(ctx, r, base)
	if err != nil {
		return nil, err
	}
	for _, l := range links {
		if err := r.CheckReadable(ctx, l.Manifest); err != nil {
			return nil, err
		}
	}
	job.Prepare = true
	if err := restore.CheckFileKey(links, job.Options); err != nil {
		return nil, err
	}
	opts, err := restoredserver.ServerOptions(ctx, r, links, serverDefaults, job.FileKey)
	if err != nil {
		return nil, err
	}
	target, err := restore.Claim(job.TargetDir, base.ID)
	if err != nil {
		return nil, err
	}
	// The replay runs inside the restore, before Finish: a datadir
	// replayed half way is emptied, or keeps the restore's marker if the
	// process dies.
	defer func() {
		if err != nil {
			err = target.Abandon(err)
		}
	}()
	if err := target.Write(ctx, links, job.Options); err != nil {
		return nil, err
	}
	work, paths, err := fetchInto(ctx, r, job.Options, needed)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	workers, err := replay(ctx, work, target.WorkDir(), opts, base, paths, t, job.Options)
	if err != nil {
		return nil, err
	}
	if err := target.Finish(job.Owner); err != nil {
		return nil, err
	}
	return result(base, t, opts, needed, workers), nil
}

// Planned is what a point-in-time restore to a target reads: the backup
// it starts from (with its chain, for an incremental) and the archived
// binary log files it replays, in order.
type Planned struct {
	Base    *archive.Manifest
	Binlogs []Replayed

	needed  []covered
	catalog *logical.Catalog // of a logical base
}

// Replayed is one archived binary log file a point-in-time restore
// replays: archived whole (Whole), or as segments.
type Replayed struct {
	Source, Name string
	Whole        *archive.Manifest
	Segments     []repo.BinlogSegment
}

// Plan chooses, as Run does, the backup and the archived binary logs a
// point-in-time restore of r to t reads, refusing what Run refuses before
// it writes (no base, a gap, a target past the archive), and reads
// nothing else: what verify checks of such a restore.
func Plan(ctx context.Context, r *repo.Repo, t Target) (*Planned, error) {
	return plan(ctx, r, t)
}

func plan(ctx context.Context, r *repo.Repo, t Target) (*Planned, error) {
	ms, err := r.List(ctx)
	if err != nil {
		return nil, err
	}
	catalogs := map[string]*logical.Catalog{}
	base, err := chooseBackup(ms, t, func(m *archive.Manifest) (bool, error) {
		m, err := r.Whole(ctx, m)
		if err != nil {
			return false, err
		}
		cat, err := readCatalog(ctx, r, m)
		if err != nil {
			return false, err
		}
		catalogs[m.ID] = cat
		return cat.Whole, nil
	})
	if err != nil {
		return nil, err
	}
	if base, err = r.Whole(ctx, base); err != nil {
		return nil, err
	}
	files, err := r.Binlogs(ctx)
	if err != nil {
		return nil, err
	}
	needed, err := covering(ctx, r, base, files, t)
	if err != nil {
		return nil, err
	}
	if t.GTID != "" {
		if err := checkGTIDReplay(base.Server.Version, "--until-gtid", "restore with --until and a time instead (the replay then starts at the backup's byte position)"); err != nil {
			return nil, err
		}
	}
	start, err := ParsePosition(base.Positions.GTID)
	if err != nil {
		return nil, fmt.Errorf("backup %s: GTID position %w", base.ID, err)
	}
	if err := checkDomainsNamed(t, start, files, needed); err != nil {
		return nil, err
	}
	p := &Planned{Base: base, needed: needed, catalog: catalogs[base.ID]}
	for _, c := range needed {
		p.Binlogs = append(p.Binlogs, Replayed{Source: c.Source, Name: c.Name, Whole: c.Whole, Segments: c.Segments})
	}
	return p, nil
}

func result(base *archive.Manifest, t Target, opts []mariadb.Option, needed []covered, workers int) *Result {
	res := &Result{Backup: base, Replayed: t.String(), ServerOptions: opts, Workers: workers}
	for _, c := range needed {
		res.Binlogs = append(res.Binlogs, c.Name)
	}
	return res
}

// fetchInto makes a work directory, which the caller removes, and fetches
// the needed binary logs into it, returning their paths.
func fetchInto(ctx context.Context, r *repo.Repo, opt restore.Options, needed []covered) (work string, paths []string, err error) {
	work, err = scratch.MkdirTemp("pitr-*")
	if err != nil {
		return "", nil, err
	}
	if opt.Progress != nil {
		opt.Progress.Stage("fetching binary logs")
	}
	paths, err = fetchBinlogs(ctx, r, needed, filepath.Join(work, "binlogs"), opt.Memory)
	if err != nil {
		os.RemoveAll(work)
		return "", nil, err
	}
	return work, paths, nil
}

// fetchBinlogs reads the archived files needed into dir, within the
// budget mem, and returns their paths, in order.
func fetchBinlogs(ctx context.Context, r *repo.Repo, needed []covered, dir string, mem *archive.Memory) ([]string, error) {
	var paths []string
	for _, c := range needed {
		// Two servers' files may share a name: one directory each.
		sub := filepath.Join(dir, c.Source)
		var err error
		if c.Whole != nil {
			err = fetchWhole(ctx, r, c.Whole, sub, mem)
		} else {
			err = fetchSegments(ctx, r, c.Segments, filepath.Join(sub, c.Name))
		}
		if err == nil && c.From > 0 {
			err = binlog.CutBefore(filepath.Join(sub, c.Name), c.From)
		}
		if err != nil {
			return nil, fmt.Errorf("binary log %s: %w", c.Name, err)
		}
		paths = append(paths, filepath.Join(sub, c.Name))
	}
	return paths, nil
}

// fetchWhole writes the file archived whole as m into dir.
func fetchWhole(ctx context.Context, r *repo.Repo, m *archive.Manifest, dir string, mem *archive.Memory) error {
	w, err := physical.NewDatadirWriter(dir)
	if err != nil {
		return err
	}
	err = archive.Read(ctx, archive.ReadOptions{Input: r.BinlogInput(m), Manifest: m, Sink: w, Memory: mem})
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// fetchSegments joins the segments (a chain from offset 0) into the file
// path, each checked; of a segment that starts before the previous one
// ended, only the bytes after that are new.
func fetchSegments(ctx context.Context, r *repo.Repo, segs []repo.BinlogSegment, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	var at int64
	for _, s := range segs {
		rc, err := r.OpenBinlogSegment(ctx, s)
		if err != nil {
			f.Close()
			return err
		}
		_, err = binlog.ReadSegment(rc, s.Source, s.Name, s.Start, s.End, &skipWriter{w: f, skip: at - s.Start})
		rc.Close()
		if err != nil {
			f.Close()
			return err
		}
		at = s.End
	}
	return f.Close()
}

// skipWriter drops the first skip bytes written to it.
type skipWriter struct {
	w    io.Writer
	skip int64
}

func (s *skipWriter) Write(p []byte) (int, error) {
	n := len(p)
	if s.skip > 0 {
		k := min(s.skip, int64(len(p)))
		p, s.skip = p[k:], s.skip-k
	}
	if _, err := s.w.Write(p); err != nil {
		return 0, err
	}
	return n, nil
}

// chooseBackup picks the newest backup of the target's server, of the
// kind t.Base names (either kind if empty), whose position is before the
// target: finished before the time, or with a GTID position not past the
// target GTIDs in their domains. A logical backup is a base only if whole
// says that it took the whole server (its catalog knows); whole is asked,
// newest first, only of the logical backups in question. A repository
// holding several servers' backups needs the server named: one server's
// binary logs never replay onto another's backup.
func chooseBackup(ms []*archive.Manifest, t Target, whole func(*archive.Manifest) (bool, error)) (*archive.Manifest, error) {
	var usable []*archive.Manifest
	var servers []string
	for _, m := range ms {
		if m.Positions.BinlogFile == "" || (m.Kind != archive.KindPhysical && m.Kind != archive.KindLogical) || (t.Base != "" && m.Kind != t.Base) {
			continue
		}
		if !slices.Contains(servers, sourceOf(m)) {
			servers = append(servers, sourceOf(m))
		}
		if t.Server == "" || sourceOf(m) == t.Server {
			usable = append(usable, m)
		}
	}
	switch {
	case len(servers) == 0:
		return nil, noBase(t)
	case len(usable) == 0:
		return nil, &restore.RefusedError{Err: fmt.Errorf("no %s of server %s with a binary log position; the repository has backups of %s (--server names one as list shows it)", baseNoun(t), t.Server, strings.Join(servers, ", "))}
	case t.Server == "" && len(servers) > 1:
		return nil, &restore.RefusedError{Err: fmt.Errorf("the repository holds backups of several servers (%s): name the one to restore with --server", strings.Join(servers, ", "))}
	}
	var first *archive.Manifest // the oldest base seen
	for i := len(usable) - 1; i >= 0; i-- {
		m := usable[i]
		if m.Kind == archive.KindLogical {
			ok, err := whole(m)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
		}
		first = m
		switch {
		case t.End:
			return m, nil
		case t.GTID != "":
			before, err := gtidNotAfter(m.Positions.GTID, t.GTID)
			if err != nil {
				return nil, err
			}
			if before {
				return m, nil
			}
		case !m.Finished.After(t.Time):
			return m, nil
		}
	}
	if first == nil {
		return nil, noBase(t)
	}
	return nil, fmt.Errorf("%s is before the first usable backup, %s (finished %s UTC, GTID %s)", t, first.ID, first.Finished.UTC().Format(time.DateTime), first.Positions.GTID)
}

// baseNoun names the backups t can start from.
func baseNoun(t Target) string {
	switch t.Base {
	case archive.KindPhysical:
		return "physical backup"
	case archive.KindLogical:
		return "logical backup of the whole server"
	}
	return "backup"
}

// noBase says that the repository has no backup t can start from.
func noBase(t Target) error {
	what := "no physical backup with a binary log position, nor logical backup of the whole server with one,"
	if t.Base != "" {
		what = "no " + baseNoun(t) + " with a binary log position"
	}
	err := fmt.Errorf("%s in the repository: a point-in-time restore starts from one", what)
	if t.Base != archive.KindPhysical {
		// A logical backup limited to some databases, or skipping some
		// kind of object, is not a base: the binary logs touch anything.
		err = fmt.Errorf("%w (a logical backup is one only if it took every database and every kind of object: no --database, --table or --skip-...)", err)
	}
	return err
}

// gtidNotAfter reports whether the position list pos (domain-server-seq,
// comma-separated) is at or before target in each of target's domains.
func gtidNotAfter(pos, target string) (bool, error) {
	want, err := ParseTargetGTIDs(target)
	if err != nil {
		return false, fmt.Errorf("--until-gtid %q: %w", target, err)
	}
	for _, p := range gtid.Entries(pos) {
		if g, ok := want[p.Domain]; ok && p.Seq > g.seq {
			return false, nil
		}
	}
	return true, nil // a domain with no transactions before the backup is not past the target
}

// covered is one binary log file a replay reads: archived whole, or,
// for a file the server was writing when it was last archived, as
// segments joined in order.
type covered struct {
	Source   string // the server's, as binlogs/<source>/ names it
	Name     string
	Whole    *archive.Manifest
	Segments []repo.BinlogSegment // when Whole is nil: the file's bytes from offset 0, in order
	Index    archive.BinlogFile   // what the file holds: Whole's, or the last segment's header
	// From, when not 0, is where the replay of the file starts: the first
	// file of a server that continues another's archive (a link) holds
	// that server's transactions before it, which the file fetched leaves
	// out (all but its format description event).
	From int64
}

// checkReadable opens the header of every file archived whole among
// needed (a segment's is read when covering chooses it), so that a
// missing or wrong key fails before anything is written.
func checkReadable(ctx context.Context, r *repo.Repo, needed []covered) error {
	for _, c := range needed {
		if c.Whole == nil {
			continue
		}
		if err := r.CheckBinlogReadable(ctx, c.Whole); err != nil {
			return err
		}
	}
	return nil
}

// covering is coveringFiles over the repository: the segments and links
// of every server, and the header of a file's last segment read from it. A key
// that cannot open a segment fails here, before anything is written, as
// one that cannot open a whole file does at CheckBinlogReadable.
func covering(ctx context.Context, r *repo.Repo, base *archive.Manifest, files []repo.BinlogEntry, t Target) ([]covered, error) {
	segs, err := r.BinlogSegments(ctx, "") // every server's: a link may lead to another's
	if err != nil {
		return nil, err
	}
	links, err := r.BinlogLinks(ctx)
	if err != nil {
		return nil, err
	}
	needed, err := coveringFiles(base, files, segs, links, t, func(s repo.BinlogSegment) (binlog.Segment, error) {
		rc, err := r.OpenBinlogSegment(ctx, s)
		if err != nil {
			return binlog.Segment{}, err
		}
		defer rc.Close()
		return binlog.ReadSegment(rc, s.Source, s.Name, s.Start, s.End, nil)
	})
	var past *pastEndError
	switch {
	case err == nil && t.End:
		// The end is where the head says the archive reaches, not where the
		// objects listed stop: a lost newest object is refused here.
		_, err := archiveEnd(ctx, r, files, segs, needed[len(needed)-1].Source, t, time.Time{})
		return needed, err
	case errors.As(err, &past) && !past.target.Time.IsZero():
		// Past the newest event, but not past the time the archive was
		// last known complete (binlog --follow caught up): no transaction
		// before the target is missing.
		complete, aerr := archiveEnd(ctx, r, files, segs, past.source, t, past.target.Time)
		switch {
		case aerr != nil:
			return nil, fmt.Errorf("%w; %w", err, aerr)
		case complete:
			return past.needed, nil
		}
		return nil, err
	case err == nil || archive.IsCorrupt(err):
		return needed, err
	}
	// A refusal that a recorded gap explains names it: the gap between
	// two archived files, or one after the backup's file (binlog
	// archives nothing past a gap without --allow-gap).
	gaps, gerr := r.BinlogGaps(ctx)
	if gerr != nil {
		return nil, gerr
	}
	src := binlog.SourceKey(base.Server.Hostname, base.Server.ServerID)
	var ge *gapError
	for i, g := range gaps {
		switch {
		case g.Source != src:
		case errors.As(err, &ge):
			if g.Before == ge.before {
				ge.recorded = &gaps[i]
			}
		case g.Before > base.Positions.BinlogFile:
			return nil, fmt.Errorf("%w; the archive has a gap recorded as %s: %s %s (detected %s UTC, transactions after GTID %s lost)",
				err, g.Object(), g.Missing, g.Reason, g.Detected.UTC().Format(time.DateTime), g.AfterGTID)
		}
	}
	if errors.As(err, &ge) && ge.recorded == nil {
		// binlog records every file it never archives: one missing without
		// a marker was archived, and is lost from the repository.
		return nil, archive.Corruptf("%v: no gap marker records it, so it was archived and is lost from the repository (verify --binlogs names what is missing)", err)
	}
	return needed, err
}

// archiveEnd checks that the archive of src reaches the end its head
// records (damage naming the break otherwise) and reports whether the
// head says the archive was complete at until or later.
func archiveEnd(ctx context.Context, r *repo.Repo, files []repo.BinlogEntry, segs []repo.BinlogSegment, src string, t Target, until time.Time) (complete bool, err error) {
	breaks, err := binlog.Breaks(ctx, r, files, segs)
	if err != nil {
		return false, err
	}
	for _, b := range breaks[src] {
		if b.Tail { // a hole on the way is refused by coveringFiles
			return false, archive.Corruptf("%s cannot be reached: %v", t, b)
		}
	}
	h, err := r.BinlogHeadOf(ctx, src)
	if err != nil {
		return false, err
	}
	return h != nil && !until.IsZero() && !h.CompleteAt.Before(until), nil
}

// gapError is a gap in the numbering of the archived files on the way to
// the target; recorded is the gap marker binlog left for it, if any,
// which says why.
type gapError struct {
	source, before, missing string
	target                  Target
	recorded                *repo.BinlogGap
}

func (e *gapError) Error() string {
	msg := fmt.Sprintf("the archive has a gap before %s: %s not archived, so %s cannot be reached", e.before, e.missing, e.target)
	if g := e.recorded; g != nil {
		msg += fmt.Sprintf(" (gap recorded as %s: %s %s, detected %s UTC, transactions after GTID %s lost)",
			g.Object(), g.Missing, g.Reason, g.Detected.UTC().Format(time.DateTime), g.AfterGTID)
	}
	return msg
}

// lastSegment reads the header of a file's last segment: the time and
// GTID its bytes reach.
type lastSegment func(repo.BinlogSegment) (binlog.Segment, error)

// coveringFiles returns the archived files from the backup's binary log
// file to the first one reaching the target, refusing a gap in the
// numbering or a target past the archive, naming the files. The files the
// archive holds whole come from files; a file it holds only as segments
// (of segs) comes after them, its segments in order, their bytes
// contiguous from the start of the file; the header of the last one, read
// by last, says what it reaches. A file whose manifest is damaged, or
// whose segments have a hole, is damage of this restore only if it is
// among those needed: one that the target is reached before, or of
// another server, does not matter. Where the archive of the backup's
// server ends at the GTID a link of links names (the server failed over
// to another, which continues it), the files go on with the other
// server's, from the link's file and offset, and so on.
func coveringFiles(base *archive.Manifest, files []repo.BinlogEntry, segs []repo.BinlogSegment, links []repo.BinlogLink, t Target, last lastSegment) ([]covered, error) {
	src, from := binlog.SourceKey(base.Server.Hostname, base.Server.ServerID), base.Positions.BinlogFile
	var via *repo.BinlogLink // how the archive came to src, nil for the backup's server
	var needed []covered
	var ix archive.BinlogFile // of the last file needed
	lastGTID := ""            // the last transaction of the files needed
	for {
		mine := sourceFiles(src, from, files, segs)
		if len(mine) == 0 || mine[0].name != from {
			if via != nil {
				return nil, fmt.Errorf("binary log %s of %s, where it continues %s after GTID %s (%s), is not archived (run backstream binlog on %s)", from, src, via.Continues, via.GTID, via.Object(), src)
			}
			return nil, fmt.Errorf("binary log %s of %s, where backup %s stands, is not archived (run backstream binlog)", from, src, base.ID)
		}
		// index is the archive's index of each file, as reachedBy reads it:
		// a whole file's manifest, the last segment's header for the file
		// archived as segments (filled in when it is reached: the file before
		// it then knows no exact end, which refuses rather than replays short).
		index := make([]repo.BinlogEntry, len(mine))
		for i, e := range mine {
			if e.whole != nil {
				index[i] = *e.whole
			}
		}
		first := len(needed)
		for i, e := range mine {
			if i > 0 {
				if gap := binlog.NumberGap(mine[i-1].name, e.name); gap != "" {
					return nil, &gapError{source: src, before: e.name, missing: gap, target: t}
				}
				if prev := needed[first+i-1]; prev.Whole == nil {
					// Its segments end where archiving last stored; the
					// transactions after that are in no object.
					return nil, fmt.Errorf("binary log %s of %s is archived only as segments, up to offset %d, and %s follows it: the rest of it is not archived (run backstream binlog while the server still has it), so %s cannot be reached",
						prev.Name, src, prev.Segments[len(prev.Segments)-1].End, e.name, t)
				}
			}
			if e.whole != nil {
				if e.whole.Damage != nil {
					return nil, fmt.Errorf("%s cannot be reached from backup %s: %w", t, base.ID, e.whole.Damage)
				}
				needed = append(needed, covered{Source: src, Name: e.name, Whole: e.whole.Manifest})
				ix = *e.whole.Manifest.Binlog
			} else {
				chain, _, gap := binlog.Chain(e.segs)
				if gap != "" {
					return nil, archive.Corruptf("%s cannot be reached from backup %s: the segments of binary log %s of %s have a hole: %s are in no segment (under %s/segments/)",
						t, base.ID, e.name, src, gap, repo.BinlogDir(src, e.name))
				}
				h, err := last(chain[len(chain)-1])
				if err != nil {
					return nil, err
				}
				needed = append(needed, covered{Source: src, Name: e.name, Segments: chain})
				ix = h.BinlogFile
			}
			needed[len(needed)-1].Index = ix
			if i == 0 && via != nil {
				needed[len(needed)-1].From = via.Offset
			}
			if ix.LastGTID != "" {
				lastGTID = ix.LastGTID
			}
			if index[i].Manifest == nil {
				index[i] = repo.BinlogEntry{Source: src, Name: e.name, Manifest: &archive.Manifest{Binlog: &ix}}
			}
			if t.reachedBy(index, i) {
				return needed, nil
			}
		}
		// src's archive ends here: a server that took over from it goes on
		// from its last transaction, with nothing lost or replayed twice.
		next := slices.IndexFunc(links, func(l repo.BinlogLink) bool { return l.Continues == src && l.GTID == lastGTID })
		if next < 0 || slices.ContainsFunc(needed, func(c covered) bool { return c.Source == links[next].Source }) {
			break
		}
		via = &links[next]
		src, from = via.Source, via.File
	}
	if t.End {
		return needed, nil
	}
	return nil, &pastEndError{needed: needed, source: src, last: ix, target: t}
}

// pastEndError is a target after the newest archived event of source;
// needed are the files up to it, which reach the target all the same if
// the archive is known complete until then (covering decides).
type pastEndError struct {
	needed []covered
	source string
	last   archive.BinlogFile
	target Target
}

func (e *pastEndError) Error() string {
	return fmt.Sprintf("%s is past the archived binary logs of %s: the last archived file, %s, ends at %s UTC (GTID %s); archive more with backstream binlog",
		e.target, e.source, e.last.Name, e.last.LastTime.Format(time.DateTime), e.last.LastGTID)
}

// sourceFile is one archived file of a source: whole, or as segments.
type sourceFile struct {
	name  string
	whole *repo.BinlogEntry
	segs  []repo.BinlogSegment
}

// sourceFiles lists src's archived files from the file named from on, by
// name: those held whole (of files), then those held only as segments
// (of segs).
func sourceFiles(src, from string, files []repo.BinlogEntry, segs []repo.BinlogSegment) []sourceFile {
	var mine []sourceFile
	isWhole := map[string]bool{}
	for i, e := range files {
		if e.Source == src {
			isWhole[e.Name] = true
			if e.Name >= from {
				mine = append(mine, sourceFile{name: e.Name, whole: &files[i]})
			}
		}
	}
	for _, s := range segs {
		if s.Source != src || isWhole[s.Name] || s.Name < from {
			continue
		}
		if n := len(mine); n > 0 && mine[n-1].whole == nil && mine[n-1].name == s.Name {
			mine[n-1].segs = append(mine[n-1].segs, s)
		} else {
			mine = append(mine, sourceFile{name: s.Name, segs: []repo.BinlogSegment{s}})
		}
	}
	slices.SortStableFunc(mine, func(a, b sourceFile) int { return strings.Compare(a.name, b.name) })
	return mine
}

// replay starts a throwaway server on the restored datadir and replays
// the binary logs files on it (replayOn); then stops it cleanly.
func replay(ctx context.Context, work, datadir string, server []mariadb.Option, base *archive.Manifest, files []string, t Target, opt restore.Options) (workers int, err error) {
	if opt.Progress != nil {
		opt.Progress.Stage("replaying binary logs")
	}
	mariadbd, err := restoredserver.FindServer(ctx, opt.MariadbPath, base.Server.Version)
	if err != nil {
		return 0, err
	}
	binlog, err := findBinlog(ctx, opt.MariadbPath, base.Server.Version)
	if err != nil {
		return 0, err
	}
	route, err := chooseRoute(work, base, files, t, opt)
	if err != nil {
		return 0, err
	}
	srv, account, err := startReplayServer(ctx, restoredserver.Options{Dir: filepath.Join(work, "server"), Datadir: datadir, UseMemory: opt.UseMemory, Server: mariadbd, Options: server, Args: route.args()})
	if err != nil {
		return 0, fmt.Errorf("start a server on the restored datadir: %w", err)
	}
	defer srv.Close()
	if workers, err = route.replay(ctx, work, binlog, srv, account, base, files, t, opt.Log); err != nil {
		return 0, err
	}
	return workers, stopReplay(ctx, srv, account)
}

// replayOn pipes mariadb-binlog's output for the files, from the backup's
// position to the target, into srv, connected as account.
func replayOn(ctx context.Context, work, binlog string, srv *sandbox.Server, account *restoredserver.Account, base *archive.Manifest, files []string, t Target, log io.Writer) error {
	start, _ := ParsePosition(base.Positions.GTID) // Run has read it
	cnf := filepath.Join(work, "client.cnf")
	if err := mariadb.WriteDefaultsFile(cnf, account.Config(srv)); err != nil {
		return err
	}
	var from []string
	if t.GTID != "" && len(start) > 0 {
		from = []string{"--start-position=" + start.String()}
	} else {
		from = []string{fmt.Sprintf("--start-position=%d", base.Positions.BinlogPosition)}
	}
	applied, err := pipeBinlogs(ctx, binlog, cnf, append(from, stopArgs(t)...), files, log)
	if err != nil {
		return err
	}
	return checkReached(t, start, applied)
}

// stopReplay drops the replay's account and stops the server. The account
// existed only for the replay: the grant tables end as the backup and the
// binary logs leave them.
func stopReplay(ctx context.Context, srv *sandbox.Server, account *restoredserver.Account) error {
	if _, err := srv.DB().ExecContext(ctx, "DROP USER "+account.Quoted()); err != nil {
		return fmt.Errorf("drop the replay's temporary account %s: %w", account.Quoted(), err)
	}
	if err := srv.Stop(ctx); err != nil {
		return fmt.Errorf("stop the server after the replay: %w", err)
	}
	return nil
}

// stopArgs are mariadb-binlog's options that end the replay at t.
func stopArgs(t Target) []string {
	switch {
	case t.End:
		return nil
	case t.GTID != "":
		return []string{"--stop-position=" + t.GTID}
	}
	return []string{"--stop-datetime=" + t.Time.UTC().Format(time.DateTime)}
}

// pipeBinlogs pipes mariadb-binlog's output for files, with args, into the
// mariadb client reading the option file cnf (the server and credentials:
// never on argv), and returns the last GTID of each domain it passed on.
func pipeBinlogs(ctx context.Context, binlog, cnf string, args, files []string, log io.Writer) (Position, error) {
	dump := exec.CommandContext(ctx, binlog, append(append([]string{"--no-defaults"}, args...), files...)...)
	dump.Env = childenv.Env("TZ=UTC")
	load := exec.CommandContext(ctx, "mariadb", "--defaults-file="+cnf, "--binary-mode", "--max-allowed-packet=1G")
	load.Env = childenv.Env()
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	seen := &gtidScanner{pos: Position{}}
	dump.Stdout, load.Stdin = io.MultiWriter(pw, seen), pr
	var dumpErr, loadErr strings.Builder
	dump.Stderr, load.Stderr = &dumpErr, &loadErr
	if log != nil {
		load.Stdout = log
	}
	err = load.Start()
	pr.Close() // the client's now: its death must break the pipe
	if err != nil {
		pw.Close()
		return nil, fmt.Errorf("start mariadb: %w", err)
	}
	if err := dump.Start(); err != nil {
		pw.Close()
		load.Process.Kill()
		load.Wait()
		return nil, fmt.Errorf("start mariadb-binlog: %w", err)
	}
	derr := dump.Wait()
	pw.Close()
	lerr := load.Wait()
	// The client first: when it stops on an error, mariadb-binlog dies of
	// the broken pipe, which says nothing.
	switch {
	case lerr != nil:
		return nil, fmt.Errorf("replaying the binary logs failed: %v: %s", lerr, strings.TrimSpace(loadErr.String()))
	case derr != nil:
		return nil, fmt.Errorf("mariadb-binlog failed: %v: %s", derr, strings.TrimSpace(dumpErr.String()))
	}
	return seen.pos, nil
}

// gtidScanner reads mariadb-binlog's output as it passes and keeps the
// GTID of each transaction header ("#<time> server id N ... GTID d-s-q").
// Only the start of a comment line is kept: the lines between can be
// a row event's whole base64 image.
type gtidScanner struct {
	pos     Position
	line    []byte
	midLine bool // inside a line that is not a comment
}

func (g *gtidScanner) Write(p []byte) (int, error) {
	for _, c := range p {
		switch {
		case c == '\n':
			g.header(g.line)
			g.line, g.midLine = g.line[:0], false
		case g.midLine:
		case len(g.line) == 0 && c != '#':
			g.midLine = true
		case len(g.line) < 512:
			g.line = append(g.line, c)
		}
	}
	return len(p), nil
}

func (g *gtidScanner) header(line []byte) {
	_, rest, ok := strings.Cut(string(line), "\tGTID ")
	if !ok {
		return
	}
	id, _, _ := strings.Cut(rest, " ")
	if id, err := gtid.Parse(id); err == nil {
		g.pos[id.Domain] = last{id.Server, id.Seq}
	}
}

// replayArgs are the replaying server's options: a row event of many rows
// is one BINLOG statement, which may be far above the defaults.
var replayArgs = []string{"--max-allowed-packet=1G"}

// startReplayServer starts a server as o says with grants on, as account
// statements (CREATE USER, GRANT, ALTER USER, DROP USER) need: a server
// without them refuses those. It connects as a temporary account that
// the server creates before it accepts connections, and that the caller
// drops after the replay (stopReplay).
func startReplayServer(ctx context.Context, o restoredserver.Options) (*sandbox.Server, *restoredserver.Account, error) {
	acct, err := restoredserver.NewAccount("backstream_replay_")
	if err != nil {
		return nil, nil, err
	}
	o.Account = acct
	srv, err := restoredserver.Start(ctx, o)
	return srv, acct, err
}
