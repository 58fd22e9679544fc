package restore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/backstream/backstream/internal/durable"
	"github.com/backstream/backstream/internal/mariadb"
)

// A restore into place (restore --datadir) writes beside the datadir a
// server will run from, in a directory of the same filesystem, and only
// once that is written, prepared and owned renames it into place: the
// datadir is never half a restore. What the datadir held (with --force)
// is moved aside, never deleted.

// Place is a datadir restored into place: Staging is where the restore
// writes (a Target of its own), Dir where it goes at Swap.
type Place struct {
	Dir     string
	Staging string
	force   bool
	outs    []outside // where the server keeps files of the datadir's state outside it
}

// PlaceFor checks that dir can take a restore: no running process uses
// it, and it is absent or empty unless force (its contents then move
// aside at Swap). The places outside dir where the server's options sf
// keep files of the datadir's state (see outside.go) must hold none of
// another state unless force (they then move aside at Swap), and no
// running process may use those. Nothing is changed.
func PlaceFor(dir string, force bool, sf mariadb.ServerFiles) (*Place, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := notInUse(abs); err != nil {
		return nil, err
	}
	if err := renamable(abs); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("datadir %s: %w", abs, err)
	case len(entries) > 0 && !force:
		return nil, &RefusedError{fmt.Errorf("datadir %s is not empty (%d entries, e.g. %s); --force moves what it holds aside to %s.replaced-<time> when the restored one takes its place",
			abs, len(entries), entries[0].Name(), abs)}
	}
	outs := outsidePlaces(abs, sf)
	if err := checkOutside(outs, force); err != nil {
		return nil, err
	}
	return &Place{Dir: abs, Staging: filepath.Join(filepath.Dir(abs), "."+filepath.Base(abs)+".backstream-new"), force: force, outs: outs}, nil
}

// renamable refuses a datadir the swap could not rename: a symbolic link
// (rename would move the link, not the data) or a mount point (its files
// live on another filesystem than the staging directory beside it, and a
// mount point cannot be renamed), before anything is written.
func renamable(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("datadir %s: %w", dir, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return &RefusedError{fmt.Errorf("datadir %s is a symbolic link: restoring beside it and renaming would replace the link, not fill what it points to; give the directory it points to", dir)}
	}
	parent, err := os.Stat(filepath.Dir(dir))
	if err != nil {
		return fmt.Errorf("datadir %s: %w", dir, err)
	}
	if fi.Sys().(*syscall.Stat_t).Dev != parent.Sys().(*syscall.Stat_t).Dev {
		return &RefusedError{fmt.Errorf("datadir %s is a mount point: the restore is written beside it, on the parent's filesystem, and a mount point cannot be renamed; restore into a directory inside the mount (and point the server at it), or with --target-dir", dir)}
	}
	return nil
}

// Swapped is what a Swap moved.
type Swapped struct {
	// Replaced is where what Dir held was moved aside, "" if nothing was.
	Replaced string
	// Outside is what was moved aside from, and placed in, the places
	// outside Dir where the server keeps files of the datadir's state.
	Outside []Aside
}

// Swap renames the finished Staging into Dir. A Dir with contents is
// renamed aside first, to <Dir>.replaced-<time>; an empty one is replaced.
// Before that, the places outside Dir where the server keeps files of the
// datadir's state have theirs (with force) moved aside into
// <place>/backstream.replaced-<time>, and Staging's redo log, undo and
// system tablespaces move there. If the restored directory cannot take
// its place, all that is put back. Swapped says what was moved, also with
// an error.
func (p *Place) Swap() (sw Swapped, err error) {
	if err := notInUse(p.Dir); err != nil {
		return sw, err
	}
	if err := checkOutside(p.outs, p.force); err != nil {
		return sw, err
	}
	entries, err := os.ReadDir(p.Dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return sw, fmt.Errorf("datadir %s: %w", p.Dir, err)
	}
	stamp := time.Now().UTC().Format("20060102T150405Z")
	outside, moves, err := swapOutside(p.outs, p.Staging, stamp, p.force)
	// putBack undoes what was moved outside Dir, naming what it could not.
	putBack := func(err error) error {
		if uerr := undo(moves); uerr != nil {
			return fmt.Errorf("%w (and putting back what was moved outside the datadir failed: %v)", err, uerr)
		}
		return err
	}
	if err != nil {
		return sw, putBack(err)
	}
	if len(entries) > 0 {
		replaced := p.Dir + ".replaced-" + stamp
		if err := os.Rename(p.Dir, replaced); err != nil {
			return sw, putBack(fmt.Errorf("datadir %s: moving it aside: %w", p.Dir, err))
		}
		sw.Replaced = replaced
	}
	if err := os.Rename(p.Staging, p.Dir); err != nil {
		err = fmt.Errorf("datadir %s: the restored datadir %s did not take its place: %w", p.Dir, p.Staging, err)
		if sw.Replaced != "" {
			if rerr := os.Rename(sw.Replaced, p.Dir); rerr != nil {
				err = fmt.Errorf("%w (and what it held stays in %s: %v)", err, sw.Replaced, rerr)
			} else {
				sw.Replaced = ""
			}
		}
		return sw, putBack(err)
	}
	sw.Outside = outside
	// The restore synced its files; the renames are durable once the
	// directories that hold the new entries are.
	synced := []string{filepath.Dir(p.Dir)}
	for _, a := range outside {
		synced = append(synced, a.Dir)
		if a.To != "" {
			synced = append(synced, a.To)
		}
	}
	if err := durable.Dirs(synced...); err != nil {
		return sw, fmt.Errorf("datadir %s: %w", p.Dir, err)
	}
	if err := relabel(p.Dir); err != nil {
		return sw, err
	}
	for _, a := range outside {
		if a.To == "" {
			if err := relabel(a.Dir); err != nil {
				return sw, err
			}
		}
	}
	return sw, nil
}

// relabel gives dir the SELinux context policy assigns its path (that of
// a datadir, where the path is one), when SELinux is on: a directory made
// elsewhere and renamed keeps the context of where it was made, and a
// confined server could not read it. Without SELinux it does nothing.
func relabel(dir string) error {
	if exec.Command("selinuxenabled").Run() != nil {
		return nil
	}
	if out, err := exec.Command("restorecon", "-R", dir).CombinedOutput(); err != nil {
		return fmt.Errorf("datadir %s is in place, but restorecon -R failed (a confined server may not read it): %v: %s", dir, err, out)
	}
	return nil
}
