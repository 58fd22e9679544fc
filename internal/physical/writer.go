package physical

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/backstream/backstream/internal/durable"
	"github.com/backstream/backstream/internal/xbstream"
)

// Modes of what the writer creates: those the server gives the files and
// directories it creates itself (its UMASK and UMASK_DIR defaults, 0660 and
// 0700; mariadb-install-db makes the datadir 0700 too), so that a restored
// datadir looks like one the server made. Nobody but the server's user and
// group has business in a datadir.
const (
	FileMode fs.FileMode = 0o660
	DirMode  fs.FileMode = 0o700
)

// DatadirWriter applies xbstream chunks to a directory the way `mbstream -x`
// does, through an os.Root so that no chunk can touch anything outside the
// directory (absolute paths, "..", symlinks pointing out).
//
// The semantics follow mbstream -x in MariaDB 10.11 (xbstream.cc, ds_local.cc):
//   - The first chunk of a path that is not open opens it: the file is
//     created exclusively (an existing file is an error) or, with the rewrite
//     flag, truncated. Missing parent directories are created. So an E chunk
//     alone creates an empty file.
//   - P writes its payload at its offset, which must equal the end of the
//     previous payload or the last seek position (mbstream's "out-of-order
//     chunk" check).
//   - S moves that position to its absolute offset; no bytes are written, so
//     a seek past the end followed by E does not extend the file.
//   - E closes the file; a later chunk for the same path opens it anew.
//   - D removes a path: a file, or a directory and everything in it. A path
//     that does not exist is not an error. A path ending in "*" removes only
//     the file named by the rest, as mbstream 10.11 does (see remove).
//   - R renames a closed path. mbstream ignores rename failures (the file may
//     have reached the stream under its new name already); so does this
//     writer when the old name does not exist, but any other failure is
//     reported.
//
// mbstream punches holes for page-compressed tablespaces; this writer writes
// the zeros instead: same content and size, more disk blocks.
//
// Chunk may be called concurrently for different paths; the chunks of one
// path must come from one goroutine in stream order (the archive's path
// binding guarantees both).
type DatadirWriter struct {
	dir       string
	root      *os.Root
	writeback bool // see StartWriteback

	mu     sync.Mutex
	open   map[string]*openFile
	closed bool
}

type openFile struct {
	mu     sync.Mutex // chunks of one path come from one goroutine; this makes misuse safe, not fast
	f      *os.File
	offset uint64
	wb     *durable.Writeback // nil unless the writer starts writeback
}

// NewDatadirWriter opens (creating it if needed, mode 0700) the directory
// the stream is extracted into.
func NewDatadirWriter(dir string) (*DatadirWriter, error) {
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return nil, fmt.Errorf("datadir writer: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("datadir writer: %w", err)
	}
	return &DatadirWriter{dir: dir, root: root, open: make(map[string]*openFile)}, nil
}

// StartWriteback makes the writer start the kernel's writeback of what it
// writes as it goes (see durable.Writeback), for a directory that is to be
// synced when complete: the disk then writes while the stream is decoded.
// Call it before the first chunk. A directory that is thrown away (an
// increment applied and removed) is better left to the page cache.
func (w *DatadirWriter) StartWriteback() { w.writeback = true }

// Chunk applies one chunk.
func (w *DatadirWriter) Chunk(c *xbstream.Chunk) error {
	if c.Type == xbstream.TypeRemove {
		// Validated in remove: a trailing "*" is a pattern, not a name.
		if err := w.remove(c.Path); err != nil {
			return fmt.Errorf("datadir %s: remove %q: %w", w.dir, c.Path, err)
		}
		return nil
	}
	name, err := localPath(c.Path)
	if err != nil {
		return fmt.Errorf("datadir %s: chunk %q for %q: %w", w.dir, rune(c.Type), c.Path, err)
	}
	switch c.Type {
	case xbstream.TypeRename:
		if err := w.rename(name, c.NewPath); err != nil {
			return fmt.Errorf("datadir %s: rename %q to %q: %w", w.dir, c.Path, c.NewPath, err)
		}
		return nil
	case xbstream.TypePayload, xbstream.TypeSeek, xbstream.TypeEOF:
	default:
		return fmt.Errorf("datadir %s: %q: unknown chunk type %q", w.dir, c.Path, rune(c.Type))
	}

	of, err := w.file(name, c.Flags&xbstream.FlagRewrite != 0)
	if err != nil {
		return fmt.Errorf("datadir %s: %w", w.dir, err)
	}
	of.mu.Lock()
	defer of.mu.Unlock()
	switch c.Type {
	case xbstream.TypeEOF:
		w.mu.Lock()
		if w.open[name] == of {
			delete(w.open, name)
		}
		w.mu.Unlock()
		if of.wb != nil {
			of.wb.Flush()
		}
		if err := of.f.Close(); err != nil {
			return fmt.Errorf("datadir %s: close %s: %w", w.dir, name, err)
		}
	case xbstream.TypeSeek:
		of.offset = c.Offset
	case xbstream.TypePayload:
		if c.Offset != of.offset {
			return fmt.Errorf("datadir %s: %s: out-of-order chunk at offset %d, expected %d", w.dir, name, c.Offset, of.offset)
		}
		if of.offset > 1<<62 || uint64(len(c.Payload)) > 1<<62-of.offset {
			return fmt.Errorf("datadir %s: %s: offset %d out of range", w.dir, name, of.offset)
		}
		if _, err := of.f.WriteAt(c.Payload, int64(of.offset)); err != nil {
			return fmt.Errorf("datadir %s: write %s at offset %d: %w", w.dir, name, of.offset, err)
		}
		if of.wb != nil {
			of.wb.Wrote(int64(of.offset), int64(len(c.Payload)))
		}
		of.offset += uint64(len(c.Payload))
	}
	return nil
}

// file returns the open file for name, opening it as mbstream does if needed.
func (w *DatadirWriter) file(name string, rewrite bool) (*openFile, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, fmt.Errorf("%s: writer is closed", name)
	}
	if of := w.open[name]; of != nil {
		return of, nil
	}
	if d := path.Dir(name); d != "." {
		if err := w.root.MkdirAll(d, DirMode); err != nil {
			return nil, fmt.Errorf("create directory for %s: %w", name, err)
		}
	}
	flags := os.O_WRONLY | os.O_CREATE | syscall.O_NOFOLLOW
	if rewrite {
		flags |= os.O_TRUNC
	} else {
		flags |= os.O_EXCL
	}
	f, err := w.root.OpenFile(name, flags, FileMode)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("create %s: file exists and the chunk does not have the rewrite flag: %w", name, err)
		}
		return nil, fmt.Errorf("create %s: %w", name, err)
	}
	of := &openFile{f: f}
	if w.writeback {
		of.wb = durable.NewWriteback(f)
	}
	w.open[name] = of
	return of, nil
}

// remove implements D. mbstream ignores every failure here; we ignore only
// "not there", so that a refusal by the root (an escape) or an I/O error is
// not silently dropped.
//
// A path ending in "*" looks like a prefix pattern, and mbstream's
// local_mremove was meant to remove every file of the directory whose name
// starts with the prefix; but it compares one byte too many (the prefix
// length counts the slash before it), so mbstream 10.11 removes only a file
// named exactly the prefix. We do the same: removing less than the reference
// tool is safe, removing more could delete a table's data.
func (w *DatadirWriter) remove(p string) error {
	if pattern, ok := strings.CutSuffix(p, "*"); ok {
		if d := strings.TrimSuffix(pattern, "/"); d != "" {
			if _, err := localPath(d); err != nil {
				return err
			}
		}
		if pattern == "" || strings.HasSuffix(pattern, "/") {
			return nil // an empty prefix matches nothing in mbstream
		}
		name, err := localPath(pattern)
		if err != nil {
			return err
		}
		fi, err := w.root.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return nil // mbstream unlinks, which fails on a directory
		}
		if err := w.root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	name, err := localPath(p)
	if err != nil {
		return err
	}
	if err := w.root.RemoveAll(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// rename implements R.
func (w *DatadirWriter) rename(oldName, newPath string) error {
	newName, err := localPath(newPath)
	if err != nil {
		return fmt.Errorf("new name: %w", err)
	}
	w.mu.Lock()
	_, isOpen := w.open[oldName]
	w.mu.Unlock()
	if isOpen {
		return errors.New("the file is still open (no E chunk yet)")
	}
	if err := w.root.Rename(oldName, newName); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Close closes every file still open. Open files at the end mean the stream
// was truncated (an E chunk is missing), which is an error naming them.
func (w *DatadirWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	var names []string
	var errs []error
	for name, of := range w.open {
		names = append(names, name)
		if err := of.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", name, err))
		}
	}
	w.open = nil
	if err := w.root.Close(); err != nil {
		errs = append(errs, err)
	}
	if len(names) > 0 {
		sort.Strings(names)
		if len(names) > 10 {
			names = append(names[:10], fmt.Sprintf("and %d more", len(names)-10))
		}
		errs = append([]error{fmt.Errorf("stream ended with files still open (truncated stream?): %s", strings.Join(names, ", "))}, errs...)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("datadir %s: %w", w.dir, err)
	}
	return nil
}

// localPath checks a stream path: relative, no "..", not empty, no NUL. A
// leading "./" (mariabackup writes some names that way) is dropped.
func localPath(p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", errors.New("path contains a NUL byte")
	}
	if strings.HasPrefix(p, "/") {
		return "", errors.New("absolute path")
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return "", errors.New(`path contains ".."`)
		}
	}
	clean := path.Clean(p)
	if clean == "." {
		return "", errors.New("path names the directory itself")
	}
	return clean, nil
}
