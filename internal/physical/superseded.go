package physical

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Where page 0 of an InnoDB tablespace names the tablespace: the FIL
// header's space ID, and the FSP header's copy of it right after.
const (
	filPageSpaceID = 34
	fspSpaceID     = 38
)

// dropSuperseded removes, before an increment is applied to dir, the
// tablespace files of dir that the increment copies whole under another
// name: a file <db>/<name>.new of incDir holds a whole tablespace, and a
// file of dir with the same space ID under another name is the same
// tablespace as the parent left it, before a rename. mariabackup
// normally writes a rename file (<old>.ren) for such a tablespace and
// renames the parent's file itself; mariabackup 11.8.9 at times writes
// none (when it meets the rename in the redo log only while it handles
// the DDL under BLOCK_DDL), and the prepare then finds two files with one
// space ID and fails ("Attempted to open a previously opened
// tablespace"), though the backup said "completed OK!". InnoDB never
// gives a space ID twice in a server's life, so the whole copy is the
// tablespace, and the parent's file is what the missing rename would
// have replaced. A file the increment renames (.ren) or deletes (.del)
// itself is left to mariabackup. Each removal is written to log.
func dropSuperseded(dir, incDir string, log io.Writer) error {
	whole := map[uint32]string{} // space ID -> the .new's table, "db/name"
	handled := map[string]bool{} // tables the increment renames or deletes
	err := eachTableFile(incDir, func(table, ext, path string) error {
		switch ext {
		case ".new":
			id, ok, err := spaceID(path)
			if err != nil {
				return err
			}
			if ok {
				whole[id] = table
			}
		case ".ren", ".del", ".ibd.ren", ".ibd.del":
			handled[table] = true
		}
		return nil
	})
	if err != nil || len(whole) == 0 {
		return err
	}
	return eachTableFile(dir, func(table, ext, path string) error {
		if ext != ".ibd" && ext != ".isl" {
			return nil
		}
		file := path
		if ext == ".isl" {
			// A tablespace outside the datadir: the link names its file.
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			file = strings.TrimSpace(string(b))
		}
		id, ok, err := spaceID(file)
		if err != nil && !(ext == ".isl" && errors.Is(err, fs.ErrNotExist)) {
			return err
		}
		newTable, superseded := whole[id]
		if !ok || !superseded || newTable == table || handled[table] {
			return nil
		}
		if err := os.Remove(file); err != nil {
			return err
		}
		if ext == ".isl" {
			if err := os.Remove(path); err != nil {
				return err
			}
		}
		fmt.Fprintf(log, "backstream: %s holds tablespace %d, which the increment copies whole as %s.new with no rename record: removed before the prepare, as the rename would have replaced it\n",
			file, id, newTable)
		return nil
	})
}

// eachTableFile calls fn for every file of a database directory of dir
// (dir/<db>/<file>), with the file's table ("db/name", the name up to
// its first dot) and the rest of its name from that dot (".ibd").
func eachTableFile(dir string, fn func(table, ext, path string) error) error {
	dbs, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, db := range dbs {
		if !db.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(dir, db.Name()))
		if err != nil {
			return err
		}
		for _, f := range files {
			name, ext, ok := strings.Cut(f.Name(), ".")
			if !ok || !f.Type().IsRegular() {
				continue
			}
			if err := fn(db.Name()+"/"+name, "."+ext, filepath.Join(dir, db.Name(), f.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// spaceID reads the space ID page 0 of the tablespace file at path
// names; ok is false for a file too short to hold one, or whose two
// copies of it differ, or that names the system tablespace (0).
func spaceID(path string) (id uint32, ok bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	var b [fspSpaceID + 4]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return 0, false, nil
		}
		return 0, false, fmt.Errorf("reading %s: %w", path, err)
	}
	id = binary.BigEndian.Uint32(b[filPageSpaceID:])
	return id, id != 0 && id == binary.BigEndian.Uint32(b[fspSpaceID:]), nil
}
