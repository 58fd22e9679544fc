package restore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/physical"
)

// A server's options can keep files of its datadir's state outside the
// datadir: the redo log (innodb_log_group_home_dir), the undo tablespaces
// (innodb_undo_directory), the system tablespace (innodb_data_home_dir,
// innodb_data_file_path), Aria's log (aria_log_dir_path), the binary logs
// (log_bin, log_bin_index) and the relay logs (relay_log,
// relay_log_index). A datadir restored into place and started with such
// options would meet the old redo log, undo, Aria log, binary and relay
// logs of another state there: InnoDB would apply a foreign redo log or
// refuse to start, Aria would recover its tables from another state's
// log, the binary log would continue another server's history (and its
// GTID state), and replication would resume from relay logs the restored
// position does not describe. So a
// restore into place where the server's options are known checks those
// places before it writes anything and refuses if they hold such files,
// unless force: then, at the swap, they are moved aside into
// <dir>/backstream.replaced-<time> (never deleted), and the restored
// datadir's redo log, undo tablespaces and system tablespace move to where
// the server looks for them, as mariabackup --move-back would put them,
// and so does Aria's log. The binary and relay logs are not in a backup:
// the server starts new ones.

// outside is one place the server's options put files of the datadir's
// state outside it.
type outside struct {
	option string // the option and its value, where it was set
	dir    string // absolute, outside the datadir
	match  func(name string) bool
	// place: the restored datadir's files of this kind go to dir.
	place bool
}

var (
	redoFile = regexp.MustCompile(`^ib_logfile[0-9]+$`)
	undoFile = regexp.MustCompile(`^undo[0-9]{3}$`)
	ariaFile = regexp.MustCompile(`^(aria_log\.[0-9]{8}|aria_log_control)$`)
)

// outsidePlaces lists where sf puts files of the datadir dir's state
// outside it.
func outsidePlaces(dir string, sf mariadb.ServerFiles) []outside {
	abs := func(p string) string {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return filepath.Clean(p)
	}
	describe := func(name string, s mariadb.Setting) string {
		return fmt.Sprintf("%s = %s (%s)", name, s.Value, s.From)
	}
	var out []outside
	add := func(o outside) {
		if !within(dir, o.dir) {
			out = append(out, o)
		}
	}
	if s := sf.LogGroupHomeDir; s.Set() {
		add(outside{option: describe("innodb_log_group_home_dir", s), dir: abs(s.Value), match: redoFile.MatchString, place: true})
	}
	if s := sf.UndoDirectory; s.Set() {
		add(outside{option: describe("innodb_undo_directory", s), dir: abs(s.Value), match: undoFile.MatchString, place: true})
	}
	if sf.DataHomeDir.Set() || sf.DataFilePath.Set() {
		s, name := sf.DataHomeDir, "innodb_data_home_dir"
		if !s.Set() {
			s, name = sf.DataFilePath, "innodb_data_file_path"
		}
		byDir := map[string][]string{}
		var dirs []string
		for _, f := range sf.DataFileNames() {
			p := f
			if !filepath.IsAbs(p) {
				p = filepath.Join(abs(sf.DataHomeDir.Value), f)
			}
			d := filepath.Dir(p)
			if byDir[d] == nil {
				dirs = append(dirs, d)
			}
			byDir[d] = append(byDir[d], filepath.Base(p))
		}
		for _, d := range dirs {
			names := byDir[d]
			add(outside{option: describe(name, s), dir: d, place: true,
				match: func(n string) bool { return containsString(names, n) }})
		}
	}
	if s := sf.AriaLogDirPath; s.Set() {
		add(outside{option: describe("aria_log_dir_path", s), dir: abs(s.Value), match: ariaFile.MatchString, place: true})
	}
	// logs adds a numbered log's places: its files (and its index, unless
	// one is named apart), and the index named apart.
	logs := func(option string, s mariadb.Setting, indexOption string, idx mariadb.Setting, state bool) {
		if !s.Set() {
			return
		}
		if s.Value != "" { // without a name, the logs are in the datadir
			base := abs(s.Value)
			base = strings.TrimSuffix(base, filepath.Ext(base)) // the server ignores an extension
			name := filepath.Base(base)
			numbered := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `\.[0-9]+$`)
			index := !idx.Set()
			add(outside{option: describe(option, s), dir: filepath.Dir(base), match: func(n string) bool {
				return numbered.MatchString(n) || (state && n == name+".state") || (index && n == name+".index")
			}})
		}
		if idx.Set() && idx.Value != "" {
			p := abs(idx.Value)
			if filepath.Ext(p) == "" {
				p += ".index"
			}
			add(outside{option: describe(indexOption, idx), dir: filepath.Dir(p), match: func(n string) bool { return n == filepath.Base(p) }})
		}
	}
	logs("log_bin", sf.LogBin, "log_bin_index", sf.LogBinIndex, true)
	logs("relay_log", sf.RelayLog, "relay_log_index", sf.RelayLogIndex, false)
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// files lists the names in dir that o matches (none if dir is absent).
func (o outside) files(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.option, err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && o.match(e.Name()) {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// held refuses a place that holds files of another state.
func (o outside) held(old []string) error {
	return &RefusedError{fmt.Errorf("%s is outside the datadir, and %s holds %s of another state (%d files), which the server started on the restored datadir would use; --force moves them aside to %s when the restored datadir takes its place",
		o.option, o.dir, old[0], len(old), filepath.Join(o.dir, replacedPrefix+"<time>"))}
}

// checkOutside refuses the places outside the datadir that hold files of
// another state, unless force, and those a running process uses (force or
// not).
func checkOutside(outs []outside, force bool) error {
	for _, o := range outs {
		old, err := o.files(o.dir)
		if err != nil {
			return err
		}
		if len(old) == 0 {
			continue
		}
		if !force {
			return o.held(old)
		}
		paths := make([]string, len(old))
		for i, n := range old {
			paths[i] = filepath.Join(o.dir, n)
		}
		u, err := whoUses("/proc", paths)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", o.option, u.path, err)
		}
		if u != nil {
			return &RefusedError{fmt.Errorf("%s: %s is in use by a running process (%s); a restore never places files where a server runs", o.option, u.path, u)}
		}
	}
	return nil
}

// replacedPrefix names the directory, in a place outside the datadir, that
// takes what the place held of the replaced state.
const replacedPrefix = "backstream.replaced-"

// Aside is what a swap moved aside or placed outside the datadir.
type Aside struct {
	Option string   `json:"option"`       // the option that names the place, and where it was set
	Dir    string   `json:"dir"`          // the place
	Files  []string `json:"files"`        // the files (names)
	To     string   `json:"to,omitempty"` // where they went: the directory they were moved aside to, or "" for the restored files placed in Dir
}

func (a Aside) String() string {
	if a.To == "" {
		return fmt.Sprintf("%s: the restored %s placed in %s", a.Option, strings.Join(a.Files, ", "), a.Dir)
	}
	return fmt.Sprintf("%s: %s of the replaced state moved aside to %s", a.Option, strings.Join(a.Files, ", "), a.To)
}

// move is one rename a swap made, or a directory it made (to, with made),
// to be undone if the swap fails.
type move struct {
	from, to string
	made     bool
}

// swapOutside moves the old files of each place aside and the restored
// ones from staging into it. It returns what it did, and the moves to
// undo (latest last) if what follows fails.
func swapOutside(outs []outside, staging, stamp string, force bool) ([]Aside, []move, error) {
	var done []Aside
	var moves []move
	for _, o := range outs {
		old, err := o.files(o.dir)
		if err != nil {
			return done, moves, err
		}
		if len(old) > 0 {
			if !force {
				return done, moves, o.held(old)
			}
			aside := filepath.Join(o.dir, replacedPrefix+stamp)
			switch err := os.Mkdir(aside, physical.DirMode); {
			case err == nil:
				moves = append(moves, move{to: aside, made: true})
			case !errors.Is(err, fs.ErrExist):
				return done, moves, fmt.Errorf("%s: moving %s aside: %w", o.option, o.dir, err)
			}
			for _, n := range old {
				m := move{from: filepath.Join(o.dir, n), to: filepath.Join(aside, n)}
				if err := os.Rename(m.from, m.to); err != nil {
					return done, moves, fmt.Errorf("%s: moving %s aside: %w", o.option, m.from, err)
				}
				moves = append(moves, m)
			}
			done = append(done, Aside{Option: o.option, Dir: o.dir, Files: old, To: aside})
		}
		if !o.place {
			continue
		}
		restored, err := o.files(staging)
		if err != nil {
			return done, moves, err
		}
		if len(restored) == 0 {
			continue
		}
		made, err := mkdirLike(o.dir, staging)
		for _, d := range made {
			moves = append(moves, move{to: d, made: true})
		}
		if err != nil {
			return done, moves, fmt.Errorf("%s: %w", o.option, err)
		}
		for _, n := range restored {
			m := move{from: filepath.Join(staging, n), to: filepath.Join(o.dir, n)}
			if err := moveFile(m.from, m.to); err != nil {
				return done, moves, fmt.Errorf("%s: placing the restored %s in %s: %w", o.option, n, o.dir, err)
			}
			moves = append(moves, m)
		}
		done = append(done, Aside{Option: o.option, Dir: o.dir, Files: restored})
	}
	return done, moves, nil
}

// undo reverses moves, latest first, and returns the first failure.
func undo(moves []move) error {
	var first error
	for i := len(moves) - 1; i >= 0; i-- {
		m := moves[i]
		if m.made {
			if err := os.Remove(m.to); err != nil && first == nil {
				first = err
			}
			continue
		}
		if err := moveFile(m.to, m.from); err != nil && first == nil {
			first = fmt.Errorf("moving %s back to %s: %w", m.to, m.from, err)
		}
	}
	return first
}

// mkdirLike creates dir, if missing, and its missing parents, owned as
// like is, with the datadir's mode. It returns the directories it made,
// parents first.
func mkdirLike(dir, like string) ([]string, error) {
	if _, err := os.Stat(dir); err == nil {
		return nil, nil
	}
	made, err := mkdirLike(filepath.Dir(dir), like)
	if err != nil {
		return made, err
	}
	if err := os.Mkdir(dir, physical.DirMode); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return made, nil
		}
		return made, err
	}
	return append(made, dir), chownLike(dir, like)
}

// chownLike gives path the owner and group of like.
func chownLike(path, like string) error {
	fi, err := os.Stat(like)
	if err != nil {
		return err
	}
	st := fi.Sys().(*syscall.Stat_t)
	if int(st.Uid) == os.Geteuid() && int(st.Gid) == os.Getegid() {
		return nil
	}
	return os.Lchown(path, int(st.Uid), int(st.Gid))
}

// moveFile renames from to to, a file that must not exist; across
// filesystems it copies (mode and owner kept, synced) and removes from.
func moveFile(from, to string) error {
	if _, err := os.Lstat(to); err == nil {
		return fmt.Errorf("%s exists already", to)
	}
	err := os.Rename(from, to)
	if !errors.Is(err, syscall.EXDEV) {
		return err
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Chmod(fi.Mode().Perm())
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = chownLike(to, from)
	}
	if err != nil {
		os.Remove(to)
		return err
	}
	return os.Remove(from)
}
