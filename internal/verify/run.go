package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/pitr"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/repo"
)

// Request is one verify, the use case: of a backup (Backup), of what a
// point-in-time restore to Until reads, or of every archived binary log
// (Binlogs).
type Request struct {
	Repo    *repo.Repo
	Backup  *archive.Manifest // the backup to check, with its chain
	Until   *pitr.Target      // set: check the backup and binary logs a restore to it reads
	Binlogs bool              // check the archived binary logs instead
	Subset  Subset            // of a backup, what part of its data to read (zero: all)
	Workers int               // decoding threads (0 means GOMAXPROCS)
	Memory  *archive.Memory   // the budget of what the reads hold at once (nil: archive.DefaultMemory)
	// Progress starts the tracker, given the bytes to read (0 when not
	// known); it is finished here. nil shows none.
	Progress func(total int64) *progress.Tracker
	// NotRecorded is told when the verdict could not be stored in the
	// repository (it may be read-only to this account); nil ignores it.
	NotRecorded func(error)
}

// Result is what a verify checked, all of it good.
type Result struct {
	Backup   *archive.Manifest   // the backup checked (for Until, the one the restore starts from)
	Chain    []*archive.Manifest // the backups below it, base first
	Until    *pitr.Target
	Binlogs  bool
	Files    int // binary log files checked (with Until or Binlogs)
	Segments int // segments of binary logs being archived (with Binlogs)
	// Subset, when set, is the part read of the backup and its chain
	// (what Sampled counts): no verdict on the rest.
	Subset  Subset
	Sampled Sampled
}

// Run checks what req asks for. A backup's checksums verdict (and that of
// the chain it builds on) is recorded in the repository, so that check
// and list report it; damage is reported as corruption (archive.IsCorrupt).
func Run(ctx context.Context, req Request) (*Result, error) {
	switch {
	case req.Binlogs:
		return binlogs(ctx, req)
	case req.Until != nil:
		return until(ctx, req)
	}
	links, err := req.Repo.Chain(ctx, req.Backup)
	if err != nil {
		// A link damaged past reading (its manifest, or the contents
		// stored apart from it) makes the backup unrestorable: recorded,
		// so that check and list say so too.
		req.record(ctx, nil, err)
		return nil, err
	}
	stored := req.Backup.Stats.StoredBytes
	for _, l := range links {
		stored += l.Stats.StoredBytes
	}
	if !req.Subset.All() {
		stored = 0 // not known before the files are chosen
	}
	res := &Result{Backup: req.Backup, Subset: req.Subset}
	t := req.start(stored, req.Backup.ID)
	links, err = Restorable(ctx, req.Repo, req.Backup, Reading{Read: req.reading(t), Subset: req.Subset, Sampled: &res.Sampled})
	t.Finish(err)
	req.record(ctx, links, err)
	if err != nil {
		return nil, err
	}
	res.Chain = links
	return res, nil
}

// until checks what a point-in-time restore to req.Until reads: the
// backup it starts from, with its chain, and the binary logs it replays.
func until(ctx context.Context, req Request) (*Result, error) {
	p, err := pitr.Plan(ctx, req.Repo, *req.Until)
	if err != nil {
		return nil, err
	}
	req.Backup = p.Base
	t := req.start(0, p.Base.ID)
	links, err := Restorable(ctx, req.Repo, p.Base, Reading{Read: req.reading(t)})
	req.record(ctx, links, err)
	for i := 0; err == nil && i < len(p.Binlogs); i++ {
		b := p.Binlogs[i]
		err = BinlogFile(ctx, req.Repo, b.Whole, b.Segments, req.reading(t))
	}
	t.Finish(err)
	if err != nil {
		return nil, fmt.Errorf("the point-in-time restore to %s (from backup %s) cannot be done: %w", req.Until, p.Base.ID, err)
	}
	return &Result{Backup: p.Base, Chain: links, Until: req.Until, Files: len(p.Binlogs)}, nil
}

// binlogs checks every archived binary log (see Binlogs).
func binlogs(ctx context.Context, req Request) (*Result, error) {
	t := req.start(0, "")
	files, segments, err := Binlogs(ctx, req.Repo, req.reading(t))
	t.Finish(err)
	if err != nil {
		return nil, err
	}
	return &Result{Binlogs: true, Files: files, Segments: segments}, nil
}

// reading is how req's reads go, counted by t.
func (req Request) reading(t *progress.Tracker) archive.ReadOptions {
	return archive.ReadOptions{Workers: req.Workers, Counter: t, Memory: req.Memory}
}

func (req Request) start(total int64, backup string) *progress.Tracker {
	var t *progress.Tracker
	if req.Progress != nil {
		t = req.Progress(total)
	} else {
		t = progress.Start(progress.Options{Mode: progress.ModeQuiet, Out: io.Discard, Total: total})
	}
	if backup != "" {
		t.SetBackup(backup)
	}
	return t
}

// record stores what a verify of req.Backup (with its chain links) found:
// every backup checked passed, or the one found damaged did not. A verify
// that could not run (not damage), or read only a subset and found none,
// records nothing.
func (req Request) record(ctx context.Context, links []*archive.Manifest, err error) {
	if err == nil && !req.Subset.All() {
		return
	}
	now := time.Now().UTC()
	record := func(id string, o repo.Outcome) {
		if werr := req.Repo.RecordVerdict(ctx, id, &o, nil); werr != nil && req.NotRecorded != nil {
			req.NotRecorded(werr)
		}
	}
	var link *LinkError
	switch {
	case err == nil:
		for _, l := range append(links, req.Backup) {
			record(l.ID, repo.Outcome{At: now, OK: true})
		}
	case errors.As(err, &link) && archive.IsCorrupt(link.Err):
		record(link.Link, repo.Outcome{At: now, Error: OneLine(link.Err)})
	case archive.IsCorrupt(err):
		record(req.Backup.ID, repo.Outcome{At: now, Error: OneLine(err)})
	}
}

// OneLine is err's message on one line, as a verdict records it.
func OneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }

// WriteText writes the result as verify prints it: one line.
func (r *Result) WriteText(w io.Writer) {
	switch {
	case r.Binlogs:
		fmt.Fprintf(w, "binary logs: OK (%d files, %d segments, every checksum matches)\n", r.Files, r.Segments)
		return
	case r.Until != nil:
		fmt.Fprintf(w, "point-in-time restore to %s: OK (backup %s, %d backups below it, %d binary log files, every checksum matches)\n",
			r.Until, r.Backup.ID, len(r.Chain), r.Files)
		return
	}
	m := r.Backup
	streams, files := len(m.Streams), len(m.Files)
	chain := ""
	if len(r.Chain) > 0 {
		ids := make([]string, len(r.Chain))
		for i, l := range r.Chain {
			ids[i] = l.ID
			streams, files = streams+len(l.Streams), files+len(l.Files)
		}
		chain = fmt.Sprintf("with its chain %s: ", strings.Join(ids, ", "))
	}
	if !r.Subset.All() {
		fmt.Fprintf(w, "backup %s: the subset read is OK (%s%s: %d of %d files, %d of %d bytes; every checksum of what was read matches, the rest was not read)\n",
			m.ID, chain, r.Subset, r.Sampled.Files, r.Sampled.OfFiles, r.Sampled.Bytes, r.Sampled.OfBytes)
		return
	}
	fmt.Fprintf(w, "backup %s: OK (%s%d streams, %d files, every checksum matches)\n", m.ID, chain, streams, files)
}
