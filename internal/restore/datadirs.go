package restore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/backstream/backstream/internal/filelocks"
	"github.com/backstream/backstream/internal/physical"
)

// Tables created with DATA DIRECTORY keep their tablespace outside the
// datadir. mariabackup 10.11 streams such a tablespace under its datadir
// name (<db>/<t>.ibd) together with the datadir's <db>/<t>.isl, a text
// file holding the external path; MyISAM's DATA and INDEX DIRECTORY
// symbolic links are streamed as the files they point to (the writer
// never makes a link). An .isl kept as it is makes the restored server
// look for the source's path: on the source's host it finds the live
// source's file there too and will not open the table ("A tablespace has
// been found in multiple places"), or opens the wrong file. So a restore
// takes every .isl out of what it extracted (prepare does not need them:
// it finds tablespaces by their datadir names) and puts each tablespace
// where it was asked: in the datadir, without .isl (the default), or in a
// mapped directory with an .isl pointing there. Nothing a restore leaves
// points outside its target but what a mapping asked for.

// DirMap places the tablespaces a backup recorded under the external data
// directory Old (and below it) under New instead, keeping the rest of
// their path.
type DirMap struct{ Old, New string }

// ParseDirMap reads OLD=NEW, two absolute paths.
func ParseDirMap(s string) (DirMap, error) {
	old, dst, ok := strings.Cut(s, "=")
	if !ok || !filepath.IsAbs(old) || !filepath.IsAbs(dst) {
		return DirMap{}, fmt.Errorf("%q: want OLD=NEW, two absolute directories, e.g. /data/ext=/restore/ext", s)
	}
	return DirMap{Old: filepath.Clean(old), New: filepath.Clean(dst)}, nil
}

// Placement says where the tablespaces of one external data directory
// went.
type Placement struct {
	From   string   // the data directory the backup recorded
	To     string   // where they are now: the mapped directory, or the datadir
	Mapped bool     // To is a mapped directory; the .isl files point there
	Files  []string // the tablespaces, by their datadir names
}

func (p Placement) String() string {
	switch {
	case p.Mapped && len(p.Files) == 0:
		return fmt.Sprintf("DATA DIRECTORY %s: the backup has no tablespace there; nothing placed in %s", p.From, p.To)
	case p.Mapped:
		return fmt.Sprintf("DATA DIRECTORY %s: %d tablespaces placed in %s (%s)", p.From, len(p.Files), p.To, strings.Join(p.Files, ", "))
	}
	return fmt.Sprintf("DATA DIRECTORY %s: %d tablespaces placed in the datadir %s (%s); their tables no longer show DATA DIRECTORY",
		p.From, len(p.Files), p.To, strings.Join(p.Files, ", "))
}

// RefusedError is a restore refused for what it was asked: a mapped data
// directory that a running process uses or that already holds a file the
// restore would place there, or a mapping without prepare. Nothing was
// written outside the target.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// Refused marks the error a refusal of what was asked: a usage error.
func (e *RefusedError) Refused() bool { return true }

// checkDirMaps refuses mappings a restore into target cannot honour, before
// anything is written: a destination inside the target (the server would
// take its directories for databases), and one a running process uses.
func checkDirMaps(maps []DirMap, target string, prepare bool) error {
	if len(maps) == 0 {
		return nil
	}
	if !prepare {
		return &RefusedError{errors.New("placing DATA DIRECTORY tablespaces elsewhere needs prepare: prepare finds them in the datadir")}
	}
	for _, m := range maps {
		if within(target, m.New) {
			return &RefusedError{fmt.Errorf("data directory %s is inside the target %s, where the server would take it for a database; map it outside the target", m.New, target)}
		}
		if err := notInUse(m.New); err != nil {
			return err
		}
	}
	return nil
}

// takeLinkFiles reads and removes every <db>/<t>.isl under dir (a link's
// directory: prepare would copy an increment's .isl into the base) and
// records in recorded the external path each tablespace's .isl gave, by
// the tablespace's datadir name, over what an earlier link recorded.
func takeLinkFiles(dir string, recorded map[string]string) error {
	isls, err := filepath.Glob(filepath.Join(dir, "*", "*.isl"))
	if err != nil {
		return err
	}
	for _, isl := range isls {
		data, err := os.ReadFile(isl)
		if err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		rel, _ := filepath.Rel(dir, isl)
		// The server trims control characters and spaces at the end.
		p := strings.TrimRightFunc(string(data), func(r rune) bool { return r <= ' ' })
		if !filepath.IsAbs(p) {
			return fmt.Errorf("restore: %s holds %q, not the absolute path of a tablespace", rel, p)
		}
		recorded[strings.TrimSuffix(rel, ".isl")+".ibd"] = filepath.Clean(p)
		if err := os.Remove(isl); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
	}
	return nil
}

// place puts each tablespace the backup recorded outside the datadir
// where opt asks (see the comment at the top of this file) and reports
// each data directory to opt.Placed. A mapped tablespace is moved out of
// the target into a file created for it (never over an existing one) and
// its .isl written; what place creates outside the target is recorded in
// t, for Finish to own and Abandon to remove.
func (t *Target) place(recorded map[string]string, opt Options) error {
	if opt.KeepLinkFiles {
		for name, ext := range recorded {
			if _, err := os.Lstat(filepath.Join(t.work, name)); errors.Is(err, fs.ErrNotExist) {
				continue // dropped while the backup ran
			}
			isl := filepath.Join(t.work, strings.TrimSuffix(name, ".ibd")+".isl")
			if err := os.WriteFile(isl, []byte(ext), physical.FileMode); err != nil {
				return fmt.Errorf("restore: %w", err)
			}
		}
		return nil
	}
	names := make([]string, 0, len(recorded))
	for name := range recorded {
		names = append(names, name)
	}
	sort.Strings(names)
	type key struct {
		from string
		m    *DirMap
	}
	var order []key
	groups := map[key][]string{}
	// used holds the mappings a tablespace went to. Each is checked once
	// more before its first tablespace moves, not once per tablespace:
	// checkDirMaps checked them all before the restore began, but the
	// stream and prepare since may have taken hours, in which a server
	// can have started there; and notInUse reads all of /proc, too slow
	// to repeat for each of thousands of tablespaces. Against a server
	// that starts while they move, moveOut's refusal to write over an
	// existing file holds.
	used := map[*DirMap]bool{}
	for _, name := range names {
		ext := recorded[name]
		k := key{from: filepath.Dir(filepath.Dir(ext)), m: dirMapFor(opt.DataDirs, ext)}
		if k.m != nil {
			// A tablespace dropped while the backup ran has an .isl but no file.
			if _, err := os.Lstat(filepath.Join(t.work, name)); errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if !used[k.m] {
				if err := notInUse(k.m.New); err != nil {
					return err
				}
				used[k.m] = true
			}
			if err := t.moveOut(name, ext, k.m); err != nil {
				return err
			}
		}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], name)
	}
	if opt.Placed == nil {
		return nil
	}
	for _, k := range order {
		p := Placement{From: k.from, To: t.dir, Files: groups[k]}
		if k.m != nil {
			p.To, p.Mapped = k.m.New, true
		}
		opt.Placed(p)
	}
	for i := range opt.DataDirs {
		if m := &opt.DataDirs[i]; !used[m] {
			opt.Placed(Placement{From: m.Old, To: m.New, Mapped: true})
		}
	}
	return nil
}

// dirMapFor returns the mapping of the longest Old that holds path, or nil.
func dirMapFor(maps []DirMap, path string) *DirMap {
	var best *DirMap
	for i := range maps {
		if m := &maps[i]; within(m.Old, path) && (best == nil || len(m.Old) > len(best.Old)) {
			best = m
		}
	}
	return best
}

// moveOut moves tablespace name of the target to its place under m and
// points its .isl there; place has checked that m is not in use.
func (t *Target) moveOut(name, ext string, m *DirMap) error {
	rel, err := filepath.Rel(m.Old, ext)
	if err != nil {
		return err
	}
	dst := filepath.Join(m.New, rel)
	if err := t.mkdirOutside(filepath.Dir(dst)); err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, physical.FileMode)
	if errors.Is(err, fs.ErrExist) {
		return &RefusedError{fmt.Errorf("data directory %s: %s already exists, and a restore never writes over a file outside its target; map the data directory elsewhere", m.New, dst)}
	}
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	t.outside = append(t.outside, dst)
	// The rename replaces the empty file made above, which only reserved
	// the name; across filesystems the bytes are copied into it.
	src := filepath.Join(t.work, name)
	err = os.Rename(src, dst)
	if errors.Is(err, syscall.EXDEV) {
		err = copyInto(f, src)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("restore: place %s in %s: %w", name, dst, err)
	}
	isl := filepath.Join(t.work, strings.TrimSuffix(name, ".ibd")+".isl")
	if err := os.WriteFile(isl, []byte(dst), physical.FileMode); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	return nil
}

// copyInto copies src into f (another filesystem, where rename cannot
// go), syncs it and removes src.
func copyInto(f *os.File, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if _, err := io.Copy(f, in); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return os.Remove(src)
}

// mkdirOutside creates dir and its missing parents, recording each one it
// creates.
func (t *Target) mkdirOutside(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("restore: %w", err)
	}
	if err := t.mkdirOutside(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, physical.DirMode); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("restore: %w", err)
	}
	t.outside = append(t.outside, dir)
	return nil
}

// notInUse refuses dir if a running process has its working directory or
// an open file there, or holds a lock on a file there: a server's datadir is
// its working directory, and it keeps its tablespaces open and locks some.
// It reads /proc and fails closed: a process whose entries cannot be read
// (another user's, when not run as root) might use dir, and is an error
// naming it. Two kinds of unreadable entries are passed over: those that
// vanish because their process (or its file) went away meanwhile, as such
// races with exiting processes are normal; and those of a process holding
// privileges that root, running this, lacks (a container's or a virtual
// machine's init, which even root inside cannot inspect, and which is no
// server one restores for; /proc/locks still shows what it locks). A dir
// that does not exist is in use by nobody.
func notInUse(dir string) error {
	return notInUseProc("/proc", dir)
}

// notInUseProc is notInUse reading the process table at proc.
func notInUseProc(proc, dir string) error {
	u, err := whoUses(proc, []string{dir})
	if err != nil {
		return fmt.Errorf("data directory %s: %w", u.path, err)
	}
	if u != nil {
		return &RefusedError{fmt.Errorf("data directory %s is in use by a running process (%s); a restore never places files where a server runs", u.path, u)}
	}
	return nil
}

// user is a process using one of the paths whoUses looked for.
type user struct {
	path      string // the path it uses (symbolic links resolved)
	pid, comm string
	open      string // what it has open there ("" for a lock)
	lock      string // the file it holds a lock on ("" for an open file)
}

func (u *user) String() string {
	if u.lock != "" {
		return fmt.Sprintf("pid %s holds a lock on %s", u.pid, u.lock)
	}
	return fmt.Sprintf("pid %s, %s, has %s open", u.pid, u.comm, u.open)
}

// whoUses returns a process that works in one of paths, has a file there
// open or holds a lock on one (nil if none does), as notInUse describes,
// reading the process table at proc. Its error, which fails closed, comes
// with a user naming the path it was about.
func whoUses(proc string, paths []string) (*user, error) {
	var real []string
	for _, p := range paths {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		real = append(real, p)
	}
	if len(real) == 0 {
		return nil, nil
	}
	about := &user{path: real[0]}
	if len(real) > 1 {
		about.path = fmt.Sprintf("%s (and %d more)", real[0], len(real)-1)
	}
	procs, err := os.ReadDir(proc)
	if err != nil {
		return about, fmt.Errorf("cannot tell whether a running process uses it: %w; a restore reads %s to see which processes use a directory, and never places files where one may", err, proc)
	}
	ours, err := permittedCaps(filepath.Join(proc, "self"))
	if err != nil {
		return about, fmt.Errorf("cannot tell whether a running process uses it: %w", err)
	}
	root := os.Geteuid() == 0
	self := strconv.Itoa(os.Getpid())
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil || p.Name() == self {
			continue
		}
		base := filepath.Join(proc, p.Name())
		comm := func() string {
			b, _ := os.ReadFile(filepath.Join(base, "comm"))
			return strings.TrimSpace(string(b))
		}
		unreadable := func(err error) error {
			if passOver(base, ours, root, err) {
				return nil
			}
			return fmt.Errorf("cannot tell whether a running process uses it: pid %s (%s): %w; a restore never places files where a process may use them: run it as root, which can read every process's entries, or as the user who runs the server",
				p.Name(), comm(), err)
		}
		fds, err := os.ReadDir(filepath.Join(base, "fd"))
		if err != nil {
			if err := unreadable(err); err != nil {
				return about, err
			}
			continue
		}
		links := []string{filepath.Join(base, "cwd")}
		for _, fd := range fds {
			links = append(links, filepath.Join(base, "fd", fd.Name()))
		}
		for _, l := range links {
			used, err := os.Readlink(l)
			if err != nil {
				if err := unreadable(err); err != nil {
					return about, err
				}
				continue
			}
			for _, path := range real {
				if within(path, used) {
					return &user{path: path, pid: p.Name(), comm: comm(), open: used}, nil
				}
			}
		}
	}
	return lockHolder(filepath.Join(proc, "locks"), real, about)
}

// gone reports whether err reading a process's entry in /proc means that
// the process, or the file descriptor, no longer exists: an exiting
// process (or a zombie, which holds nothing open) has no working directory
// and no descriptors to read.
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

// passOver reports whether err, reading an entry of the process whose
// /proc directory is base, leaves nothing to find there: the entry or the
// process went away, or, run as root (ours being root's permitted
// capabilities here), the process holds capabilities beyond ours, so that
// no one with our privileges can read it. Not run as root, any process
// refused to us might be a server of another user: never passed over.
func passOver(base string, ours uint64, root bool, err error) bool {
	if gone(err) {
		return true
	}
	if !root || !errors.Is(err, fs.ErrPermission) {
		return false
	}
	theirs, cerr := permittedCaps(base)
	return gone(cerr) || (cerr == nil && theirs&^ours != 0)
}

// permittedCaps reads the permitted capabilities of the process whose
// /proc directory is base (readable whoever runs it).
func permittedCaps(base string) (uint64, error) {
	status, err := os.ReadFile(filepath.Join(base, "status"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "CapPrm:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, fmt.Errorf("%s/status has no CapPrm line", base)
}

// lockHolder returns a process holding a lock on a file in one of paths,
// as locks (the kernel's list of file locks, readable by anyone) says: a
// MariaDB server locks ibdata1 and aria_log_control, so this sees one whose
// entries in /proc could not be read, and one in another PID namespace.
// Its error comes with about.
func lockHolder(locks string, paths []string, about *user) (*user, error) {
	held, err := filelocks.Holders(locks)
	if err != nil {
		return about, fmt.Errorf("cannot tell whether a running process uses it: %w", err)
	}
	if len(held) == 0 {
		return nil, nil
	}
	var found *user
	for _, top := range paths {
		err := filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if gone(err) {
					return nil
				}
				return fmt.Errorf("cannot tell whether a running process uses it: %w", err)
			}
			fi, err := d.Info()
			if err != nil {
				return nil // removed meanwhile
			}
			f, ok := filelocks.Of(fi)
			if !ok {
				return nil
			}
			if pid, ok := held[f]; ok {
				found = &user{path: top, pid: pid, lock: path}
				return filepath.SkipAll
			}
			return nil
		})
		if err != nil {
			return &user{path: top}, err
		}
		if found != nil {
			return found, nil
		}
	}
	return nil, nil
}

// within reports whether path is dir or below it.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
