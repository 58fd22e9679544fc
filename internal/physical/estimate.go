package physical

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/xbstream"
)

// The progress of a physical backup is counted in bytes of the server's
// files that mariabackup has copied, against the sum of the sizes of the
// files it will copy. Summing the whole datadir counted what mariabackup
// never streams (the redo log files, ibtmp1, binary and relay logs, the
// buffer pool dump) and bars ended at 26-71%. The redo log it does stream,
// from the checkpoint on, grows as the backup runs: it counts toward the
// total as it arrives, as does anything else the estimate did not name.

// copyExtensions are the files of non-InnoDB tables, and the database
// options, that mariabackup copies from each database directory
// (datafile_copy_backup's list).
var copyExtensions = []string{".frm", ".isl", ".MYD", ".MYI", ".MAD", ".MAI",
	".MRG", ".TRG", ".TRN", ".ARM", ".ARZ", ".CSM", ".CSV", ".opt", ".par"}

var (
	undoName    = regexp.MustCompile(`^undo\d{3}$`)
	ariaLogName = regexp.MustCompile(`^aria_log(_control|\.\d{8})$`)
)

// estimateCopy returns the files a full backup of server will stream,
// by their path in the stream, with their current sizes: the InnoDB
// system and undo tablespaces, the tablespaces of tables (a DATA
// DIRECTORY table's at the path its .isl gives), the Aria logs, and the
// files of non-InnoDB tables. What cannot be read is left out: an
// estimate must not fail a backup.
func estimateCopy(server *mariadb.Server) map[string]int64 {
	files := map[string]int64{}
	add := func(name, path string) {
		if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
			files[name] = fi.Size()
		}
	}
	datadir := server.Datadir
	in := func(dir string) string {
		if dir == "" || dir == "." || dir == "./" {
			return datadir
		}
		if !filepath.IsAbs(dir) {
			return filepath.Join(datadir, dir)
		}
		return dir
	}
	// innodb_data_file_path names the system tablespace's files; they are
	// ibdata1 and on unless a server chose otherwise (those are counted
	// as they arrive).
	sys := in(server.InnodbDataHomeDir)
	if names, err := os.ReadDir(sys); err == nil {
		for _, e := range names {
			if strings.HasPrefix(e.Name(), "ibdata") {
				add(e.Name(), filepath.Join(sys, e.Name()))
			}
		}
	}
	undo := in(server.InnodbUndoDirectory)
	if names, err := os.ReadDir(undo); err == nil {
		for _, e := range names {
			if undoName.MatchString(e.Name()) {
				add(e.Name(), filepath.Join(undo, e.Name()))
			}
		}
	}
	top, err := os.ReadDir(datadir)
	if err != nil {
		return files
	}
	for _, e := range top {
		if ariaLogName.MatchString(e.Name()) {
			add(e.Name(), filepath.Join(datadir, e.Name()))
		}
		if !e.IsDir() {
			continue
		}
		db := e.Name()
		names, err := os.ReadDir(filepath.Join(datadir, db))
		if err != nil {
			continue
		}
		for _, f := range names {
			name := f.Name()
			path := filepath.Join(datadir, db, name)
			ext := filepath.Ext(name)
			switch {
			case ext == ".ibd":
				add(db+"/"+name, path)
			case ext == ".isl":
				add(db+"/"+name, path)
				// The tablespace lives where the link says, and is
				// streamed as if it were beside it.
				if b, err := os.ReadFile(path); err == nil {
					if target := strings.TrimSpace(string(b)); filepath.IsAbs(target) {
						add(db+"/"+strings.TrimSuffix(name, ext)+".ibd", target)
					}
				}
			case slices.Contains(copyExtensions, ext):
				add(db+"/"+name, path)
			}
		}
	}
	return files
}

// copyCounter turns the chunks of mariabackup's stream into progress in
// bytes of the server's files, against the estimate of what it copies.
// A file it streams as a whole counts its bytes as they arrive; a file an
// incremental backup streams as a .delta (the pages changed since the
// parent, found by reading them all) counts up to its size as its delta
// arrives, and its size when the delta ends. A file the estimate did not
// name, or one that grew, adds what arrives to the total too; one that
// ended shorter takes what it fell short of from the total. So the total
// is never less than what came in, and a backup whose estimate was exact
// ends at 100%. Only the goroutine reading the stream uses it.
type copyCounter struct {
	p Progress
	// estimate holds the sizes of the files not yet seen in the stream.
	estimate map[string]int64
	files    map[string]*copied
	total    int64
	// unknown: the estimate named nothing (the datadir could not be read),
	// and a total of what came in would say 100% all along.
	unknown bool
}

// copied is one file's part in the counts.
type copied struct {
	size     int64 // estimated; -1 when the estimate did not name it
	streamed int64
	delta    bool
	ended    bool
}

// counts is what the file adds to the bytes in and to the total.
func (c *copied) counts() (in, total int64) {
	switch {
	case c.size < 0:
		return c.streamed, c.streamed
	case c.delta && c.ended:
		return c.size, c.size
	case c.delta:
		return min(c.streamed, c.size), c.size
	case c.ended:
		return c.streamed, c.streamed
	default:
		return c.streamed, max(c.size, c.streamed)
	}
}

// newCopyCounter starts counting against estimate, which it takes over,
// and sets p's total to it; nil when p is.
func newCopyCounter(p Progress, estimate map[string]int64) *copyCounter {
	if p == nil {
		return nil
	}
	c := &copyCounter{p: p, files: map[string]*copied{}, estimate: estimate, unknown: len(estimate) == 0}
	for _, n := range estimate {
		c.total += n
	}
	p.SetTotal(c.total)
	return c
}

// chunk counts one chunk of the stream.
func (c *copyCounter) chunk(ch *xbstream.Chunk) {
	if c == nil || ch.Type != xbstream.TypePayload && ch.Type != xbstream.TypeEOF {
		return
	}
	name := strings.TrimPrefix(ch.Path, "./")
	f := c.files[name]
	if f == nil {
		f = &copied{size: -1}
		base, delta := strings.CutSuffix(name, ".delta")
		if table, ok := strings.CutSuffix(base, ".new"); ok {
			// A tablespace created since the redo log's checkpoint is
			// copied under the name it gets at prepare.
			base = table + ".ibd"
		}
		if size, ok := c.estimate[base]; ok {
			// Its share of the total is this file's now.
			f.size, f.delta = size, delta
			delete(c.estimate, base)
		}
		c.files[name] = f
	}
	in0, total0 := f.counts()
	if ch.Type == xbstream.TypeEOF {
		f.ended = true
	} else {
		// A file streamed again (a second pass under the backup lock)
		// counts again: it was read again.
		f.streamed += int64(len(ch.Payload))
	}
	in1, total1 := f.counts()
	if total1 != total0 {
		c.total += total1 - total0
		if !c.unknown {
			c.p.SetTotal(c.total)
		}
	}
	if in1 != in0 {
		c.p.In(in1 - in0)
	}
}

// inUncounted is a Progress whose In does nothing: the archive writer,
// which counts the stream's bytes, reports only what it writes, and the
// copyCounter the bytes in.
type inUncounted struct{ Progress }

func (inUncounted) In(int64) {}
