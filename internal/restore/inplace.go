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
	"github.com/backstream/backstream/internal/physical"
)

// A restore into place (restore --datadir) writes where a server will
// run from only once the restore is written, prepared and owned: the
// datadir is never half a restore. What the datadir held (with --force)
// is moved aside, never deleted, on the datadir's own filesystem.
//
// A plain directory is restored beside itself, in a directory of the same
// filesystem, which is renamed into place; what it held is renamed aside
// to <Dir>.replaced-<time>. A datadir that cannot be renamed is restored
// inside itself: a mount point (a dedicated volume, the usual production
// layout, where beside it is another filesystem) or a symbolic link
// (renaming would move the link; the directory it points to is used). The
// restore is written to <Dir>/.backstream-new, and the swap moves what Dir
// held into <Dir>/.backstream-replaced-<time>, then the restored entries up
// from .backstream-new into Dir. lost+found, which belongs to the
// filesystem, stays where it is. Killed during that swap, Dir holds some of
// the restored entries and some of the old ones, and the rest are in those
// two hidden directories, nothing lost: a restore --force run again moves
// all of it into a new .backstream-replaced-<time> and restores again, or
// the user moves the old entries back (see docs/guide.md).

// Place is a datadir restored into place: Staging is where the restore
// writes (a Target of its own), Dir where it goes at Swap.
type Place struct {
	Dir     string
	Staging string
	force   bool
	inside  bool      // Staging is inside Dir, whose entries are swapped
	outs    []outside // where the server keeps files of the datadir's state outside it
}

// Inside a datadir restored inside itself: where the restore is written,
// where what the datadir held goes, and what is never moved.
const (
	insideStaging  = ".backstream-new"
	insideReplaced = ".backstream-replaced-"
	lostFound      = "lost+found"
)

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
	abs, inside, err := swappable(abs)
	if err != nil {
		return nil, err
	}
	if err := notInUse(abs); err != nil {
		return nil, err
	}
	p := &Place{Dir: abs, Staging: filepath.Join(filepath.Dir(abs), "."+filepath.Base(abs)+".backstream-new"), force: force, inside: inside}
	aside := abs + ".replaced-<time>"
	if inside {
		p.Staging, aside = filepath.Join(abs, insideStaging), filepath.Join(abs, insideReplaced+"<time>")
	}
	entries, err := p.held()
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("datadir %s: %w", abs, err)
	case len(entries) > 0 && !force:
		return nil, &RefusedError{fmt.Errorf("datadir %s is not empty (%d entries, e.g. %s); --force moves what it holds aside to %s when the restored one takes its place",
			abs, len(entries), entries[0], aside)}
	}
	p.outs = outsidePlaces(abs, sf)
	if err := checkOutside(p.outs, force); err != nil {
		return nil, err
	}
	return p, nil
}

// swappable says how the restore takes the place of dir: renamed into
// place (inside false), or, for a datadir that cannot be renamed, its
// entries swapped inside it (inside true): a mount point, whose files
// live on another filesystem than its parent, and a symbolic link, which
// is replaced by the directory it points to.
func swappable(dir string) (string, bool, error) {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return dir, false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("datadir %s: %w", dir, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		to, err := filepath.EvalSymlinks(dir)
		if err == nil {
			fi, err = os.Stat(to)
		}
		if err != nil {
			return "", false, fmt.Errorf("datadir %s is a symbolic link to a directory that cannot be reached; create what it points to, or give the directory itself: %w", dir, err)
		}
		if !fi.IsDir() {
			return "", false, &RefusedError{fmt.Errorf("datadir %s is a symbolic link to %s, which is not a directory", dir, to)}
		}
		return to, true, nil
	}
	parent, err := os.Stat(filepath.Dir(dir))
	if err != nil {
		return "", false, fmt.Errorf("datadir %s: %w", dir, err)
	}
	return dir, fi.Sys().(*syscall.Stat_t).Dev != parent.Sys().(*syscall.Stat_t).Dev, nil
}

// held is what Dir holds that a swap moves aside: every entry, but for a
// datadir swapped inside itself its lost+found and the restore's staging
// directory.
func (p *Place) held() ([]string, error) {
	entries, err := os.ReadDir(p.Dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if p.inside && (e.Name() == lostFound || e.Name() == insideStaging) {
			continue
		}
		names = append(names, e.Name())
	}
	return names, nil
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
	entries, err := p.held()
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
	if p.inside {
		if sw.Replaced, err = p.swapInside(entries, stamp); err != nil {
			return sw, putBack(err)
		}
	} else {
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
	}
	sw.Outside = outside
	// The restore synced its files; the renames are durable once the
	// directories that hold the new entries are.
	synced := []string{filepath.Dir(p.Dir)}
	if p.inside {
		synced = []string{p.Dir}
		if sw.Replaced != "" {
			synced = append(synced, sw.Replaced)
		}
	}
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

// swapInside moves the entries Dir held into <Dir>/.backstream-replaced-<stamp>
// (none: no such directory), then the restored entries up from Staging,
// and removes Staging. It returns where the held entries went. On failure
// it puts back what it moved, and says what it could not.
func (p *Place) swapInside(held []string, stamp string) (string, error) {
	var moves []move
	fail := func(err error) (string, error) {
		err = fmt.Errorf("datadir %s: the restored datadir %s did not take its place: %w", p.Dir, p.Staging, err)
		if uerr := undo(moves); uerr != nil {
			err = fmt.Errorf("%w (and putting back what it held failed, the rest is in %s: %v)", err, filepath.Join(p.Dir, insideReplaced+stamp), uerr)
		}
		return "", err
	}
	replaced := ""
	if len(held) > 0 {
		replaced = filepath.Join(p.Dir, insideReplaced+stamp)
		if err := os.Mkdir(replaced, physical.DirMode); err != nil {
			return fail(err)
		}
		moves = append(moves, move{to: replaced, made: true})
		for _, n := range held {
			m := move{from: filepath.Join(p.Dir, n), to: filepath.Join(replaced, n)}
			if err := os.Rename(m.from, m.to); err != nil {
				return fail(err)
			}
			moves = append(moves, m)
		}
	}
	restored, err := os.ReadDir(p.Staging)
	if err != nil {
		return fail(err)
	}
	for _, e := range restored {
		m := move{from: filepath.Join(p.Staging, e.Name()), to: filepath.Join(p.Dir, e.Name())}
		if _, err := os.Lstat(m.to); err == nil && e.Name() == lostFound {
			// The source's own lost+found, restored: this filesystem's
			// stays.
			if err := os.RemoveAll(m.from); err != nil {
				return fail(err)
			}
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fail(fmt.Errorf("%s appeared there while the restore ran (did something start a server on it?); the restore never writes over it", m.to))
		}
		if err := os.Rename(m.from, m.to); err != nil {
			return fail(err)
		}
		moves = append(moves, m)
	}
	if err := os.Remove(p.Staging); err != nil {
		return fail(err)
	}
	return replaced, nil
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
