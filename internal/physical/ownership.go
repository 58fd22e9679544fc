package physical

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
)

// SetOwnership makes dir usable by the server running as user: it chowns
// everything under dir (and dir itself) to the user and its primary group,
// and sets directories to 0700 and regular files to 0660. With user "" only
// the modes are set. Symbolic links are re-owned but not followed, so a link
// inside the datadir cannot make us chown something outside it.
func SetOwnership(dir, userName string) error {
	uid, gid := -1, -1
	if userName != "" {
		u, err := user.Lookup(userName)
		if err != nil {
			var unknown user.UnknownUserError
			if errors.As(err, &unknown) {
				return fmt.Errorf("set ownership of %s: no such user %q on this host (the server's user, usually mysql): %w", dir, userName, err)
			}
			return fmt.Errorf("set ownership of %s: look up user %q: %w", dir, userName, err)
		}
		if uid, err = strconv.Atoi(u.Uid); err != nil {
			return fmt.Errorf("set ownership of %s: user %q has uid %q: %w", dir, userName, u.Uid, err)
		}
		if gid, err = strconv.Atoi(u.Gid); err != nil {
			return fmt.Errorf("set ownership of %s: user %q has gid %q: %w", dir, userName, u.Gid, err)
		}
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("set ownership: %w", err)
		}
		if uid >= 0 {
			if err := os.Lchown(p, uid, gid); err != nil {
				return fmt.Errorf("set ownership: %w", err)
			}
		}
		var mode fs.FileMode
		switch {
		case d.IsDir():
			mode = DirMode
		case d.Type().IsRegular():
			mode = FileMode
		default:
			return nil // symlinks and the like: chmod would follow a link
		}
		if err := os.Chmod(p, mode); err != nil {
			return fmt.Errorf("set ownership: %w", err)
		}
		return nil
	})
}

// DatadirSize sums the sizes of the regular files under dir, to estimate
// how long storing a datadir (a merged backup's, all of it stored) takes.
// Entries that cannot be read are skipped: an estimate must not fail the
// operation. A backup streams less of a server's datadir: see
// estimateCopy.
func DatadirSize(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // skip this entry (WalkDir skips an unreadable directory's contents)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			total += info.Size()
		}
		return nil
	})
	return total
}

// DefaultOwner is the owner a restored datadir gets when none is asked for:
// "mysql" when running as root on a host that has that user, otherwise
// nobody (the files stay with the invoking user).
func DefaultOwner() string {
	if os.Geteuid() != 0 {
		return ""
	}
	if _, err := user.Lookup("mysql"); err != nil {
		return ""
	}
	return "mysql"
}
