// Package fidelitytest is the fidelity corpus and what compares servers
// with it: fixtures (SQL files adapted from MariaDB's own regression tests
// and from bug reports against dump tools, each naming where it comes
// from) are loaded into a server, one database each, through the real
// mariadb client, and databases are fingerprinted (every object's
// definition, every row of every column rendered by its type, CHECKSUM
// TABLE), so that a source and its restore can be compared by any backup
// path and by the peers' tools alike.
package fidelitytest

import (
	"bufio"
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/backstream/backstream/internal/mariadb"
)

//go:embed corpus/*.sql
var corpus embed.FS

// Modes are the sql_modes both servers run with: every logical fixture is
// dumped and loaded under each.
var Modes = map[string]string{
	"strict":     "TRADITIONAL",
	"permissive": "",
}

// TargetArgs are the mariadbd options of a server a logical backup of the
// corpus is restored into: the storage engines the server ships as plugins
// (ARCHIVE, BLACKHOLE), which a fixture installs on its source with
// INSTALL PLUGIN. A physical copy carries mysql.plugin along; a logical
// one, like mariadb-dump's, leaves the target's plugins to its DBA.
var TargetArgs = []string{"--plugin-load-add=ha_archive", "--plugin-load-add=ha_blackhole"}

// Paths a fixture can take.
const (
	Logical  = "logical"
	Physical = "physical"
)

// Fixture is one file of the corpus: SQL that builds one database.
type Fixture struct {
	Name     string   // the file name without .sql
	Database string   // fx_<Name>, the database it is loaded into
	Title    string   // what it covers
	Source   string   // the public test or bug report it comes from
	Paths    []string // Logical, Physical (default both)
	Modes    []string // keys of Modes (default all)
	// Refuse names the object a backup must refuse, naming it, at backup
	// time (the fixture then runs alone); empty: the round trip must be
	// exact.
	Refuse string
	// Since is the oldest MariaDB the fixture can be loaded into (zero:
	// every version). LogicalSince is the oldest a logical backup of it
	// can be restored into: an older target refuses it by design.
	Since, LogicalSince Guard
	SQL                 []byte
}

// Guard is a version guard: the oldest MariaDB (major, minor) that has
// what a fixture needs, and what that is.
type Guard struct {
	Major, Minor int
	Why          string
}

// Allows reports whether a server of version (@@version, or
// major.minor.patch) passes the guard; when it does not, why says what
// the fixture needs, for the test log.
func (g Guard) Allows(version string) (ok bool, why string) {
	major, minor, _, err := mariadb.ParseVersion(version)
	if err != nil {
		return false, err.Error()
	}
	if major > g.Major || major == g.Major && minor >= g.Minor {
		return true, ""
	}
	return false, fmt.Sprintf("needs MariaDB %d.%d or newer (%s)", g.Major, g.Minor, g.Why)
}

// RunsOn reports whether the fixture can be loaded into a server of
// version, and if not why.
func (f *Fixture) RunsOn(version string) (ok bool, why string) {
	return f.Since.Allows(version)
}

func parseGuard(value string) (Guard, error) {
	v, why, _ := strings.Cut(value, " ")
	major, minor, ok := strings.Cut(v, ".")
	var g Guard
	var err1, err2 error
	g.Major, err1 = strconv.Atoi(major)
	g.Minor, err2 = strconv.Atoi(minor)
	g.Why = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(why), "("), ")")
	if !ok || err1 != nil || err2 != nil || g.Why == "" {
		return Guard{}, fmt.Errorf("%q: want major.minor (what it needs)", value)
	}
	return g, nil
}

// Takes reports whether the fixture runs on path under mode.
func (f *Fixture) Takes(path, mode string) bool {
	return slices.Contains(f.Paths, path) && slices.Contains(f.Modes, mode)
}

// Corpus returns every fixture, sorted by name.
func Corpus() ([]*Fixture, error) {
	names, err := fs.Glob(corpus, "corpus/*.sql")
	if err != nil {
		return nil, err
	}
	var out []*Fixture
	for _, n := range names {
		data, err := corpus.ReadFile(n)
		if err != nil {
			return nil, err
		}
		f, err := parse(strings.TrimSuffix(path.Base(n), ".sql"), data)
		if err != nil {
			return nil, fmt.Errorf("fixture %s: %w", n, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// parse reads a fixture's header, comment lines at the top of the form
// "-- key: value":
//
//	-- title: what the fixture covers (required)
//	-- source: the public test or bug report it comes from (required)
//	-- paths: logical, physical
//	-- modes: strict, permissive
//	-- refuse: db.table
//	-- since: 10.7 (what it needs: UUID)
//	-- logical-since: 10.11 (what a logical restore of it needs)
//
// since is the version guard of a fixture whose syntax or types an older
// server lacks: the corpus runs it on that version and newer only, and a
// test of an older server names it as skipped. logical-since names the
// oldest server a logical backup of the fixture restores into; an older
// one refuses it, naming its tables.
func parse(name string, data []byte) (*Fixture, error) {
	if strings.ContainsFunc(name, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') }) {
		return nil, fmt.Errorf("name %q: use a-z, 0-9 and _", name)
	}
	f := &Fixture{Name: name, Database: "fx_" + name, Paths: []string{Logical, Physical}, Modes: []string{"permissive", "strict"}, SQL: data}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		rest, ok := strings.CutPrefix(line, "-- ")
		if !ok {
			break
		}
		key, value, ok := strings.Cut(rest, ":")
		if !ok {
			continue // a comment
		}
		value = strings.TrimSpace(value)
		list := func() []string {
			var l []string
			for _, v := range strings.Split(value, ",") {
				l = append(l, strings.TrimSpace(v))
			}
			return l
		}
		switch key {
		case "title":
			f.Title = value
		case "source":
			f.Source = value
		case "paths":
			f.Paths = list()
			for _, p := range f.Paths {
				if p != Logical && p != Physical {
					return nil, fmt.Errorf("paths: unknown path %q", p)
				}
			}
		case "modes":
			f.Modes = list()
			for _, m := range f.Modes {
				if _, ok := Modes[m]; !ok {
					return nil, fmt.Errorf("modes: unknown mode %q", m)
				}
			}
		case "refuse":
			f.Refuse = value
		case "since", "logical-since":
			g, err := parseGuard(value)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			if key == "since" {
				f.Since = g
			} else {
				f.LogicalSince = g
			}
		default:
			// A comment that happens to hold a colon.
		}
	}
	if f.Title == "" || f.Source == "" {
		return nil, fmt.Errorf("the header needs a title and a source")
	}
	return f, nil
}
