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
}

// PlaceFor checks that dir can take a restore: no running process uses
// it, and it is absent or empty unless force (its contents then move
// aside at Swap). Nothing is changed.
func PlaceFor(dir string, force bool) (*Place, error) {
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
	return &Place{Dir: abs, Staging: filepath.Join(filepath.Dir(abs), "."+filepath.Base(abs)+".backstream-new")}, nil
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

// Swap renames the finished Staging into Dir. A Dir with contents is
// renamed aside first, to <Dir>.replaced-<time>, which Swap returns ("" if
// nothing was replaced); an empty one is replaced. If the restored
// directory cannot take its place, what was there is put back.
func (p *Place) Swap() (replaced string, err error) {
	if err := notInUse(p.Dir); err != nil {
		return "", err
	}
	entries, err := os.ReadDir(p.Dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return "", fmt.Errorf("datadir %s: %w", p.Dir, err)
	case len(entries) > 0:
		replaced = p.Dir + ".replaced-" + time.Now().UTC().Format("20060102T150405Z")
		if err := os.Rename(p.Dir, replaced); err != nil {
			return "", fmt.Errorf("datadir %s: moving it aside: %w", p.Dir, err)
		}
	}
	if err := os.Rename(p.Staging, p.Dir); err != nil {
		err = fmt.Errorf("datadir %s: the restored datadir %s did not take its place: %w", p.Dir, p.Staging, err)
		if replaced != "" {
			if rerr := os.Rename(replaced, p.Dir); rerr != nil {
				err = fmt.Errorf("%w (and what it held stays in %s: %v)", err, replaced, rerr)
			}
		}
		return "", err
	}
	return replaced, relabel(p.Dir)
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
