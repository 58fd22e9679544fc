package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/usecasetest"
)

// restore --datadir restores beside the datadir and renames the result
// into place: an occupied datadir is refused, or with --force moved aside
// and kept; --start starts the server the given way, checks it runs on
// the datadir and reports; a server in use there is never replaced.
func TestRestoreIntoPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 2}); err != nil {
		t.Fatal(err)
	}
	want := usecasetest.Checksums(t, src)
	repoDir := newRepoDir(t)
	run(t, append([]string{"backup", "--repo", repoDir, "--parallel", "2"}, sandboxConn(src)...)...).mustSucceed(t)
	base := t.TempDir()
	noStaging := func(dir string) {
		t.Helper()
		if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), ".*.backstream-new")); len(left) != 0 {
			t.Errorf("a staging directory was left: %v", left)
		}
	}

	// An occupied datadir is refused and left as it was.
	datadir := filepath.Join(base, "mysql")
	if err := os.MkdirAll(datadir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(datadir, "keep"), []byte("the old datadir"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, "restore", "--repo", repoDir, "--datadir", datadir)
	if r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), "datadir "+datadir+" is not empty") {
		t.Errorf("restore into an occupied datadir: exit %d, %v; want refused", r.code, r.err)
	}
	if b, err := os.ReadFile(filepath.Join(datadir, "keep")); err != nil || string(b) != "the old datadir" {
		t.Errorf("the refused datadir changed: %q, %v", b, err)
	}
	noStaging(datadir)
	if r := run(t, "restore", "--repo", repoDir, "--target-dir", t.TempDir(), "--start"); r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), "--start goes with --datadir") {
		t.Errorf("--start without --datadir: exit %d, %v", r.code, r.err)
	}

	// --force moves it aside; --start runs the given command, and the
	// server that answers is checked.
	sock := testkit.SocketPath(t, "s.sock")
	pidFile := filepath.Join(base, "mariadbd.pid")
	start := fmt.Sprintf("mariadbd --no-defaults --datadir=%s --socket=%s --skip-networking --user=root --pid-file=%s --log-error=%s --tmpdir=%s --innodb-buffer-pool-size=64M >/dev/null 2>&1 &",
		datadir, sock, pidFile, filepath.Join(base, "error.log"), os.TempDir())
	t.Cleanup(func() { sandboxtest.KillByPidFile(t, pidFile) })
	r = run(t, "restore", "--repo", repoDir, "--datadir", datadir, "--force", "--start="+start, "--socket", sock, "--user", "root", "--no-defaults").mustSucceed(t)
	noStaging(datadir)
	aside, _ := filepath.Glob(datadir + ".replaced-*")
	if len(aside) != 1 || !strings.Contains(r.stdout, "moved aside to "+aside[0]) {
		t.Fatalf("moved aside: %v; stdout %q", aside, r.stdout)
	}
	if b, err := os.ReadFile(filepath.Join(aside[0], "keep")); err != nil || string(b) != "the old datadir" {
		t.Errorf("what the datadir held, moved aside: %q, %v", b, err)
	}
	for _, w := range []string{"restored and prepared in place: " + datadir, "runs on " + datadir, "system tables OK", "biggest tables: sample."} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("restore --start printed %q, want %q in it", r.stdout, w)
		}
	}
	db, err := mariadb.Open(ctx, mariadb.Config{Socket: sock, User: "root"}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err := sandbox.ChecksumTables(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	usecasetest.CompareChecksums(t, got, want)

	// A datadir a server runs on is never replaced, --force or not.
	r = run(t, "restore", "--repo", repoDir, "--datadir", datadir, "--force")
	if r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), "in use by a running process") {
		t.Errorf("restore over a running server's datadir: exit %d, %v; want refused", r.code, r.err)
	}

	// Another server answering where the started one should: nothing is
	// taken for checked. With --json the object says what was done, and
	// the error.
	id := backupListing(t, repoDir)[0].ID
	type placed struct {
		Backup   string   `json:"backup"`
		Chain    []string `json:"chain"`
		Target   string   `json:"target"`
		Prepared bool     `json:"prepared"`
		Replaced string   `json:"replaced"`
		Started  *struct {
			Version      string `json:"version"`
			SystemTables int    `json:"system_tables"`
		} `json:"started"`
		Error string `json:"error"`
	}
	other := filepath.Join(base, "other")
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "keep"), []byte("another old datadir"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t, append([]string{"restore", "--repo", repoDir, "--datadir", other, "--force", "--start=true", "--json"}, sandboxConn(src)...)...)
	if r.code == ExitOK || !strings.Contains(fmt.Sprint(r.err), "not on the restored datadir "+other) {
		t.Errorf("--start with another server answering: exit %d, %v; want an error naming both datadirs", r.code, r.err)
	}
	var failed placed
	decodeOne(t, "restore --datadir --start --json", r.stdout, &failed)
	aside, _ = filepath.Glob(other + ".replaced-*")
	if failed.Backup != id || failed.Target != other || !failed.Prepared || len(aside) != 1 || failed.Replaced != aside[0] ||
		failed.Started != nil || !strings.Contains(failed.Error, "not on the restored datadir "+other) {
		t.Errorf("restore --datadir --force --start --json with another server answering printed %+v; want backup %s in %s, moved aside to %v, not started, the error", failed, id, other, aside)
	}

	// An absent datadir is made; a server starts on it as it is.
	fresh := filepath.Join(base, "fresh", "mysql")
	if err := os.MkdirAll(filepath.Dir(fresh), 0o700); err != nil {
		t.Fatal(err)
	}
	var done placed
	decodeOne(t, "restore --datadir --json", run(t, "restore", "--repo", repoDir, "--datadir", fresh, "--json").mustSucceed(t).stdout, &done)
	if done.Backup != id || len(done.Chain) != 1 || done.Target != fresh || !done.Prepared || done.Replaced != "" || done.Started != nil || done.Error != "" {
		t.Errorf("restore --datadir --json printed %+v; want backup %s restored and prepared in %s, nothing replaced or started", done, id, fresh)
	}
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, usecasetest.ServerOn(t, fresh)), want)
}

// The server's option file puts its redo log, undo tablespaces and binary
// logs outside the datadir: restore --datadir --start refuses while they
// hold files of another state, naming the option; with --force it moves
// them aside (never deleted) and puts the restored redo log and undo
// tablespaces where the server looks, so the server started runs on the
// restored state, not on the old one's logs. The second round replaces the
// files of a real server killed mid-flight.
func TestRestoreIntoPlaceWithFilesOutside(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{Args: []string{"--innodb-undo-tablespaces=2"}})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 2}); err != nil {
		t.Fatal(err)
	}
	want := usecasetest.Checksums(t, src)
	repoDir := newRepoDir(t)
	run(t, append([]string{"backup", "--repo", repoDir}, sandboxConn(src)...)...).mustSucceed(t)

	base := t.TempDir()
	datadir := filepath.Join(base, "mysql")
	redo, undo, binlogs := filepath.Join(base, "redo"), filepath.Join(base, "undo"), filepath.Join(base, "binlog")
	cnf := filepath.Join(base, "my.cnf")
	if err := os.WriteFile(cnf, []byte(fmt.Sprintf("[mysqld]\ninnodb_log_group_home_dir=%s\ninnodb_undo_directory=%s\ninnodb_undo_tablespaces=2\nlog_bin=%s/mariadb-bin\nserver_id=7\n",
		redo, undo, binlogs)), 0o644); err != nil {
		t.Fatal(err)
	}
	// What an old server on this host left there.
	old := map[string]string{filepath.Join(redo, "ib_logfile0"): "old redo", filepath.Join(undo, "undo001"): "old undo",
		filepath.Join(binlogs, "mariadb-bin.000001"): "old binlog", filepath.Join(binlogs, "mariadb-bin.index"): binlogs + "/mariadb-bin.000001\n"}
	for p, data := range old {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sock := testkit.SocketPath(t, "s.sock")
	pidFile := filepath.Join(base, "mariadbd.pid")
	start := fmt.Sprintf("mariadbd --defaults-file=%s --datadir=%s --socket=%s --skip-networking --user=root --pid-file=%s --log-error=%s --tmpdir=%s --innodb-buffer-pool-size=64M >/dev/null 2>&1 &",
		cnf, datadir, sock, pidFile, filepath.Join(base, "error.log"), os.TempDir())
	t.Cleanup(func() { sandboxtest.KillByPidFile(t, pidFile) })
	restoreArgs := []string{"restore", "--repo", repoDir, "--datadir", datadir, "--start=" + start, "--socket", sock, "--user", "root", "--no-defaults"}

	r := run(t, restoreArgs...)
	if r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), "innodb_log_group_home_dir = "+redo+" ("+cnf+":2) is outside the datadir, and "+redo+" holds ib_logfile0") {
		t.Fatalf("restore --start with an old redo log where the server's options put it: exit %d, %v; want refused naming the option and the path", r.code, r.err)
	}
	if _, err := os.Stat(datadir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused restore made the datadir (%v)", err)
	}
	for p, data := range old {
		if b, err := os.ReadFile(p); err != nil || string(b) != data {
			t.Errorf("the refused restore changed %s: %q, %v", p, b, err)
		}
	}

	check := func(round int, stdout string) {
		t.Helper()
		if round == 2 {
			checkPlacedJSON(t, stdout, datadir, redo, undo, binlogs)
		}
		for _, w := range []string{"innodb_log_group_home_dir = " + redo + " (" + cnf + ":2): ib_logfile0 of the replaced state moved aside to " + redo + "/backstream.replaced-",
			"innodb_log_group_home_dir = " + redo + " (" + cnf + ":2): the restored ib_logfile0 placed in " + redo,
			"innodb_undo_directory = " + undo + " (" + cnf + ":3): the restored undo001, undo002 placed in " + undo,
			"log_bin = " + binlogs + "/mariadb-bin (" + cnf + ":5): mariadb-bin.000001", "runs on " + datadir, "system tables OK"} {
			if round == 1 && !strings.Contains(stdout, w) {
				t.Errorf("round %d: restore --force --start printed %q, want %q in it", round, stdout, w)
			}
		}
		db, err := mariadb.Open(ctx, mariadb.Config{Socket: sock, User: "root"}, "")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var logHome, undoDir, binlogBase string
		if err := db.QueryRow("SELECT @@innodb_log_group_home_dir, @@innodb_undo_directory, @@log_bin_basename").Scan(&logHome, &undoDir, &binlogBase); err != nil {
			t.Fatal(err)
		}
		if filepath.Clean(logHome) != redo || filepath.Clean(undoDir) != undo || binlogBase != binlogs+"/mariadb-bin" {
			t.Errorf("round %d: the server runs with %s, %s, %s", round, logHome, undoDir, binlogBase)
		}
		got, err := sandbox.ChecksumTables(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		usecasetest.CompareChecksums(t, got, want)
	}
	r = run(t, append(restoreArgs, "--force")...).mustSucceed(t)
	check(1, r.stdout)
	asides, _ := filepath.Glob(filepath.Join(base, "*", "backstream.replaced-*", "*"))
	for p, data := range old {
		aside := filepath.Join(filepath.Dir(p), "backstream.replaced-*", filepath.Base(p))
		if m, _ := filepath.Glob(aside); len(m) != 1 {
			t.Errorf("%s was not moved aside: %v", p, asides)
		} else if b, err := os.ReadFile(m[0]); err != nil || string(b) != data {
			t.Errorf("%s moved aside holds %q, %v", p, b, err)
		}
	}

	// The started server takes writes and is killed: its redo log, undo
	// and binary logs outside the datadir are of another state than the
	// backup's. A restore over it moves them aside again.
	db, err := mariadb.Open(ctx, mariadb.Config{Socket: sock, User: "root"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE sample.later (id INT PRIMARY KEY) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO sample.later SELECT seq FROM sample.seq_1_to_1000"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	sandboxtest.KillByPidFile(t, pidFile)
	time.Sleep(1100 * time.Millisecond) // another second for the names of what is moved aside
	r = run(t, append(restoreArgs, "--force", "--json")...).mustSucceed(t)
	check(2, r.stdout)
	if m, _ := filepath.Glob(filepath.Join(redo, "backstream.replaced-*", "ib_logfile0")); len(m) != 2 {
		t.Errorf("the killed server's redo log was not moved aside: %v", m)
	}
}

// checkPlacedJSON checks what restore --datadir --force --start --json
// printed over a killed server whose redo log, undo and binary logs are
// outside its datadir: the datadir and each place's files moved aside,
// the restored ones placed, and the server started and checked.
func checkPlacedJSON(t *testing.T, stdout, datadir, redo, undo, binlogs string) {
	t.Helper()
	var placed struct {
		Target   string `json:"target"`
		Replaced string `json:"replaced"`
		Outside  []struct {
			Option string   `json:"option"`
			Dir    string   `json:"dir"`
			Files  []string `json:"files"`
			To     string   `json:"to"`
		} `json:"outside"`
		Started *struct {
			Version       string `json:"version"`
			Hostname      string `json:"hostname"`
			SystemTables  int    `json:"system_tables"`
			BiggestTables []struct {
				Table   string `json:"table"`
				Rows    int64  `json:"rows"`
				Counted bool   `json:"counted"`
			} `json:"biggest_tables"`
		} `json:"started"`
		Error *string `json:"error"`
	}
	decodeOne(t, "restore --datadir --force --start --json", stdout, &placed)
	if placed.Target != datadir || !strings.HasPrefix(placed.Replaced, datadir+".replaced-") || placed.Error != nil {
		t.Errorf("restore --json: target %s, replaced %q, error %v; want %s, moved aside", placed.Target, placed.Replaced, placed.Error, datadir)
	}
	movedAside, restored := map[string]bool{}, map[string]bool{}
	for _, a := range placed.Outside {
		if a.To == "" {
			restored[a.Dir] = true
		} else if strings.HasPrefix(a.To, a.Dir+"/backstream.replaced-") && len(a.Files) > 0 {
			movedAside[a.Dir] = true
		}
	}
	if !movedAside[redo] || !movedAside[undo] || !movedAside[binlogs] || !restored[redo] || !restored[undo] {
		t.Errorf("restore --json: outside %+v; want the old redo, undo and binary logs moved aside, the restored redo and undo placed", placed.Outside)
	}
	if st := placed.Started; st == nil || st.Version == "" || st.Hostname == "" || st.SystemTables == 0 || len(st.BiggestTables) == 0 ||
		!strings.HasPrefix(st.BiggestTables[0].Table, "sample.") || !st.BiggestTables[0].Counted || st.BiggestTables[0].Rows == 0 {
		t.Errorf("restore --json: started %+v; want the server's version, hostname, system tables checked, the biggest tables counted", st)
	}
}

// loopDisk mounts a new ext4 filesystem of size (with its lost+found, as a
// dedicated datadir volume has) on a new directory, unmounted at the end.
func loopDisk(t *testing.T, size string) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "disk.img")
	dir := t.TempDir()
	for _, c := range [][]string{{"truncate", "-s", size, img}, {"mkfs.ext4", "-q", "-F", img}, {"mount", "-o", "loop", img, dir}} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", c, err, out)
		}
	}
	t.Cleanup(func() {
		// Lazily, as smallDisk does; the loop device is freed with the
		// last reference.
		if out, err := exec.Command("umount", "--lazy", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", dir, err, out)
		}
	})
	return dir
}

// restore --datadir into a datadir that cannot be renamed: a mount point
// (its own ext4 volume, with lost+found) and a symbolic link. The restore
// is written inside it and the entries swapped; what it held is kept aside
// inside it, lost+found stays, and the server started there has the
// source's data.
func TestRestoreIntoMountAndLink(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("mounting a loop device needs root, which CI has")
		}
		t.Skip("mounting a loop device needs root")
	}
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 2}); err != nil {
		t.Fatal(err)
	}
	want := usecasetest.Checksums(t, src)
	repoDir := newRepoDir(t)
	run(t, append([]string{"backup", "--repo", repoDir, "--parallel", "2"}, sandboxConn(src)...)...).mustSucceed(t)

	// old fills dir with what an old datadir holds.
	old := func(dir string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, "olddb"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "olddb", "keep"), []byte("the old datadir"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// restoreStarted restores into datadir (given as arg), starts a server
	// there and compares its tables with the source's; it returns where
	// the old entries went.
	restoreStarted := func(arg, datadir string) string {
		t.Helper()
		base := t.TempDir()
		sock := testkit.SocketPath(t, "s.sock")
		pidFile := filepath.Join(base, "mariadbd.pid")
		start := fmt.Sprintf("mariadbd --no-defaults --datadir=%s --socket=%s --skip-networking --user=root --pid-file=%s --log-error=%s --tmpdir=%s --innodb-buffer-pool-size=64M --innodb-log-file-size=16M >/dev/null 2>&1 &",
			arg, sock, pidFile, filepath.Join(base, "error.log"), os.TempDir())
		t.Cleanup(func() { sandboxtest.KillByPidFile(t, pidFile) })
		r := run(t, "restore", "--repo", repoDir, "--datadir", arg, "--force", "--start="+start, "--socket", sock, "--user", "root", "--no-defaults").mustSucceed(t)
		aside, _ := filepath.Glob(filepath.Join(datadir, ".backstream-replaced-*"))
		if len(aside) != 1 || !strings.Contains(r.stdout, "moved aside to "+aside[0]) {
			t.Fatalf("moved aside: %v; stdout %q", aside, r.stdout)
		}
		if b, err := os.ReadFile(filepath.Join(aside[0], "olddb", "keep")); err != nil || string(b) != "the old datadir" {
			t.Errorf("what the datadir held, moved aside: %q, %v", b, err)
		}
		if _, err := os.Stat(filepath.Join(datadir, "olddb")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the old olddb is still in the datadir: %v", err)
		}
		if _, err := os.Stat(filepath.Join(datadir, ".backstream-new")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the staging directory was left: %v", err)
		}
		db, err := mariadb.Open(ctx, mariadb.Config{Socket: sock, User: "root"}, "")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		got, err := sandbox.ChecksumTables(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		usecasetest.CompareChecksums(t, got, want)
		return aside[0]
	}

	t.Run("mount point", func(t *testing.T) {
		mount := loopDisk(t, "400M")
		old(mount)
		aside := restoreStarted(mount, mount)
		if fi, err := os.Stat(filepath.Join(mount, "lost+found")); err != nil || !fi.IsDir() {
			t.Errorf("lost+found of the volume: %v", err)
		}
		if _, err := os.Stat(filepath.Join(aside, "lost+found")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("lost+found was moved aside: %v", err)
		}
		if out, err := exec.Command("mountpoint", "-q", mount).CombinedOutput(); err != nil {
			t.Errorf("%s is no longer a mount point: %v %s", mount, err, out)
		}
	})

	t.Run("symbolic link", func(t *testing.T) {
		target := filepath.Join(t.TempDir(), "mysql")
		old(target)
		link := filepath.Join(t.TempDir(), "mysql")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		restoreStarted(link, target)
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("the link %s was replaced: %v", link, err)
		}
	})
}
