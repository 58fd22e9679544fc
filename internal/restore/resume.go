package restore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/durable"
	"github.com/backstream/backstream/internal/physical"
	"github.com/backstream/backstream/internal/xbstream"
)

// A restore into a directory keeps a journal beside its marker: which
// backups it restores (each link's id and manifest checksum), and each
// file it has written, found equal to the backup's record of it
// (archive.ReadOptions.Verified) and, unless the restore was told NoSync,
// synced to disk. A restore that was killed, or interrupted, is continued
// with Job.Resume (restore --resume): the files the journal names are
// kept and neither fetched nor written again; everything else the
// interrupted restore wrote is removed and restored anew.
//
// The journal is only appended to, one record per line: the CRC-32C of
// the record (8 hex digits), a space, the record as JSON. A line cut
// short by a crash (no newline) is ignored; any other damage refuses the
// resume. The first record says what is restored; then "done" records
// name a link's file, and a "prepare" record says that mariabackup began
// to change a link's files: from then on they are not the backup's, and a
// resume starts over.
const journalName = ".backstream-restoring.journal"

// journalVersion is the version of the journal's records.
const journalVersion = 1

// journalFlushEvery is how often the journal records the files verified
// since it last did (syncing them first): a kill loses at most this much
// of the work done; journalFlushFiles flushes sooner when that many wait.
const (
	journalFlushEvery = time.Second
	journalFlushFiles = 1024
)

// journalLink is one backup a journaled restore writes.
type journalLink struct {
	ID       string `json:"id"`
	Checksum string `json:"checksum"` // the manifest's (archive.Manifest.Checksum)
	Stored   int64  `json:"stored"`   // its stored bytes, for manifests without a checksum
}

// journalRecord is one line of the journal.
type journalRecord struct {
	T       string        `json:"t"` // "restore", "done", "prepare"
	Version int           `json:"version,omitempty"`
	Links   []journalLink `json:"links,omitempty"`
	// Boot is the kernel's boot id when the restore began; Synced says
	// whether the done files were synced before they were recorded. A
	// journal of a restore that did not sync is trusted only within the
	// boot that wrote it: the page cache held its files.
	Boot   string `json:"boot,omitempty"`
	Synced bool   `json:"synced,omitempty"`
	Link   int    `json:"link,omitempty"`
	Path   string `json:"path,omitempty"`
}

// journalState is what a journal says.
type journalState struct {
	links    []journalLink
	boot     string
	synced   bool
	done     []map[string]bool // per link, the files done
	prepared bool
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendRecord appends r to b as a journal line.
func appendRecord(b []byte, r journalRecord) []byte {
	j, err := json.Marshal(r)
	if err != nil {
		panic(err) // strings and numbers only
	}
	b = fmt.Appendf(b, "%08x ", crc32.Checksum(j, castagnoli))
	b = append(b, j...)
	return append(b, '\n')
}

// parseJournal reads a journal. A last line without its newline was cut
// short by a crash and is ignored.
func parseJournal(data []byte) (*journalState, error) {
	lines := bytes.Split(data, []byte{'\n'})
	lines = lines[:len(lines)-1] // after the last newline: empty, or a torn line
	var st *journalState
	for i, line := range lines {
		n := i + 1
		if len(line) < 10 || line[8] != ' ' {
			return nil, fmt.Errorf("line %d is damaged", n)
		}
		sum, err := strconv.ParseUint(string(line[:8]), 16, 32)
		if err != nil || uint32(sum) != crc32.Checksum(line[9:], castagnoli) {
			return nil, fmt.Errorf("line %d is damaged (checksum)", n)
		}
		var r journalRecord
		dec := json.NewDecoder(bytes.NewReader(line[9:]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		if st == nil {
			if r.T != "restore" || r.Version != journalVersion || len(r.Links) == 0 {
				return nil, fmt.Errorf("line %d: not the journal of a restore (version %d)", n, journalVersion)
			}
			st = &journalState{links: r.Links, boot: r.Boot, synced: r.Synced, done: make([]map[string]bool, len(r.Links))}
			for k := range st.done {
				st.done[k] = map[string]bool{}
			}
			continue
		}
		if r.Link < 0 || r.Link >= len(st.links) {
			return nil, fmt.Errorf("line %d: link %d of %d", n, r.Link, len(st.links))
		}
		switch r.T {
		case "done":
			if !journalPath(r.Path) {
				return nil, fmt.Errorf("line %d: bad path %q", n, r.Path)
			}
			st.done[r.Link][r.Path] = true
		case "prepare":
			st.prepared = true
		default:
			return nil, fmt.Errorf("line %d: unknown record %q", n, r.T)
		}
	}
	if st == nil {
		return nil, errors.New("it is empty")
	}
	return st, nil
}

// journalPath reports whether p is a path a journal may name: relative,
// clean, without "..".
func journalPath(p string) bool {
	return p != "" && !strings.HasPrefix(p, "/") && path.Clean(p) == p && p != "." &&
		p != ".." && !strings.HasPrefix(p, "../") && strings.IndexByte(p, 0) < 0
}

// linksOf describes links as a journal records them.
func linksOf(links []Link) []journalLink {
	out := make([]journalLink, len(links))
	for i, l := range links {
		out[i] = journalLink{ID: l.Manifest.ID, Checksum: l.Manifest.Checksum, Stored: l.Manifest.Stats.StoredBytes}
	}
	return out
}

// bootID is the kernel's id of the running boot ("" if unknown: then a
// journal that did not sync is never trusted).
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// journal appends to a restore's journal. Verified queues a file; a
// goroutine syncs the queued files (unless the restore does not sync)
// and records them every journalFlushEvery.
type journal struct {
	f      *os.File
	synced bool
	roots  []string // each link's directory

	mu      sync.Mutex
	pending []journalRecord
	err     error // the first failure: nothing is recorded after it

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

// createJournal writes a new journal for links into t's directory,
// replacing any (atomically: a crash leaves the old one or the new),
// recording the files kept of each link (a resume's; nil for a new
// restore) as done: when synced, only after syncing their file system,
// since a resumed restore that syncs may keep files an earlier one left in
// the page cache.
func createJournal(t *Target, links []Link, synced bool, kept []map[string]bool) (*os.File, error) {
	fail := func(err error) (*os.File, error) { return nil, fmt.Errorf("the restore's journal: %w", err) }
	dirs := linkDirs(t, links)
	b := appendRecord(nil, journalRecord{T: "restore", Version: journalVersion, Links: linksOf(links), Boot: bootID(), Synced: synced})
	for i, done := range kept {
		for p := range done {
			b = appendRecord(b, journalRecord{T: "done", Link: i, Path: p})
		}
		if synced && len(done) > 0 {
			if err := durable.FS(dirs[i]); err != nil {
				return fail(err)
			}
		}
	}
	tmp := filepath.Join(t.dir, journalName+".new")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, physical.FileMode)
	if err != nil {
		return fail(err)
	}
	if _, err = f.Write(b); err == nil && synced {
		err = f.Sync()
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(t.dir, journalName))
	}
	if err == nil && synced {
		err = durable.Dirs(t.dir)
	}
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return fail(err)
	}
	return f, nil
}

// startJournal begins recording into f the files of the links written
// under roots.
func startJournal(f *os.File, roots []string, synced bool) *journal {
	j := &journal{f: f, synced: synced, roots: roots, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go j.run()
	return j
}

// verified queues link's file p, written and found equal to the backup's.
func (j *journal) verified(link int, p string) {
	j.mu.Lock()
	j.pending = append(j.pending, journalRecord{T: "done", Link: link, Path: p})
	n := len(j.pending)
	j.mu.Unlock()
	if n >= journalFlushFiles {
		select {
		case j.kick <- struct{}{}:
		default:
		}
	}
}

func (j *journal) run() {
	defer close(j.done)
	tick := time.NewTicker(journalFlushEvery)
	defer tick.Stop()
	for {
		select {
		case <-j.stop:
			return
		case <-tick.C:
		case <-j.kick:
		}
		j.flush()
	}
}

// flush syncs the queued files and records them. A failure stops the
// recording (the restore goes on; a resume redoes what was not recorded)
// and is kept for close.
func (j *journal) flush() {
	j.mu.Lock()
	batch := j.pending
	j.pending = nil
	failed := j.err != nil
	j.mu.Unlock()
	if len(batch) == 0 || failed {
		return
	}
	err := j.record(batch)
	if err != nil {
		j.mu.Lock()
		j.err = err
		j.mu.Unlock()
	}
}

// record syncs the batch's files and records them: the file system of
// each link's directory is synced once (durable.FS), the files and the
// directories made for them with it. A file the restore has moved away
// since it was written (an .isl taken out of a link's directory, a
// tablespace placed elsewhere) is not recorded: a resume restores it
// again.
func (j *journal) record(batch []journalRecord) error {
	kept := batch[:0]
	roots := make([]bool, len(j.roots))
	for _, r := range batch {
		if _, err := os.Lstat(filepath.Join(j.roots[r.Link], filepath.FromSlash(r.Path))); err != nil {
			continue
		}
		kept = append(kept, r)
		roots[r.Link] = true
	}
	batch = kept
	if j.synced {
		for i, has := range roots {
			if has {
				if err := durable.FS(j.roots[i]); err != nil {
					return err
				}
			}
		}
	}
	var b []byte
	for _, r := range batch {
		b = appendRecord(b, r)
	}
	if _, err := j.f.Write(b); err != nil {
		return err
	}
	if j.synced {
		return j.f.Sync()
	}
	return nil
}

// preparing records, synced, that mariabackup is about to change link's
// files: a resume from then on starts over. Whatever is queued is
// dropped: it is about to change.
func (j *journal) preparing(link int) error {
	j.mu.Lock()
	j.pending = nil
	j.mu.Unlock()
	if _, err := j.f.Write(appendRecord(nil, journalRecord{T: "prepare", Link: link})); err != nil {
		return fmt.Errorf("the restore's journal: %w", err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("the restore's journal: %w", err)
	}
	return nil
}

// close stops the recording, first recording what is queued (also when
// the restore failed: an interrupted one is resumed from it). It returns
// the first failure to record.
func (j *journal) close() error {
	close(j.stop)
	<-j.done
	j.flush()
	err := j.f.Close()
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return fmt.Errorf("the restore's journal: %w", j.err)
	}
	return err
}

// Reclaim takes over dir to continue the restore of links that was
// interrupted there (restore --resume): dir must hold such a restore's
// marker and journal, of the same backups. The files the journal records
// as done are kept (those whose size no longer matches the backup's are
// not); every other file the interrupted restore wrote is removed, to be
// restored again. A restore whose prepare had begun, or that did not sync
// and whose machine has rebooted since, starts over (said through logf). A dir
// that is empty or absent is claimed as Claim does: there is nothing to
// continue.
func Reclaim(dir string, links []Link, logf func(format string, args ...any)) (*Target, error) {
	if len(links) == 0 {
		return nil, errors.New("nothing to restore")
	}
	id := links[len(links)-1].Manifest.ID
	target, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(target, markerName)); errors.Is(err, fs.ErrNotExist) {
		return Claim(dir, id)
	}
	t := &Target{dir: target, work: filepath.Join(target, workName)}
	what, _ := os.ReadFile(filepath.Join(target, markerName))
	mark := fmt.Sprintf("backup %s, resumed %s by pid %d", id, time.Now().UTC().Format(time.DateTime), os.Getpid())
	if t.marker, err = lockMarker(filepath.Join(target, markerName), ""); err != nil {
		if errors.Is(err, errRestoring) {
			return nil, &RefusedError{Err: fmt.Errorf("target %s: a restore is still running there (%s); --resume continues only one that was killed or interrupted", target, strings.TrimSpace(string(what)))}
		}
		return nil, fmt.Errorf("target %s: %w", target, err)
	}
	ok := false
	defer func() {
		if !ok {
			t.unlock()
		}
	}()
	refuse := func(format string, a ...any) (*Target, error) {
		return nil, &RefusedError{Err: fmt.Errorf("target %s holds an interrupted restore that --resume cannot continue: "+format+"; empty the directory and restore again", append([]any{target}, a...)...)}
	}
	data, err := os.ReadFile(filepath.Join(target, journalName))
	if errors.Is(err, fs.ErrNotExist) {
		return refuse("it has no journal (a backstream older than --resume for directories began it, or it was killed while finishing)")
	}
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", target, err)
	}
	st, err := parseJournal(data)
	if err != nil {
		return refuse("its journal %s is damaged: %v", filepath.Join(target, journalName), err)
	}
	want := linksOf(links)
	if !slices.Equal(st.links, want) {
		return refuse("it restores %s, not %s (the backup, or its chain, is not the one the interrupted restore began)", describeLinks(st.links), describeLinks(want))
	}
	dirs := linkDirs(t, links)
	startOver := ""
	switch {
	case st.prepared:
		startOver = "mariabackup had begun to prepare it, which changes the files"
	case !st.synced && (st.boot == "" || st.boot != bootID()):
		startOver = "it did not sync (--no-sync) and the machine has restarted since, so what it wrote may be lost"
	}
	if startOver != "" {
		logf("the interrupted restore in %s starts over: %s", target, startOver)
		for k := range st.done {
			st.done[k] = map[string]bool{}
		}
	}
	for i, d := range dirs {
		if err := keepOnly(d, st.done[i], links[i].Manifest); err != nil {
			return nil, fmt.Errorf("target %s: %w", target, err)
		}
	}
	if err := os.MkdirAll(t.work, physical.DirMode); err != nil {
		return nil, fmt.Errorf("target %s: %w", target, err)
	}
	t.resumed = st
	kept := 0
	for _, d := range st.done {
		kept += len(d)
	}
	if startOver == "" {
		logf("continuing the interrupted restore in %s: %d files kept", target, kept)
	}
	if err := rewriteMarker(t.marker, mark); err != nil {
		return nil, fmt.Errorf("target %s: %w", target, err)
	}
	ok = true
	return t, nil
}

func describeLinks(ls []journalLink) string {
	ids := make([]string, len(ls))
	for i, l := range ls {
		ids[i] = l.ID
	}
	if len(ids) == 1 {
		return "backup " + ids[0]
	}
	return "the chain " + strings.Join(ids, ", ")
}

// linkDirs are the directories the links of a restore into t are
// written in: the base into the work directory, each increment into one
// beside the target.
func linkDirs(t *Target, links []Link) []string {
	dirs := make([]string, len(links))
	for i, l := range links {
		dirs[i] = t.work
		if i > 0 {
			dirs[i] = t.dir + ".increment-" + l.Manifest.ID
		}
	}
	return dirs
}

// keepOnly removes from dir (if it exists) every file done does not name
// and, from done, every file not there with the size m records.
func keepOnly(dir string, done map[string]bool, m *archive.Manifest) error {
	sizes := make(map[string]int64, len(m.Files))
	for _, f := range m.Files {
		sizes[f.Path] = f.Size
	}
	found := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == dir {
			return fs.SkipAll
		}
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if done[rel] && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil && fi.Size() == sizes[rel] {
				found[rel] = true
				return nil
			}
		}
		return os.Remove(p)
	})
	if err != nil {
		return err
	}
	for p := range done {
		if !found[p] {
			delete(done, p)
		}
	}
	return nil
}

// skipDone is a sink that passes on every chunk but those of the files a
// resumed restore kept: a stream read whole delivers them too.
type skipDone struct {
	archive.Sink
	done map[string]bool
}

func (s skipDone) Chunk(c *xbstream.Chunk) error {
	if s.done[c.Path] || (c.Type == xbstream.TypeRename && s.done[c.NewPath]) {
		if c.Type == xbstream.TypeRemove || c.Type == xbstream.TypeRename {
			// Never in a stream whose files can be done (see
			// archive.ReadOptions.Verified): the journal is wrong.
			return fmt.Errorf("resume: the stream removes or renames %s, which the journal says is restored", c.Path)
		}
		return nil
	}
	return s.Sink.Chunk(c)
}
