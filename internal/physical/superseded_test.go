package physical

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/toolpath"
)

// tablespaceFile writes a file whose page 0 names space id (both copies
// of it), as an .ibd's does.
func tablespaceFile(t *testing.T, path string, id uint32) {
	t.Helper()
	page := make([]byte, 16384)
	binary.BigEndian.PutUint32(page[filPageSpaceID:], id)
	binary.BigEndian.PutUint32(page[fspSpaceID:], id)
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, page, 0o640); err != nil {
		t.Fatal(err)
	}
}

// Only a file holding the space ID of an increment's whole copy under
// another name goes: not the copy's own name, not another tablespace,
// not one the increment renames or deletes itself, not the system
// tablespace; a tablespace outside the datadir goes with its link.
func TestDropSupersededRemovesOnlyTheOldNameOfAWholeCopy(t *testing.T) {
	dir, inc := t.TempDir(), t.TempDir()
	outside := filepath.Join(t.TempDir(), "far.ibd")
	tablespaceFile(t, filepath.Join(dir, "r", "old.ibd"), 10)       // goes: r/new.new holds 10
	tablespaceFile(t, filepath.Join(dir, "r", "new.ibd"), 10)       // the copy's own name: replaced by the prepare
	tablespaceFile(t, filepath.Join(dir, "r", "other.ibd"), 11)     // another tablespace
	tablespaceFile(t, filepath.Join(dir, "r", "renamed.ibd"), 12)   // the increment's .ren renames it
	tablespaceFile(t, filepath.Join(dir, "s", "sys#P#p0.ibd"), 0)   // no tablespace is 0
	tablespaceFile(t, filepath.Join(dir, "r", "linked.ibd.bak"), 9) // not a tablespace file
	tablespaceFile(t, outside, 13)
	if err := os.WriteFile(filepath.Join(dir, "r", "far.isl"), []byte(outside+"\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "r", "gone.isl"), []byte(filepath.Join(t.TempDir(), "gone.ibd")), 0o640); err != nil {
		t.Fatal(err)
	}
	tablespaceFile(t, filepath.Join(dir, "ibdata1"), 0)
	tablespaceFile(t, filepath.Join(inc, "r", "new.new"), 10)
	tablespaceFile(t, filepath.Join(inc, "r", "renamed2.new"), 12)
	if err := os.WriteFile(filepath.Join(inc, "r", "renamed.ren"), []byte("r/renamed2"), 0o640); err != nil {
		t.Fatal(err)
	}
	tablespaceFile(t, filepath.Join(inc, "r", "far2.new"), 13)
	tablespaceFile(t, filepath.Join(inc, "s", "x.new"), 0)
	tablespaceFile(t, filepath.Join(inc, "r", "other.ibd.delta"), 11)

	var log bytes.Buffer
	if err := dropSuperseded(dir, inc, &log); err != nil {
		t.Fatal(err)
	}
	var left []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			left = append(left, rel)
		}
		return err
	})
	want := []string{"ibdata1", "r/gone.isl", "r/linked.ibd.bak", "r/new.ibd", "r/other.ibd", "r/renamed.ibd", "s/sys#P#p0.ibd"}
	if !slices.Equal(left, want) {
		t.Errorf("left %q, want %q", left, want)
	}
	if _, err := os.Stat(outside); !os.IsNotExist(err) {
		t.Errorf("the tablespace outside the datadir is still there (%v)", err)
	}
	for _, s := range []string{"r/old.ibd holds tablespace 10", "r/new.new", outside + " holds tablespace 13"} {
		if !strings.Contains(log.String(), s) {
			t.Errorf("the log does not say %q:\n%s", s, log.String())
		}
	}
}

// An increment that copies a renamed table's tablespace whole under its
// new name with no rename record, as mariabackup 11.8.9 does at times,
// applied to its parent by the real mariabackup: without dropSuperseded
// the prepare fails ("Attempted to open a previously opened
// tablespace"); with it the prepared datadir starts and holds the
// table's every row under its new name. The increment is made by the
// real mariabackup from a rename before it, then given 11.8.9's shape:
// the table's delta replaced by a whole copy taken while the table was
// flushed and idle, which is what mariabackup copies. On 10.11 and on
// 11.8, whose mariabackup does it.
func TestPrepareOfAWholeCopyWithoutItsRename(t *testing.T) {
	b118 := sandboxtest.Basedir(t, "11.8")
	t.Parallel()
	for _, c := range []struct {
		version, basedir string
		major, minor     int
	}{{"10.11", "", 10, 11}, {"11.8", b118, 11, 8}} {
		t.Run(c.version, func(t *testing.T) {
			t.Parallel()
			bin, err := FindBinary(context.Background(), "", toolpath.Path{b118}, c.major, c.minor, ForBackup)
			if err != nil {
				t.Fatal(err)
			}
			prepareWholeCopyWithoutRename(t, bin, c.basedir)
		})
	}
}

func prepareWholeCopyWithoutRename(t *testing.T, bin *Binary, basedir string) {
	ctx := context.Background()
	srv := sandboxtest.Start(t, sandbox.Options{Basedir: basedir})
	db := srv.DB()
	for _, q := range []string{
		"CREATE DATABASE r",
		"CREATE TABLE r.t (id INT PRIMARY KEY, v VARCHAR(64)) ENGINE=InnoDB",
		"INSERT INTO r.t SELECT seq, MD5(seq) FROM r.seq_1_to_2000",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	conn := mariadb.Config{Socket: srv.Socket, User: "root"}
	full := filepath.Join(t.TempDir(), "full")
	res := streamInto(t, BackupOptions{Binary: bin, Conn: conn, Datadir: srv.Datadir}, full)

	for _, q := range []string{
		"RENAME TABLE r.t TO r.t2",
		"INSERT INTO r.t2 SELECT seq, MD5(seq) FROM r.seq_2001_to_3000",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, "FLUSH TABLES r.t2 FOR EXPORT"); err != nil {
		t.Fatal(err)
	}
	whole, err := os.ReadFile(filepath.Join(srv.Datadir, "r", "t2.ibd"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, "UNLOCK TABLES"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	want, err := sandbox.ChecksumTables(ctx, db)
	if err != nil {
		t.Fatal(err)
	}

	inc := filepath.Join(t.TempDir(), "inc")
	streamInto(t, BackupOptions{Binary: bin, Conn: conn, Datadir: srv.Datadir,
		ExtraArgs: []string{"--incremental-lsn=" + strconv.FormatUint(res.Checkpoints.ToLSN, 10)}}, inc)
	entries, err := os.ReadDir(filepath.Join(inc, "r"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		if strings.HasPrefix(e.Name(), "t2.ibd.") || strings.HasSuffix(e.Name(), ".ren") {
			if err := os.Remove(filepath.Join(inc, "r", e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !slices.Contains(names, "t2.ibd.delta") {
		t.Fatalf("the increment's r/ holds %q, no t2.ibd.delta to replace", names)
	}
	if err := os.WriteFile(filepath.Join(inc, "r", "t2.new"), whole, 0o640); err != nil {
		t.Fatal(err)
	}

	var log bytes.Buffer
	if err := Prepare(ctx, bin, full, "", "", "", &log); err != nil {
		t.Fatalf("prepare of the full: %v\n%s", err, log.String())
	}
	log.Reset()
	if err := Prepare(ctx, bin, full, inc, "", "", &log); err != nil {
		t.Fatalf("prepare of the increment: %v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "r/t.ibd holds tablespace") {
		t.Errorf("the prepare's log does not name the removed r/t.ibd:\n%s", log.String())
	}
	restored := sandboxtest.Start(t, sandbox.Options{Basedir: basedir, Datadir: full})
	got, err := sandbox.ChecksumTables(ctx, restored.DB())
	if err != nil {
		t.Fatal(err)
	}
	if got["r.t2"] == "" || got["r.t2"] != want["r.t2"] {
		t.Errorf("r.t2 restored with checksum %q, the source's is %q", got["r.t2"], want["r.t2"])
	}
	if _, ok := got["r.t"]; ok {
		t.Errorf("the restored server still has r.t: %v", got)
	}
}

// streamInto runs a backup with opt and extracts its stream with the
// real mbstream into dir.
func streamInto(t *testing.T, opt BackupOptions, dir string) *Result {
	t.Helper()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	opt.Log = &log
	b, err := StartBackup(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	mb := exec.Command("mbstream", "-x", "-C", dir)
	mb.Stdin = b.Stdout
	var mbOut bytes.Buffer
	mb.Stdout, mb.Stderr = &mbOut, &mbOut
	mbErr := mb.Run()
	res, err := b.Wait()
	if err != nil {
		t.Fatalf("backup: %v\n%s", err, log.String())
	}
	if mbErr != nil {
		t.Fatalf("mbstream -x: %v\n%s", mbErr, mbOut.String())
	}
	return res
}
