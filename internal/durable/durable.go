// Package durable makes what a restore wrote survive a crash of the host:
// it starts the kernel's writeback of a file's pages while the file is
// still being written (so the disk works while the CPUs decode, instead of
// after), and at the end syncs every file and directory of a tree. A
// restore reports success only after that: a datadir whose files were
// still in the page cache when the command said "done" could come back
// after a power cut as zero-length or torn tablespaces behind a redo log
// that says they are complete. It knows files and directories only.
package durable

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"
)

// WritebackStep is how many bytes a Writeback lets accumulate before it
// starts the kernel writing them: big enough that the system calls cost
// nothing, small enough that the disk never waits for a whole file.
const WritebackStep = 8 << 20

// Writeback starts the writeback of a file written front to back (or in
// any order) without waiting for it. Wrote is told each range written; it
// asks the kernel to write out every WritebackStep bytes. It is a hint:
// errors are ignored here and found by the final Tree sync. Not safe for
// concurrent use; one per open file.
type Writeback struct {
	f       *os.File
	pending int64 // bytes written since the last start
	low     int64 // lowest offset written since the last start
	high    int64 // end of the highest range written since the last start
}

// NewWriteback returns a Writeback for f.
func NewWriteback(f *os.File) *Writeback { return &Writeback{f: f, low: -1} }

// Wrote records that n bytes were written at off.
func (w *Writeback) Wrote(off, n int64) {
	if n <= 0 {
		return
	}
	if w.low < 0 || off < w.low {
		w.low = off
	}
	w.high = max(w.high, off+n)
	w.pending += n
	if w.pending >= WritebackStep {
		w.Flush()
	}
}

// Flush starts the writeback of what was written since the last start.
func (w *Writeback) Flush() {
	if w.pending == 0 || w.low < 0 {
		return
	}
	// SYNC_FILE_RANGE_WRITE queues the dirty pages for writing and
	// returns; it waits only when the device's queue is full, which paces
	// the writer to the disk as the final sync would.
	_ = unix.SyncFileRange(int(w.f.Fd()), w.low, w.high-w.low, unix.SYNC_FILE_RANGE_WRITE)
	w.pending, w.low, w.high = 0, -1, 0
}

// Tree syncs every regular file and directory under each root (the roots
// included), several at a time, then the parent directory of each root,
// whose entry a restore may have just created. Symbolic links are not
// followed: what they point to is another tree's to sync. The first
// failure is returned, naming the path.
func Tree(ctx context.Context, roots ...string) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(4, 2*runtime.GOMAXPROCS(0)))
	var dirs []string // synced after the files in them
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if gctx.Err() != nil {
				return gctx.Err()
			}
			switch {
			case d.IsDir():
				dirs = append(dirs, p)
			case d.Type().IsRegular():
				g.Go(func() error { return syncPath(p) })
			}
			return nil
		})
		if err != nil {
			_ = g.Wait()
			return fmt.Errorf("syncing %s: %w", root, err)
		}
		dirs = append(dirs, filepath.Dir(root))
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return Dirs(dirs...)
}

// Dirs syncs directories, whose entries (files created, renamed or
// removed in them) are durable only then.
func Dirs(dirs ...string) error {
	for _, d := range dirs {
		if err := syncPath(d); err != nil {
			return err
		}
	}
	return nil
}

// syncFile is (*os.File).Sync; tests count the calls.
var syncFile = (*os.File).Sync

// syncPath opens p read-only and fsyncs it; a p removed meanwhile has
// nothing of it to keep.
func syncPath(p string) error { return syncExisting(p, true) }

// syncExisting opens p read-only and fsyncs it; a missing p is an error
// unless missingOK.
func syncExisting(p string, missingOK bool) error {
	f, err := os.Open(p)
	if err != nil {
		if missingOK && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("syncing %s: %w", p, err)
	}
	err = syncFile(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("syncing %s: %w", p, err)
	}
	return nil
}

// Files syncs each file, several at a time, then every directory from
// each file's up to root (root included): the files' contents and their
// entries, and those of the directories created for them, are durable
// when it returns. Every file must be under root and exist: a file
// missing here is an error, not nothing to keep.
func Files(ctx context.Context, root string, files ...string) error {
	root = filepath.Clean(root)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(4, 2*runtime.GOMAXPROCS(0)))
	dirs := map[string]bool{}
	var order []string
	for _, p := range files {
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
			_ = g.Wait()
			return fmt.Errorf("syncing %s: not under %s", p, root)
		}
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			return syncExisting(p, false)
		})
		for d := filepath.Dir(p); !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
			order = append(order, d)
			if d == root {
				break
			}
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	// Deepest first: a directory's entry in its parent after its own.
	slices.SortFunc(order, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	for _, d := range order {
		if err := syncExisting(d, false); err != nil {
			return err
		}
	}
	return nil
}
