package restorecase_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/testkit"
	"github.com/backstream/backstream/internal/usecasetest"
)

// A restore into --datadir restores beside the datadir and renames the
// result into place: an occupied datadir is refused, or with Force moved
// aside and kept; Start starts the server the given way, checks it runs
// on the datadir and reports; a server in use there is never replaced.
func TestRestoreIntoPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 2}); err != nil {
		t.Fatal(err)
	}
	want := usecasetest.Checksums(t, src)
	repo := usecasetest.NewLocalRepo(t)
	id := usecasetest.Backup(t, usecasetest.BackupOf(t, repo, src)).Manifest.ID
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
	res, err := restorecase.Run(ctx, usecasetest.PlaceOf(repo, datadir))
	if !refused(err) || !strings.Contains(fmt.Sprint(err), "datadir "+datadir+" is not empty") || res != nil && res.InPlace != nil {
		t.Errorf("restore into an occupied datadir: %+v, %v; want refused", res, err)
	}
	if b, err := os.ReadFile(filepath.Join(datadir, "keep")); err != nil || string(b) != "the old datadir" {
		t.Errorf("the refused datadir changed: %q, %v", b, err)
	}
	noStaging(datadir)
	// Start without Datadir, as restore's flags give it (CheckPlace).
	req := usecasetest.RestoreOf(repo, "")
	req.Restore.TargetDir, req.Start = t.TempDir(), "true"
	req.Given.PlaceMisuse = restorecase.CheckPlace("", req.Start, "start", "")
	if _, err := restorecase.Run(ctx, req); !refused(err) || !strings.Contains(fmt.Sprint(err), "--start goes with --datadir") {
		t.Errorf("--start without --datadir: %v", err)
	}

	// Force moves it aside; Start runs the given command, and the server
	// that answers is checked.
	sock := testkit.SocketPath(t, "s.sock")
	pidFile := filepath.Join(base, "mariadbd.pid")
	start := fmt.Sprintf("mariadbd --no-defaults --datadir=%s --socket=%s --skip-networking --user=root --pid-file=%s --log-error=%s --tmpdir=%s --innodb-buffer-pool-size=64M >/dev/null 2>&1 &",
		datadir, sock, pidFile, filepath.Join(base, "error.log"), os.TempDir())
	t.Cleanup(func() { sandboxtest.KillByPidFile(t, pidFile) })
	req = usecasetest.Started(usecasetest.PlaceOf(repo, datadir), start, sock)
	req.Force = true
	in := usecasetest.Restore(t, req).InPlace
	noStaging(datadir)
	aside, _ := filepath.Glob(datadir + ".replaced-*")
	if in == nil || len(aside) != 1 || in.Replaced != aside[0] {
		t.Fatalf("moved aside: %v; the restore says %+v", aside, in)
	}
	if b, err := os.ReadFile(filepath.Join(aside[0], "keep")); err != nil || string(b) != "the old datadir" {
		t.Errorf("what the datadir held, moved aside: %q, %v", b, err)
	}
	// Restored and prepared in place; the server runs there, its system
	// tables checked, its biggest tables the sample's.
	if in.Backup.ID != id || in.Target != datadir || !in.Prepared || !in.Swapped {
		t.Errorf("restore --datadir --force --start: backup %s into %s, prepared %v, in place %v; want %s prepared in place in %s",
			in.Backup.ID, in.Target, in.Prepared, in.Swapped, id, datadir)
	}
	if st := in.Started; st == nil || st.Version == "" || st.SystemTables == 0 || len(st.Counted) == 0 || !strings.HasPrefix(st.Counted[0].Table, "sample.") {
		t.Errorf("restore --start: started %+v; want the server's version, its system tables checked, the biggest tables the sample's", st)
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

	// A datadir a server runs on is never replaced, Force or not.
	req = usecasetest.PlaceOf(repo, datadir)
	req.Force = true
	if _, err := restorecase.Run(ctx, req); !refused(err) || !strings.Contains(fmt.Sprint(err), "in use by a running process") {
		t.Errorf("restore over a running server's datadir: %v; want refused", err)
	}

	// Another server answering where the started one should: nothing is
	// taken for checked. The result says what was done, with the error.
	other := filepath.Join(base, "other")
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "keep"), []byte("another old datadir"), 0o600); err != nil {
		t.Fatal(err)
	}
	req = usecasetest.Started(usecasetest.PlaceOf(repo, other), "true", src.Socket)
	req.Force = true
	res, err = restorecase.Run(ctx, req)
	if err == nil || !strings.Contains(err.Error(), "not on the restored datadir "+other) {
		t.Errorf("--start with another server answering: %v; want an error naming both datadirs", err)
	}
	aside, _ = filepath.Glob(other + ".replaced-*")
	if res == nil || res.InPlace == nil {
		t.Fatalf("restore --datadir --force --start with another server answering: %+v; want what was done", res)
	}
	if failed := res.InPlace; failed.Backup.ID != id || failed.Target != other || !failed.Prepared || !failed.Swapped || len(aside) != 1 || failed.Replaced != aside[0] || failed.Started != nil {
		t.Errorf("restore --datadir --force --start with another server answering: %+v; want backup %s in %s, moved aside to %v, not started", failed, id, other, aside)
	}

	// An absent datadir is made; a server starts on it as it is.
	fresh := filepath.Join(base, "fresh", "mysql")
	if err := os.MkdirAll(filepath.Dir(fresh), 0o700); err != nil {
		t.Fatal(err)
	}
	done := usecasetest.Restore(t, usecasetest.PlaceOf(repo, fresh)).InPlace
	if done == nil || done.Backup.ID != id || len(done.Chain) != 1 || done.Target != fresh || !done.Prepared || !done.Swapped || done.Replaced != "" || len(done.Outside) != 0 || done.Started != nil {
		t.Errorf("restore --datadir: %+v; want backup %s restored and prepared in %s, nothing replaced or started", done, id, fresh)
	}
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, usecasetest.ServerOn(t, fresh)), want)
}

// refused says err is a restore refused for what it was asked: what the
// command exits 2 for.
func refused(err error) bool {
	var r *restore.RefusedError
	return errors.As(err, &r)
}

// The server's option file puts its redo log, undo tablespaces and binary
// logs outside the datadir: a restore into --datadir with --start refuses
// while they hold files of another state, naming the option; with Force
// it moves them aside (never deleted) and puts the restored redo log and
// undo tablespaces where the server looks, so the server started runs on
// the restored state, not on the old one's logs. The second round
// replaces the files of a real server killed mid-flight.
func TestRestoreIntoPlaceWithFilesOutside(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{Args: []string{"--innodb-undo-tablespaces=2"}})
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 2}); err != nil {
		t.Fatal(err)
	}
	want := usecasetest.Checksums(t, src)
	repo := usecasetest.NewLocalRepo(t)
	usecasetest.Backup(t, usecasetest.BackupOf(t, repo, src))

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
	placeStarted := func(force bool) restorecase.Request {
		req := usecasetest.Started(usecasetest.PlaceOf(repo, datadir), start, sock)
		req.Force = force
		return req
	}

	_, err := restorecase.Run(ctx, placeStarted(false))
	if !refused(err) || !strings.Contains(fmt.Sprint(err), "innodb_log_group_home_dir = "+redo+" ("+cnf+":2) is outside the datadir, and "+redo+" holds ib_logfile0") {
		t.Fatalf("restore --start with an old redo log where the server's options put it: %v; want refused naming the option and the path", err)
	}
	if _, err := os.Stat(datadir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused restore made the datadir (%v)", err)
	}
	for p, data := range old {
		if b, err := os.ReadFile(p); err != nil || string(b) != data {
			t.Errorf("the refused restore changed %s: %q, %v", p, b, err)
		}
	}

	check := func(round int, in *restorecase.InPlaceResult) {
		t.Helper()
		if in == nil {
			t.Fatalf("round %d: no restore into place in the result", round)
		}
		if round == 2 {
			checkPlacedOverKilled(t, in, datadir, redo, undo, binlogs)
		}
		if round == 1 {
			// The old redo log moved aside, the restored one placed; the
			// restored undo tablespaces placed; the old binary logs moved
			// aside.
			redoOption, undoOption := "innodb_log_group_home_dir = "+redo+" ("+cnf+":2)", "innodb_undo_directory = "+undo+" ("+cnf+":3)"
			for _, w := range []outside{
				{redoOption, redo, []string{"ib_logfile0"}, false, true},
				{redoOption, redo, []string{"ib_logfile0"}, false, false},
				{undoOption, undo, []string{"undo001", "undo002"}, false, false},
				{"log_bin = " + binlogs + "/mariadb-bin (" + cnf + ":5)", binlogs, []string{"mariadb-bin.000001"}, true, true},
			} {
				if !w.in(in.Outside) {
					t.Errorf("round %d: restore --force --start: outside %+v; want %+v in it", round, in.Outside, w)
				}
			}
			if in.Target != datadir || !in.Swapped || in.Started == nil || in.Started.SystemTables == 0 {
				t.Errorf("round %d: restore --force --start: %+v; want in place in %s, the server started and its system tables checked", round, in, datadir)
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
	check(1, usecasetest.Restore(t, placeStarted(true)).InPlace)
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
	check(2, usecasetest.Restore(t, placeStarted(true)).InPlace)
	if m, _ := filepath.Glob(filepath.Join(redo, "backstream.replaced-*", "ib_logfile0")); len(m) != 2 {
		t.Errorf("the killed server's redo log was not moved aside: %v", m)
	}
}

// outside is one entry of what a restore into place did outside the
// datadir (a restore.Aside): the files of option in dir (files the first
// of them only with first), moved aside into dir's backstream.replaced-*
// (aside) or the restored ones placed there.
type outside struct {
	option, dir  string
	files        []string
	first, aside bool
}

// in says whether did has o.
func (o outside) in(did []restore.Aside) bool {
	for _, a := range did {
		switch {
		case a.Option != o.option || a.Dir != o.dir || len(a.Files) == 0 || o.aside != (a.To != ""):
		case o.first && a.Files[0] != o.files[0], !o.first && !slices.Equal(a.Files, o.files):
		case o.aside && !strings.HasPrefix(a.To, o.dir+"/backstream.replaced-"):
		default:
			return true
		}
	}
	return false
}

// checkPlacedOverKilled checks a restore into place with Force and Start
// over a killed server whose redo log, undo and binary logs are outside
// its datadir: the datadir and each place's files moved aside, the
// restored ones placed, and the server started and checked.
func checkPlacedOverKilled(t *testing.T, in *restorecase.InPlaceResult, datadir, redo, undo, binlogs string) {
	t.Helper()
	if in.Target != datadir || !strings.HasPrefix(in.Replaced, datadir+".replaced-") || !in.Swapped {
		t.Errorf("restore into place: target %s, replaced %q, in place %v; want %s, moved aside", in.Target, in.Replaced, in.Swapped, datadir)
	}
	movedAside, restored := map[string]bool{}, map[string]bool{}
	for _, a := range in.Outside {
		if a.To == "" {
			restored[a.Dir] = true
		} else if strings.HasPrefix(a.To, a.Dir+"/backstream.replaced-") && len(a.Files) > 0 {
			movedAside[a.Dir] = true
		}
	}
	if !movedAside[redo] || !movedAside[undo] || !movedAside[binlogs] || !restored[redo] || !restored[undo] {
		t.Errorf("restore into place: outside %+v; want the old redo, undo and binary logs moved aside, the restored redo and undo placed", in.Outside)
	}
	if st := in.Started; st == nil || st.Version == "" || st.Hostname == "" || st.SystemTables == 0 || len(st.Counted) == 0 ||
		!strings.HasPrefix(st.Counted[0].Table, "sample.") || !st.Counted[0].Counted || st.Counted[0].Rows == 0 {
		t.Errorf("restore into place: started %+v; want the server's version, hostname, system tables checked, the biggest tables counted", st)
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
		// Lazily: the loop device is freed with the last reference.
		if out, err := exec.Command("umount", "--lazy", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", dir, err, out)
		}
	})
	return dir
}

// A restore into a datadir that cannot be renamed: a mount point (its own
// ext4 volume, with lost+found) and a symbolic link. The restore is
// written inside it and the entries swapped; what it held is kept aside
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
	repo := usecasetest.NewLocalRepo(t)
	usecasetest.Backup(t, usecasetest.BackupOf(t, repo, src))

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
		req := usecasetest.Started(usecasetest.PlaceOf(repo, arg), start, sock)
		req.Force = true
		in := usecasetest.Restore(t, req).InPlace
		aside, _ := filepath.Glob(filepath.Join(datadir, ".backstream-replaced-*"))
		if in == nil || len(aside) != 1 || in.Replaced != aside[0] {
			t.Fatalf("moved aside: %v; the restore says %+v", aside, in)
		}
		if !in.Swapped || in.Started == nil {
			t.Errorf("restore into %s: in place %v, started %+v; want in place and started", arg, in.Swapped, in.Started)
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
