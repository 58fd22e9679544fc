// Package local stores a repository's objects as files below a directory.
//
// Every object is a regular file whose path below the root is its name.
// Writes are atomic and durable: a Put writes a hidden temporary file in
// the target's directory, fsyncs it, renames it over the final name and
// fsyncs the directory, so a crash leaves either the old object or the new
// one, never a torn one; what it leaves besides, the hidden temporary file,
// RemoveLeftovers removes. A Put under a storage.DeferSync context skips
// the fsyncs, which SyncObjects makes later for many objects at once. All
// access goes through an os.Root, so neither a name nor a symbolic link
// planted in the repository can reach a file outside the root.
//
// Only regular files are objects. Directories, symbolic links and other
// files are never listed, and Open, Stat and Delete treat them as missing
// objects. Because names map to paths, one name cannot be both an object
// and a directory of other objects ("a" and "a/b"); object stores allow
// that, but the repository layout never needs it.
package local

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"

	"github.com/backstream/backstream/internal/storage"
)

// copyBufferSize is large so that a Put issues few write system calls and
// the file system can allocate big extents.
const copyBufferSize = 1 << 20

// Modes of what the backend creates: a repository holds a database's
// contents, so only its owner may read it.
const (
	fileMode = 0o600
	dirMode  = 0o700
)

// mkdirAttempts bounds how often Put recreates a parent directory that a
// concurrent Delete removed (it prunes empty directories) between Put's
// mkdir and its create. Each retry needs a new race, so a few suffice.
const mkdirAttempts = 10

var copyBuffers = sync.Pool{New: func() any {
	b := make([]byte, copyBufferSize)
	return &b
}}

// Backend is a repository stored in a local directory. It is safe for
// concurrent use.
type Backend struct {
	root *os.Root
	path string // absolute, for messages
}

var (
	_ storage.Backend         = (*Backend)(nil)
	_ storage.LeftoverRemover = (*Backend)(nil)
	_ storage.ObjectSyncer    = (*Backend)(nil)
)

// New opens (creating if needed, mode 0700) a directory as a backend.
func New(root string) (*Backend, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("local repository %s: %w", root, err)
	}
	if err := os.MkdirAll(abs, dirMode); err != nil {
		return nil, fmt.Errorf("local repository %s: %w", abs, err)
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("local repository %s: %w", abs, err)
	}
	return &Backend{root: r, path: abs}, nil
}

// Close releases the directory handle. The Backend must not be used after.
func (b *Backend) Close() error {
	return b.root.Close()
}

// Location returns the absolute path of the root directory.
func (b *Backend) Location() string { return b.path }

// Put creates or replaces the object name with everything read from r.
// Cancellation is noticed between reads of r; a Read that blocks is not
// interrupted.
func (b *Backend) Put(ctx context.Context, name string, r io.Reader) (int64, error) {
	if err := storage.CheckName(name); err != nil {
		return 0, fmt.Errorf("%s: put: %w", b.path, err)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("%s: put %s: %w", b.path, name, err)
	}
	n, err := b.put(ctx, name, r)
	if err != nil {
		return 0, fmt.Errorf("%s: put %s: %w", b.path, name, err)
	}
	return n, nil
}

func (b *Backend) put(ctx context.Context, name string, r io.Reader) (int64, error) {
	dir := path.Dir(name)
	syncs := storage.DeferredSyncs(ctx)
	durable := syncs == nil
	f, tmp, err := b.createTemp(dir, path.Base(name), durable)
	if err != nil {
		return 0, err
	}
	committed := false
	defer func() {
		if !committed {
			_ = f.Close() // the write already failed; its error is the one to report
			_ = b.root.Remove(tmp)
			b.pruneEmpty(dir)
		}
	}()

	n, err := copyCtx(ctx, f, r)
	if err != nil {
		return n, err
	}
	if durable {
		if err := f.Sync(); err != nil {
			return n, fmt.Errorf("fsync %s: %w", tmp, err)
		}
	} else {
		// Start the writeback now, without waiting for it, so that the
		// Sync to come finds the data on its way rather than all of a
		// deferred backup's packs still to write (night 1 at 10 GB spent
		// its last seconds in fsyncs waiting on 4 GB). Only a hint: an
		// error here changes nothing, the Sync reports the one that
		// counts.
		_ = unix.SyncFileRange(int(f.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
	}
	if err := f.Close(); err != nil {
		return n, fmt.Errorf("close %s: %w", tmp, err)
	}
	// Last point at which giving up leaves nothing behind.
	if err := ctx.Err(); err != nil {
		return n, err
	}
	if err := b.root.Rename(tmp, name); err != nil {
		return n, fmt.Errorf("rename %s: %w", tmp, err)
	}
	committed = true
	if !durable {
		syncs.Add(b, name)
		return n, nil
	}
	// The object is visible now. Should this fsync fail, Put reports the
	// error although the complete object is visible: removing it would
	// also lose the object it replaced, and a failing fsync means the
	// caller must not trust this write anyway.
	if err := b.syncDir(dir); err != nil {
		return n, err
	}
	return n, nil
}

// createTemp creates the hidden temporary file for an object named base in
// dir, creating dir and its missing parents first (durable: see mkdirs).
func (b *Backend) createTemp(dir, base string, durable bool) (*os.File, string, error) {
	// Keep the temporary name within NAME_MAX (255) while still showing, to
	// someone who finds a leftover after a crash, which object it was for.
	// Cut at a character boundary: a name that is not UTF-8 would make
	// io/fs, and so List, refuse the directory.
	if len(base) > 200 {
		n := 200
		for !utf8.RuneStart(base[n]) {
			n--
		}
		base = base[:n]
	}
	var lastErr error
	for range mkdirAttempts {
		if err := b.mkdirs(dir, durable); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				lastErr = err
				continue
			}
			return nil, "", err
		}
		var rnd [8]byte
		_, _ = rand.Read(rnd[:]) // crypto/rand.Read never fails
		tmp := path.Join(dir, "."+base+"."+hex.EncodeToString(rnd[:])+".tmp")
		f, err := b.root.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, fileMode)
		if err == nil {
			return f, tmp, nil
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrExist) {
			return nil, "", fmt.Errorf("create temporary file: %w", err)
		}
		lastErr = err
	}
	return nil, "", fmt.Errorf("create temporary file in %s: directory keeps disappearing: %w", dir, lastErr)
}

// mkdirs creates dir and its missing parents and, if durable, fsyncs the
// parent of each directory it creates so that the new entries survive a
// crash (else SyncObjects does).
func (b *Backend) mkdirs(dir string, durable bool) error {
	if dir == "." {
		return nil
	}
	elems := strings.Split(dir, "/")
	for i := range elems {
		p := strings.Join(elems[:i+1], "/")
		err := b.root.Mkdir(p, dirMode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("create directory %s: %w", p, err)
		}
		if !durable {
			continue
		}
		if err := b.syncDir(path.Dir(p)); err != nil {
			return err
		}
	}
	return nil
}

// syncWorkers is how many objects SyncObjects fsyncs at once, so that the
// disk is given the data of several to write.
const syncWorkers = 4

// SyncObjects makes durable the objects that Puts under a
// storage.DeferSync context stored: it fsyncs each file, then every
// directory from the root down to each (a Put may have created them).
func (b *Backend) SyncObjects(ctx context.Context, names []string) error {
	var g errgroup.Group
	g.SetLimit(syncWorkers)
	dirs := map[string]bool{}
	for _, name := range names {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error { return b.syncFile(name) })
		for d := path.Dir(name); !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			if d == "." {
				break
			}
		}
	}
	if err := cmp.Or(g.Wait(), ctx.Err()); err != nil {
		return fmt.Errorf("%s: %w", b.path, err)
	}
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		if err := b.syncDir(d); err != nil {
			return fmt.Errorf("%s: %w", b.path, err)
		}
	}
	return nil
}

func (b *Backend) syncFile(name string) error { return b.fsync(name, "") }

func (b *Backend) syncDir(dir string) error { return b.fsync(dir, "directory ") }

// fsync fsyncs the file or directory p, of the kind its messages name.
func (b *Backend) fsync(p, kind string) error {
	f, err := b.root.Open(p)
	if err != nil {
		return fmt.Errorf("open %s%s for fsync: %w", kind, p, err)
	}
	err = f.Sync()
	// Closing what was opened read-only loses nothing; the fsync result matters.
	_ = f.Close()
	if err != nil {
		return fmt.Errorf("fsync %s%s: %w", kind, p, err)
	}
	return nil
}

// copyCtx copies r to w through a large buffer, filling it before each
// write and checking ctx between fills. Errors from r are returned as they
// are so that callers can match them.
func copyCtx(ctx context.Context, w io.Writer, r io.Reader) (int64, error) {
	bp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bp)
	buf := *bp
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				return total, fmt.Errorf("write at offset %d: %w", total, err)
			}
			total += int64(n)
		}
		switch {
		case rerr == io.EOF || rerr == io.ErrUnexpectedEOF:
			return total, nil
		case rerr != nil:
			return total, fmt.Errorf("read source at offset %d: %w", total, rerr)
		}
	}
}

// Open reads length bytes of the object from offset off; length < 0 reads
// to the end. The reader sees the object as it was when opened, even if it
// is replaced meanwhile, and fails once ctx is done.
func (b *Backend) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	if err := storage.CheckName(name); err != nil {
		return nil, fmt.Errorf("%s: open: %w", b.path, err)
	}
	if off < 0 {
		return nil, fmt.Errorf("%s: open %s: negative offset %d", b.path, name, off)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: open %s: %w", b.path, name, err)
	}
	// Lstat first so that a symbolic link is no object here either, as in
	// Stat and List; os.Root keeps even a link swapped in meanwhile from
	// reaching outside the root.
	if fi, err := b.root.Lstat(name); err != nil {
		return nil, b.notFound("open", name, err)
	} else if !fi.Mode().IsRegular() {
		return nil, b.notObject("open", name, fi)
	}
	f, err := b.root.Open(name)
	if err != nil {
		return nil, b.notFound("open", name, err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%s: open %s: %w", b.path, name, err)
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, b.notObject("open", name, fi)
	}
	if length < 0 || length > math.MaxInt64-off {
		length = math.MaxInt64 - off
	}
	return &reader{ctx: ctx, sr: io.NewSectionReader(f, off, length), f: f, what: b.path + ": " + name}, nil
}

type reader struct {
	ctx  context.Context
	sr   *io.SectionReader
	f    *os.File
	what string
}

func (r *reader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, fmt.Errorf("read %s: %w", r.what, err)
	}
	n, err := r.sr.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("read %s: %w", r.what, err)
	}
	return n, err
}

func (r *reader) Close() error { return r.f.Close() }

// Stat describes one object.
func (b *Backend) Stat(ctx context.Context, name string) (storage.Info, error) {
	if err := storage.CheckName(name); err != nil {
		return storage.Info{}, fmt.Errorf("%s: stat: %w", b.path, err)
	}
	if err := ctx.Err(); err != nil {
		return storage.Info{}, fmt.Errorf("%s: stat %s: %w", b.path, name, err)
	}
	fi, err := b.root.Lstat(name)
	if err != nil {
		return storage.Info{}, b.notFound("stat", name, err)
	}
	if !fi.Mode().IsRegular() {
		return storage.Info{}, b.notObject("stat", name, fi)
	}
	return storage.Info{Name: name, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// List returns the objects whose names start with prefix (a plain string
// prefix: "a/b" matches "a/bc"), sorted by name. Objects that a concurrent
// Delete removes during the walk may or may not be listed.
func (b *Backend) List(ctx context.Context, prefix string) ([]storage.Info, error) {
	if err := storage.CheckPrefix(prefix); err != nil {
		return nil, fmt.Errorf("%s: list: %w", b.path, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: list %q: %w", b.path, prefix, err)
	}
	var out []storage.Info
	_, err := b.walkPrefix(ctx, prefix, func(p string, d fs.DirEntry, fi fs.FileInfo) error {
		if !storage.IsTempName(d.Name()) && strings.HasPrefix(p, prefix) {
			out = append(out, storage.Info{Name: p, Size: fi.Size(), ModTime: fi.ModTime()})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: list %q: %w", b.path, prefix, err)
	}
	slices.SortFunc(out, func(a, b storage.Info) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Delete removes the object and then every directory it leaves empty, up
// to but not including the root, so that deleted backups leave no trace.
func (b *Backend) Delete(ctx context.Context, name string) error {
	if err := storage.CheckName(name); err != nil {
		return fmt.Errorf("%s: delete: %w", b.path, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: delete %s: %w", b.path, name, err)
	}
	fi, err := b.root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: delete %s: %w", b.path, name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil // not an object, so no object to delete
	}
	if err := b.root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: delete %s: %w", b.path, name, err)
	}
	b.pruneEmpty(path.Dir(name))
	return nil
}

// RemoveLeftovers removes the temporary files of Puts that never finished
// (their process was killed before it could remove them) below prefix:
// those of objects whose names start with prefix, as List matches
// them. It then removes the directories below prefix that this, or
// anything before, left empty, as Delete does. opts.Names adds nothing: a
// directory shows every temporary file in it. Bytes counts what the files
// took.
//
// A temporary file is removed whatever its age: the caller guarantees
// that no Put writes below prefix (see storage.LeftoverRemover), and a
// Put whose file is removed under it fails at its rename, leaving no
// object.
func (b *Backend) RemoveLeftovers(ctx context.Context, prefix string, opts storage.LeftoverOptions) (storage.Leftovers, error) {
	var found storage.Leftovers
	if err := storage.CheckPrefix(prefix); err != nil {
		return found, fmt.Errorf("%s: remove leftovers: %w", b.path, err)
	}
	if err := ctx.Err(); err != nil {
		return found, fmt.Errorf("%s: remove leftovers under %q: %w", b.path, prefix, err)
	}
	dirs, err := b.walkPrefix(ctx, prefix, func(p string, d fs.DirEntry, fi fs.FileInfo) error {
		if !storage.IsTempName(d.Name()) || !strings.HasPrefix(path.Join(path.Dir(p), tempTarget(d.Name())), prefix) {
			return nil
		}
		if !opts.DryRun {
			if err := b.root.Remove(p); errors.Is(err, fs.ErrNotExist) {
				return nil
			} else if err != nil {
				return fmt.Errorf("remove temporary file %s: %w", p, err)
			}
		}
		found.TempFiles++
		found.Bytes += fi.Size()
		return nil
	})
	if err != nil {
		return found, fmt.Errorf("%s: remove leftovers under %q: %w", b.path, prefix, err)
	}
	if opts.DryRun {
		return found, nil
	}
	// Deepest first: a directory sorts after its parent.
	slices.Sort(dirs)
	for _, d := range slices.Backward(dirs) {
		_ = b.root.Remove(d) // fails, as it should, while d holds anything
	}
	b.pruneEmpty(walkStart(prefix))
	return found, nil
}

// walkStart is the directory a walk for names starting with prefix starts
// from.
func walkStart(prefix string) string {
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		return prefix[:i]
	}
	return "."
}

// walkPrefix calls file for every regular file whose directory can hold
// names starting with prefix (file decides on the name itself), and
// returns the directories below prefix it went through. What a concurrent
// Delete removes during the walk (it prunes empty directories), and a
// prefix whose directory never existed, are simply not there.
func (b *Backend) walkPrefix(ctx context.Context, prefix string, file func(p string, d fs.DirEntry, fi fs.FileInfo) error) ([]string, error) {
	var dirs []string
	err := fs.WalkDir(b.root.FS(), walkStart(prefix), func(p string, d fs.DirEntry, err error) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				if d != nil && d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			return err
		}
		if d.IsDir() {
			// Descend only where names can still match the prefix.
			if p != "." && !strings.HasPrefix(p+"/", prefix) && !strings.HasPrefix(prefix, p+"/") {
				return fs.SkipDir
			}
			if p != "." && strings.HasPrefix(p+"/", prefix) {
				dirs = append(dirs, p)
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		return file(p, d, fi)
	})
	return dirs, err
}

// tempTarget returns the name of the object whose temporary file is named
// elem (".<base>.<16 hex digits>.tmp", see createTemp): base, cut to 200
// bytes for a long name.
func tempTarget(elem string) string {
	s := strings.TrimSuffix(strings.TrimPrefix(elem, "."), ".tmp")
	if i := strings.LastIndexByte(s, '.'); i >= 0 && len(s)-i == 17 {
		if _, err := hex.DecodeString(s[i+1:]); err == nil {
			s = s[:i]
		}
	}
	return s
}

// pruneEmpty removes dir and its parents while they are empty, never the
// root itself.
func (b *Backend) pruneEmpty(dir string) {
	for ; dir != "."; dir = path.Dir(dir) {
		// Fails, as it should, once a directory still holds something. A
		// concurrent Put that loses the race to this removal retries.
		if b.root.Remove(dir) != nil {
			return
		}
	}
}

// notFound wraps an error from looking up name. Besides a missing file, a
// path through a regular file ("obj/x") means the object does not exist.
func (b *Backend) notFound(op, name string, err error) error {
	if errors.Is(err, syscall.ENOTDIR) && !errors.Is(err, fs.ErrNotExist) {
		err = fmt.Errorf("%w (%w)", fs.ErrNotExist, err)
	}
	return fmt.Errorf("%s: %s %s: %w", b.path, op, name, err)
}

func (b *Backend) notObject(op, name string, fi fs.FileInfo) error {
	return fmt.Errorf("%s: %s %s: is a %s, not an object: %w", b.path, op, name, kind(fi.Mode()), fs.ErrNotExist)
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	default:
		return "special file"
	}
}
