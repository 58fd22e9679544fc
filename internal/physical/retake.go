package physical

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/scratch"
	"github.com/backstream/backstream/internal/xbstream"
)

// retake is the files of the tables that DDL touched during the copy
// and that mariabackup copies as files (every engine but InnoDB, and a
// table whose engine changed to or from InnoDB), read again while
// mariabackup holds BACKUP STAGE BLOCK_COMMIT, when no DDL runs and no
// such table is written: they are then those tables as they stand at the
// backup's position. mariabackup's own repair of that DDL is not always
// right (docs/architecture.md, "DDL during a physical backup"), so the
// retaken files reach the end of the stream in place of whatever
// mariabackup streamed for those tables. A database's own DDL is not
// retaken; it stays refused (see checkCopy).
type retake struct {
	datadir  string
	launched time.Time // when mariabackup started: the DDL log is this backup's if newer

	dir    string                               // a scratch directory holding the copies, "" before take
	owners map[[2]string]func(name string) bool // db, table ("" for the database's own DDL): which of db's files it takes
	gone   []string                             // databases dropped by the DDL
	files  []retakenFile                        // what they had at BLOCK_COMMIT
	taken  map[string]bool                      // their paths
	bytes  int64                                // their size
}

// retakenFile is one file of a retaken table: its datadir path (db/file)
// and its copy's name in the scratch directory.
type retakenFile struct {
	path, copy string
	size       int64
}

// innodbSuffixes are the extensions of the files InnoDB, and
// mariabackup's following of InnoDB DDL, keep beside a table's .frm:
// mariabackup answers for those.
var innodbSuffixes = []string{"ibd", "isl", "cfg", "new", "delta", "meta", "del", "ren", "crypt"}

// ownFile reports whether name, a file of a database directory, belongs
// to table (both in the server's file name encoding) and is a file
// mariabackup copies as a file: the table's .frm and its engine's data
// files, of each partition too (t#P#p0.MAD). A name's only '.' is its
// extension's: the encoding writes any other as @002e.
func ownFile(name, table string) bool {
	base, ok := copiedAsFile(name)
	if !ok {
		return false
	}
	if base == table {
		return true
	}
	rest, ok := strings.CutPrefix(base, table)
	return ok && len(rest) > 3 && strings.EqualFold(rest[:3], "#P#")
}

// take copies the files of every table the server's DDL log names, and
// of every table whose data files changed since the backup began, as
// they are now. It runs while mariabackup is stopped holding
// BLOCK_COMMIT. The second set is for what the DDL log misses: a
// TRUNCATE of a MyISAM table is not in it, and mariabackup copies Aria
// tables, and MyISAM tables not in use, before BLOCK_DDL; such a table
// truncated after its copy came back with its rows from before (found by
// TestPhysicalBackupRacingNonTransactionalDDL).
func (r *retake) take() error {
	data, err := ddlLog(r.datadir, r.launched)
	if err != nil {
		return err
	}
	r.owners = map[[2]string]func(name string) bool{}
	r.taken = map[string]bool{}
	for _, e := range parseDDLLog(data) {
		owner := func(name string) bool { return ownFile(name, e.Table) }
		if e.Table == "" {
			owner = databaseOwner(e)
		}
		gone, err := r.takeFiles(e.DB, owner)
		if err != nil {
			return fmt.Errorf("retaking %s: %w", e, err)
		}
		if gone && e.Table == "" {
			r.gone = append(r.gone, e.DB)
		}
		r.owners[[2]string{e.DB, e.Table}] = owner
	}
	changed, err := changedTables(r.datadir, r.launched.Add(-time.Second))
	if err != nil {
		return err
	}
	for _, k := range changed {
		if _, ok := r.owners[k]; ok {
			continue
		}
		owner := func(name string) bool { return ownFile(name, k[1]) }
		if _, err := r.takeFiles(k[0], owner); err != nil {
			return fmt.Errorf("retaking %s.%s: %w", k[0], k[1], err)
		}
		r.owners[k] = owner
	}
	return nil
}

// changedTables lists the tables of the datadir (db, table, in the
// server's file name encoding) whose data files, other than InnoDB's, were
// written at or after since. The server's log tables are left out:
// mariabackup copies them itself under BLOCK_COMMIT.
func changedTables(datadir string, since time.Time) ([][2]string, error) {
	dbs, err := os.ReadDir(datadir)
	if err != nil {
		return nil, fmt.Errorf("retaking changed tables: %w", err)
	}
	var out [][2]string
	for _, d := range dbs {
		if !d.IsDir() || strings.HasPrefix(d.Name(), "#") || d.Name() == "lost+found" {
			continue
		}
		files, err := os.ReadDir(filepath.Join(datadir, d.Name()))
		if err != nil {
			return nil, fmt.Errorf("retaking changed tables: %w", err)
		}
		for _, f := range files {
			base, ok := copiedAsFile(f.Name())
			ext := strings.ToLower(path.Ext(f.Name()))
			if !ok || !f.Type().IsRegular() || ext == ".frm" || ext == ".opt" || strings.HasPrefix(base, "#sql") {
				continue
			}
			k := [2]string{d.Name(), tableOfBase(base)}
			if k[0] == "mysql" && (k[1] == "general_log" || k[1] == "slow_log") || slices.Contains(out, k) {
				continue
			}
			info, err := f.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("retaking changed tables: %w", err)
			}
			if !info.ModTime().Before(since) {
				out = append(out, k)
			}
		}
	}
	return out, nil
}

// tableOfBase is the table a file's name without extension belongs to:
// a partition's file (t#P#p0, t#P#p0#SP#s0) belongs to t.
func tableOfBase(base string) string {
	if i := strings.Index(strings.ToUpper(base), "#P#"); i > 0 {
		return base[:i]
	}
	return base
}

// databaseOwner says which files of its directory a database's own DDL
// touched: only db.opt for an ALTER DATABASE; after a CREATE or DROP
// DATABASE, every file mariabackup copies as a file (the .frm of every
// table and the data files of the engines other than InnoDB), so that a
// database dropped and made again holds nothing of its former self.
func databaseOwner(e ddlEntry) func(name string) bool {
	if !slices.ContainsFunc(e.Stmts, func(s string) bool { return s != "ALTER" }) {
		return func(name string) bool { return name == "db.opt" }
	}
	return func(name string) bool {
		_, ok := copiedAsFile(name)
		return ok
	}
}

// copiedAsFile says whether name, a file of a database directory, is one
// mariabackup copies as a file (not one of InnoDB's), and returns its
// name without its extension.
func copiedAsFile(name string) (base string, ok bool) {
	base, ext, ok := strings.Cut(name, ".")
	return base, ok && !strings.Contains(ext, ".") && !slices.Contains(innodbSuffixes, strings.ToLower(ext))
}

// takeFiles copies the files of database directory db that owner
// claims; gone says the directory does not exist.
func (r *retake) takeFiles(db string, owner func(string) bool) (gone bool, err error) {
	entries, err := os.ReadDir(filepath.Join(r.datadir, db))
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		p := db + "/" + e.Name()
		if !e.Type().IsRegular() || !owner(e.Name()) || r.taken[p] {
			// A file two entries claim (a table of a database made
			// during the copy) is taken once.
			continue
		}
		r.taken[p] = true
		if r.dir == "" {
			if r.dir, err = scratch.MkdirTemp("retake-"); err != nil {
				return false, err
			}
		}
		f := retakenFile{path: p, copy: filepath.Join(r.dir, fmt.Sprint(len(r.files)))}
		if f.size, err = copyFile(filepath.Join(r.datadir, db, e.Name()), f.copy); err != nil {
			return false, err
		}
		r.files = append(r.files, f)
		r.bytes += f.size
	}
	return false, nil
}

// copyFile copies src to a new file dst and returns its size.
func copyFile(src, dst string) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// apply ends the stream with the retaken tables: a remove of every file
// of theirs the stream holds, then each file they had at BLOCK_COMMIT.
func (r *retake) apply(w *archive.Writer) error {
	if len(r.owners) == 0 {
		return nil
	}
	var removes []string
	gone := map[string]bool{}
	for _, p := range w.Paths() {
		dir, name := path.Split(strings.TrimPrefix(p, "./"))
		dir = strings.TrimSuffix(dir, "/")
		switch {
		case slices.Contains(r.gone, dir):
			if !gone[dir] {
				// The whole directory, once: everything in it went with it.
				gone[dir] = true
				removes = append(removes, strings.TrimSuffix(p, name))
			}
		case r.owns(dir, name):
			removes = append(removes, p)
		}
	}
	for _, p := range removes {
		c, raw, err := w.Encode(&xbstream.Chunk{Type: xbstream.TypeRemove, Path: strings.TrimSuffix(p, "/")})
		if err != nil {
			return err
		}
		if err := w.Add(&c, raw); err != nil {
			return err
		}
	}
	for _, f := range r.files {
		in, err := os.Open(f.copy)
		if err != nil {
			return fmt.Errorf("retaken %s: %w", f.path, err)
		}
		err = w.AddFile(f.path, in, retakeChunk)
		in.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// retakeChunk is the payload size of a retaken file's chunks.
const retakeChunk = 1 << 20

// owns reports whether file name of database directory db belongs to a
// retaken table.
func (r *retake) owns(db, name string) bool {
	for k, owner := range r.owners {
		if k[0] == db && owner(name) {
			return true
		}
	}
	return false
}

// covers reports whether the retake took what entry e of the DDL log
// touched.
func (r *retake) covers(e ddlEntry) bool {
	if r == nil {
		return false
	}
	_, ok := r.owners[[2]string{e.DB, e.Table}]
	return ok
}

// remove deletes the copies.
func (r *retake) remove() {
	if r != nil && r.dir != "" {
		os.RemoveAll(r.dir)
	}
}
