package physical

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/repo/repotest"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/xbstream"
)

// filesBytes is the bytes of the files a backup holds.
func filesBytes(m *archive.Manifest) int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	return n
}

func TestCopyCounter(t *testing.T) {
	p := &recorder{}
	c := newCopyCounter(p, map[string]int64{"ibdata1": 100, "db/t.ibd": 200, "db/gone.ibd": 10, "db/shrunk.MYD": 50, "db/grown.MYD": 20})
	if p.total != 380 {
		t.Fatalf("total %d at the start, want the estimate's 380", p.total)
	}
	step := func(what string, typ xbstream.Type, path string, n int, in, total int64) {
		t.Helper()
		c.chunk(&xbstream.Chunk{Type: typ, Path: path, Payload: make([]byte, n)})
		if p.in != in || p.total != total {
			t.Errorf("%s: %d in of %d, want %d of %d", what, p.in, p.total, in, total)
		}
	}
	P, E := xbstream.TypePayload, xbstream.TypeEOF
	step("a file of the estimate", P, "ibdata1", 60, 60, 380)
	step("the redo log, not in the estimate", P, "ib_logfile0", 30, 90, 410)
	step("the rest of the file", P, "ibdata1", 40, 130, 410)
	step("its end", E, "ibdata1", 0, 130, 410)
	step("a delta: counted up to the file's size", P, "./db/t.ibd.delta", 16, 146, 410)
	step("its meta, not in the estimate", P, "db/t.ibd.meta", 4, 150, 414)
	step("the delta's end: the file's size", E, "db/t.ibd.delta", 0, 334, 414)
	step("a file that shrank", P, "db/shrunk.MYD", 30, 364, 414)
	step("its end gives back the rest", E, "db/shrunk.MYD", 0, 364, 394)
	step("a file that grew", P, "db/grown.MYD", 25, 389, 399)
	step("its end", E, "db/grown.MYD", 0, 389, 399)
	step("a rename counts nothing", xbstream.TypeRename, "db/x.frm", 0, 389, 399)
	if p.passed > 0 {
		t.Errorf("bytes in passed the total by %d", p.passed)
	}
	if rest := p.total - p.in; rest != 10 {
		t.Errorf("%d bytes short at the end, want the 10 of the file never streamed", rest)
	}
	// A tablespace created since the checkpoint comes as .new, in an
	// incremental as .new.delta.
	p = &recorder{}
	c = newCopyCounter(p, map[string]int64{"db/n.ibd": 40, "db/m.ibd": 64})
	step("a new tablespace", P, "db/n.new", 40, 40, 104)
	step("a new tablespace's delta", P, "db/m.new.delta", 16, 56, 104)
	step("its end", E, "db/m.new.delta", 0, 104, 104)
	// Without an estimate the total stays unknown.
	p = &recorder{}
	c = newCopyCounter(p, map[string]int64{})
	step("no estimate", P, "ibdata1", 10, 10, 0)
	if c := newCopyCounter(nil, nil); c != nil {
		t.Error("a counter without progress")
	}
	var none *copyCounter
	none.chunk(&xbstream.Chunk{Type: P, Path: "ibdata1"}) // must not panic
}

// The estimate names the files mariabackup streams, and their sizes, for
// every kind of table: only the redo log it copies (which grows as the
// backup runs) and its own metadata files are counted as they arrive. So a
// full backup and an incremental both end with as many bytes in as the
// total, and the bytes in never pass it.
func TestEstimateNamesWhatMariabackupStreams(t *testing.T) {
	ctx := context.Background()
	remote := t.TempDir()
	srv := sandboxtest.Start(t, sandbox.Options{})
	db := srv.DB()
	if err := sandbox.LoadSample(ctx, db, sandbox.SampleOptions{Tables: 2, BigTableMB: 8}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE sample.my (id INT PRIMARY KEY, s TEXT) ENGINE=MyISAM",
		"INSERT INTO sample.my SELECT seq, REPEAT('m', 100) FROM sample.seq_1_to_2000",
		"CREATE TABLE sample.ar (id INT PRIMARY KEY, s TEXT) ENGINE=Aria",
		"INSERT INTO sample.ar SELECT seq, REPEAT('a', 100) FROM sample.seq_1_to_2000",
		"CREATE TABLE sample.c (id INT NOT NULL, s TEXT NOT NULL) ENGINE=CSV",
		"INSERT INTO sample.c SELECT seq, 'csv' FROM sample.seq_1_to_100",
		"CREATE TABLE sample.parts (id INT PRIMARY KEY) ENGINE=InnoDB PARTITION BY HASH(id) PARTITIONS 3",
		"INSERT INTO sample.parts SELECT seq FROM sample.seq_1_to_1000",
		"CREATE TABLE sample.far (id INT PRIMARY KEY) ENGINE=InnoDB DATA DIRECTORY='" + remote + "'",
		"INSERT INTO sample.far SELECT seq FROM sample.seq_1_to_1000",
		"CREATE TRIGGER sample.tr BEFORE INSERT ON sample.my FOR EACH ROW SET NEW.s = NEW.s",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	server, err := mariadb.Inspect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	c, err := codec.Parse("zstd")
	if err != nil {
		t.Fatal(err)
	}
	r := repotest.New(t)
	conn := mariadb.Config{Socket: srv.Socket, User: "root"}

	full := &recorder{}
	m, err := RunBackup(ctx, BackupJob{Dest: r, Conn: conn, Parallel: 2, Codec: c, Progress: full, Checkpoint: true})
	if err != nil {
		t.Fatalf("RunBackup: %v", err)
	}
	estimate := estimateCopy(server)
	var unnamed []string
	streamed := map[string]bool{}
	for _, f := range m.Files {
		// A tablespace created since the checkpoint is streamed under
		// the name prepare gives it.
		p := f.Path
		if table, ok := strings.CutSuffix(p, ".new"); ok {
			p = table + ".ibd"
		}
		streamed[p] = true
		if _, ok := estimate[p]; ok {
			if estimate[p] != f.Size && !strings.HasPrefix(p, "aria_log") {
				t.Errorf("%s: estimated %d bytes, streamed %d", f.Path, estimate[p], f.Size)
			}
			continue
		}
		unnamed = append(unnamed, f.Path)
	}
	for _, p := range unnamed {
		if p != "ib_logfile0" && !IsMetadata(p) && p != BackupMyCnf {
			t.Errorf("mariabackup streamed %s, which the estimate did not name", p)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(estimate)) {
		if !streamed[p] {
			t.Errorf("the estimate named %s, which mariabackup did not stream", p)
		}
	}
	for _, p := range []string{"sample/my.MYD", "sample/ar.MAD", "sample/c.CSV", "sample/far.ibd", "sample/far.isl", "sample/parts#P#p2.ibd", "sample/tr.TRN", "sample/my.TRG", "ibdata1"} {
		if _, ok := estimate[p]; !ok {
			t.Errorf("the estimate lacks %s", p)
		}
	}
	if n, ok := estimate["sample/far.ibd"]; ok && n == 0 {
		t.Errorf("sample/far.ibd, in its DATA DIRECTORY %s, estimated empty", remote)
	}
	check := func(what string, rec *recorder, m *archive.Manifest) {
		t.Helper()
		if rec.in != rec.total || rec.passed > 0 {
			t.Errorf("%s: ended at %d bytes in of %d (in passed the total by at most %d); want in = total", what, rec.in, rec.total, rec.passed)
		}
		if len(rec.backups) != 1 || rec.backups[0] != m.ID {
			t.Errorf("%s: progress named %q, want %s", what, rec.backups, m.ID)
		}
	}
	check("full", full, m)
	if full.in != filesBytes(m) {
		t.Errorf("full: %d bytes in, the backup holds %d bytes of files", full.in, filesBytes(m))
	}

	if _, err := db.ExecContext(ctx, "UPDATE sample.small_01 SET qty = 7 WHERE id < 10"); err != nil {
		t.Fatal(err)
	}
	inc := &recorder{}
	mi, err := RunBackup(ctx, BackupJob{Dest: r, Conn: conn, Parallel: 2, Codec: c, Progress: inc, Checkpoint: true,
		Parent: func(context.Context, *mariadb.Server) (*archive.Manifest, error) { return m, nil }})
	if err != nil {
		t.Fatalf("incremental RunBackup: %v", err)
	}
	check("incremental", inc, mi)
	// The incremental read the whole datadir for its changed pages: its
	// bytes in are about the full's, though it streamed far fewer.
	if inc.in < full.in/2 || filesBytes(mi) > full.in/2 {
		t.Errorf("incremental: %d bytes in, %d streamed; the full had %d in", inc.in, filesBytes(mi), full.in)
	}
}
