package restore

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/mariadb"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// The server's options that put files of the datadir's state outside it
// are found, relative paths taken from the datadir.
func TestOutsidePlaces(t *testing.T) {
	set := func(v string) mariadb.Setting { return mariadb.Setting{Value: v, From: "my.cnf:1"} }
	dir := "/var/lib/mysql"
	outs := outsidePlaces(dir, mariadb.ServerFiles{
		LogGroupHomeDir: set("/redo"),
		UndoDirectory:   set("./"), // in the datadir
		DataHomeDir:     set("../ibdata"),
		DataFilePath:    set("ibdata1:12M;/abs/ibdata2:10M:autoextend"),
		LogBin:          set("/var/log/mysql/mariadb-bin.log"),
		AriaLogDirPath:  set("/aria"),
		RelayLog:        set("/var/log/mysql/relay-bin"),
	})
	type got struct {
		dir, option string
		place       bool
		matches     []string
	}
	names := []string{"ib_logfile0", "ib_logfile101", "undo001", "ibdata1", "ibdata2", "mariadb-bin.000001", "mariadb-bin.index", "mariadb-bin.state", "mariadb-bin.log", "error.log", "mysql-bin.000001",
		"aria_log.00000001", "aria_log_control", "aria_log.1", "relay-bin.000002", "relay-bin.index", "relay-bin.state", "relay-log.info"}
	var all []got
	for _, o := range outs {
		g := got{dir: o.dir, option: o.option, place: o.place}
		for _, n := range names {
			if o.match(n) {
				g.matches = append(g.matches, n)
			}
		}
		all = append(all, g)
	}
	want := []got{
		{"/redo", "innodb_log_group_home_dir = /redo (my.cnf:1)", true, []string{"ib_logfile0", "ib_logfile101"}},
		{"/var/lib/ibdata", "innodb_data_home_dir = ../ibdata (my.cnf:1)", true, []string{"ibdata1"}},
		{"/abs", "innodb_data_home_dir = ../ibdata (my.cnf:1)", true, []string{"ibdata2"}},
		{"/aria", "aria_log_dir_path = /aria (my.cnf:1)", true, []string{"aria_log.00000001", "aria_log_control"}},
		{"/var/log/mysql", "log_bin = /var/log/mysql/mariadb-bin.log (my.cnf:1)", false, []string{"mariadb-bin.000001", "mariadb-bin.index", "mariadb-bin.state"}},
		{"/var/log/mysql", "relay_log = /var/log/mysql/relay-bin (my.cnf:1)", false, []string{"relay-bin.000002", "relay-bin.index"}},
	}
	if len(all) != len(want) {
		t.Fatalf("outsidePlaces: %+v, want %+v", all, want)
	}
	for i := range want {
		if all[i].dir != want[i].dir || all[i].option != want[i].option || all[i].place != want[i].place || strings.Join(all[i].matches, " ") != strings.Join(want[i].matches, " ") {
			t.Errorf("place %d: %+v, want %+v", i, all[i], want[i])
		}
	}
	// A separate index; binary logs in the datadir.
	outs = outsidePlaces(dir, mariadb.ServerFiles{LogBin: set("mariadb-bin"), LogBinIndex: set("/idx/binlogs")})
	if len(outs) != 1 || outs[0].dir != "/idx" || !outs[0].match("binlogs.index") || outs[0].match("mariadb-bin.index") {
		t.Errorf("log_bin_index outside: %+v", outs)
	}
	// A separate index of binary logs kept in the datadir; a relay log
	// index apart from its logs.
	outs = outsidePlaces(dir, mariadb.ServerFiles{LogBin: set(""), LogBinIndex: set("/idx/binlogs"), RelayLog: set("/relay/r"), RelayLogIndex: set("/ridx/r.idx")})
	if len(outs) != 3 || outs[0].dir != "/idx" || !outs[0].match("binlogs.index") || outs[1].dir != "/relay" || !outs[1].match("r.000001") || outs[1].match("r.index") ||
		outs[2].dir != "/ridx" || !outs[2].match("r.idx") {
		t.Errorf("indexes apart: %+v", outs)
	}
	if outs := outsidePlaces(dir, mariadb.ServerFiles{LogBin: set(""), LogGroupHomeDir: set(dir + "/redo"), AriaLogDirPath: set(".")}); len(outs) != 0 {
		t.Errorf("everything in the datadir: %+v", outs)
	}
}

// A place outside the datadir holding files of another state is refused
// without force; with it they move aside at the swap, never deleted, and
// the restored redo log, undo and system tablespaces go where the server
// looks for them. A swap that fails puts everything back.
func TestPlaceWithFilesOutside(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "mysql")
	redo, undoDir, binlogs := filepath.Join(base, "redo"), filepath.Join(base, "undo"), filepath.Join(base, "binlog")
	writeFiles(t, redo, map[string]string{"ib_logfile0": "old redo"})
	writeFiles(t, binlogs, map[string]string{"bin.000001": "old binlog", "bin.index": "old index", "error.log": "not the server's state"})
	set := func(v string) mariadb.Setting { return mariadb.Setting{Value: v, From: "my.cnf:3"} }
	sf := mariadb.ServerFiles{LogGroupHomeDir: set(redo), UndoDirectory: set(undoDir), LogBin: set(filepath.Join(binlogs, "bin"))}

	_, err := PlaceFor(dir, false, sf)
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "innodb_log_group_home_dir = "+redo+" (my.cnf:3) is outside the datadir, and "+redo+" holds ib_logfile0") {
		t.Fatalf("PlaceFor with an old redo log outside: %v, want refused naming the option and the path", err)
	}
	p, err := PlaceFor(dir, true, sf)
	if err != nil {
		t.Fatal(err)
	}
	restored := map[string]string{"ib_logfile0": "restored redo", "undo001": "restored undo 1", "undo002": "restored undo 2", "ibdata1": "restored ibdata", "mysql/user.frm": "u"}
	writeFiles(t, p.Staging, restored)

	// The datadir cannot take its place (here: its parent has gone):
	// everything is put back.
	p.Dir = filepath.Join(base, "gone", "mysql")
	if _, err := p.Swap(); err == nil || !strings.Contains(err.Error(), "did not take its place") {
		t.Fatalf("Swap into a missing directory: %v", err)
	}
	p.Dir = dir
	checkTree := func(root string, want map[string]string) {
		t.Helper()
		got := readTree(t, root)
		for name, data := range want {
			if got[name] != data {
				t.Errorf("%s: %s holds %q, want %q", root, name, got[name], data)
			}
		}
		for name := range got {
			if _, ok := want[name]; !ok {
				t.Errorf("%s: %s should not be there", root, name)
			}
		}
	}
	checkTree(p.Staging, restored)
	checkTree(redo, map[string]string{"ib_logfile0": "old redo"})
	for _, d := range []string{undoDir, filepath.Join(redo, "backstream.replaced-*"), filepath.Join(binlogs, "backstream.replaced-*")} {
		if made, _ := filepath.Glob(d); len(made) != 0 {
			t.Errorf("the failed swap left %v", made)
		}
	}
	checkTree(binlogs, map[string]string{"bin.000001": "old binlog", "bin.index": "old index", "error.log": "not the server's state"})

	sw, err := p.Swap()
	if err != nil {
		t.Fatal(err)
	}
	checkTree(dir, map[string]string{"ibdata1": "restored ibdata", "mysql/user.frm": "u"})
	asides, _ := filepath.Glob(filepath.Join(redo, "backstream.replaced-*"))
	if len(asides) != 1 {
		t.Fatalf("redo moved aside to %v", asides)
	}
	stamp := strings.TrimPrefix(filepath.Base(asides[0]), "backstream.replaced-")
	checkTree(redo, map[string]string{"ib_logfile0": "restored redo", "backstream.replaced-" + stamp + "/ib_logfile0": "old redo"})
	checkTree(undoDir, map[string]string{"undo001": "restored undo 1", "undo002": "restored undo 2"})
	checkTree(binlogs, map[string]string{"error.log": "not the server's state", "backstream.replaced-" + stamp + "/bin.000001": "old binlog", "backstream.replaced-" + stamp + "/bin.index": "old index"})
	var said []string
	for _, a := range sw.Outside {
		said = append(said, a.String())
	}
	for _, w := range []string{
		"innodb_log_group_home_dir = " + redo + " (my.cnf:3): ib_logfile0 of the replaced state moved aside to " + asides[0],
		"innodb_log_group_home_dir = " + redo + " (my.cnf:3): the restored ib_logfile0 placed in " + redo,
		"innodb_undo_directory = " + undoDir + " (my.cnf:3): the restored undo001, undo002 placed in " + undoDir,
		"log_bin = " + filepath.Join(binlogs, "bin") + " (my.cnf:3): bin.000001, bin.index of the replaced state moved aside to " + filepath.Join(binlogs, "backstream.replaced-"+stamp),
	} {
		if !strings.Contains(strings.Join(said, "\n"), w) {
			t.Errorf("Swap said %q, want %q in it", said, w)
		}
	}
}

// A datadir given as a symbolic link is restored inside the directory it
// points to: what it held moves into a hidden directory there, lost+found
// stays (the restored one, from a source on its own volume, is dropped),
// and the link is left as it is.
func TestPlaceInsideLink(t *testing.T) {
	base := t.TempDir()
	dir, link := filepath.Join(base, "dir"), filepath.Join(base, "mysql")
	writeFiles(t, dir, map[string]string{"olddb/t.frm": "old", "ibdata1": "old ibdata", "lost+found/#12": "fsck's"})
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	_, err := PlaceFor(link, false, mariadb.ServerFiles{})
	if err == nil || !strings.Contains(err.Error(), "datadir "+dir+" is not empty (2 entries, e.g. ibdata1); --force moves what it holds aside to "+dir+"/.backstream-replaced-<time>") {
		t.Fatalf("PlaceFor a link to an occupied datadir: %v", err)
	}
	p, err := PlaceFor(link, true, mariadb.ServerFiles{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Dir != dir || p.Staging != filepath.Join(dir, ".backstream-new") {
		t.Fatalf("place %s, staging %s; want inside %s", p.Dir, p.Staging, dir)
	}
	writeFiles(t, p.Staging, map[string]string{"ibdata1": "restored ibdata", "mysql/user.frm": "u", "lost+found/x": "the source's"})
	sw, err := p.Swap()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(sw.Replaced) != dir || !strings.HasPrefix(filepath.Base(sw.Replaced), ".backstream-replaced-") {
		t.Fatalf("moved aside to %q", sw.Replaced)
	}
	aside := filepath.Base(sw.Replaced)
	got := readTree(t, dir)
	want := map[string]string{"ibdata1": "restored ibdata", "mysql/user.frm": "u", "lost+found/#12": "fsck's",
		aside + "/ibdata1": "old ibdata", aside + "/olddb/t.frm": "old"}
	if len(got) != len(want) {
		t.Errorf("after the swap %s holds %v, want %v", dir, got, want)
	}
	for name, data := range want {
		if got[name] != data {
			t.Errorf("%s holds %q, want %q", name, got[name], data)
		}
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
}
