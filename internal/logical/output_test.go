package logical

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// recordingOutput keeps what a dump hands an Output, and keeps the
// tables named in keep.
type recordingOutput struct {
	keep map[string]bool
	mu   sync.Mutex
	// asked: tables Keep was asked about; open: files created and not
	// closed; closed: each table's closed chunks; done: TableDone's.
	asked  []string
	open   map[int]bool
	closed map[string][]Chunk
	bytes  map[int]int64
	done   map[string]TableData
	errs   []error
}

func newRecordingOutput(keep ...string) *recordingOutput {
	o := &recordingOutput{keep: map[string]bool{}, open: map[int]bool{}, closed: map[string][]Chunk{}, bytes: map[int]int64{}, done: map[string]TableData{}}
	for _, k := range keep {
		o.keep[k] = true
	}
	return o
}

func (o *recordingOutput) fail(format string, a ...any) {
	o.errs = append(o.errs, fmt.Errorf(format, a...))
}

func (o *recordingOutput) Keep(ctx context.Context, db, table string, sum func(context.Context) (int64, RowSum, error)) (bool, error) {
	name := db + "." + table
	o.mu.Lock()
	if slices.Contains(o.asked, name) {
		o.fail("Keep asked twice about %s", name)
	}
	o.asked = append(o.asked, name)
	o.mu.Unlock()
	if !o.keep[name] {
		return false, nil
	}
	_, _, err := sum(ctx)
	return true, err
}

type recordingFile struct {
	o    *recordingOutput
	name string
	id   int
}

func (o *recordingOutput) Create(_ context.Context, db, table string, c Chunk) (DataWriter, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	name := db + "." + table
	if !slices.Contains(o.asked, name) || o.keep[name] {
		o.fail("%s: data file %d made, but Keep was not asked or kept it", name, c.ID)
	}
	o.open[c.ID] = true
	return &recordingFile{o: o, name: name, id: c.ID}, nil
}

func (f *recordingFile) Write(_ context.Context, p []byte) error {
	f.o.mu.Lock()
	defer f.o.mu.Unlock()
	f.o.bytes[f.id] += int64(len(p))
	return nil
}

func (f *recordingFile) Close(_ context.Context, c Chunk) error {
	f.o.mu.Lock()
	defer f.o.mu.Unlock()
	if c.ID != f.id || c.Bytes != f.o.bytes[f.id] {
		f.o.fail("%s: data file %d closed as %d with %d bytes, %d written", f.name, f.id, c.ID, c.Bytes, f.o.bytes[f.id])
	}
	delete(f.o.open, f.id)
	f.o.closed[f.name] = append(f.o.closed[f.name], c)
	return nil
}

func (o *recordingOutput) TableDone(_ context.Context, t TableData) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	name := t.Database + "." + t.Table
	if _, ok := o.done[name]; ok {
		o.fail("TableDone twice for %s", name)
	}
	for _, c := range t.Chunks {
		if o.open[c.ID] {
			o.fail("%s: TableDone before data file %d closed", name, c.ID)
		}
	}
	byID := func(a, b Chunk) int { return a.ID - b.ID }
	got, want := slices.SortedFunc(slices.Values(t.Chunks), byID), slices.SortedFunc(slices.Values(o.closed[name]), byID)
	if !slices.Equal(got, want) {
		o.fail("%s: TableDone lists %v, the files closed were %v", name, got, want)
	}
	o.done[name] = t
	return nil
}

// A dump into an Output asks Keep once per table before making any data
// file of it, makes none of a table kept, ends every file before the
// table's TableDone, which lists exactly those files; their rows and row
// sums are the table's (SumTable).
func TestDumpIntoOutput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	for _, q := range []string{
		"CREATE DATABASE o",
		"CREATE TABLE o.ranged (id INT PRIMARY KEY, v VARCHAR(100)) ENGINE=InnoDB",
		"INSERT INTO o.ranged SELECT seq, REPEAT('x', seq % 100) FROM o.seq_1_to_20000",
		"CREATE TABLE o.keyset (id VARCHAR(20) PRIMARY KEY, v INT) ENGINE=InnoDB",
		"INSERT INTO o.keyset SELECT CONCAT('k', seq), seq FROM o.seq_1_to_20000",
		// One scan, cut into files at 1 MiB payloads.
		"CREATE TABLE o.scan (v INT, pad CHAR(32)) ENGINE=InnoDB",
		"INSERT INTO o.scan SELECT seq, MD5(seq) FROM o.seq_1_to_100000",
		"CREATE TABLE o.aria (id INT PRIMARY KEY, v INT) ENGINE=Aria",
		"INSERT INTO o.aria SELECT seq, seq FROM o.seq_1_to_5000",
		"CREATE TABLE o.empty (id INT PRIMARY KEY) ENGINE=InnoDB",
		"CREATE TABLE o.kept (id INT PRIMARY KEY) ENGINE=InnoDB",
		"INSERT INTO o.kept SELECT seq FROM o.seq_1_to_100",
	} {
		if _, err := src.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	d, err := OpenDump(ctx, DumpOptions{Conn: mariadb.Config{Socket: src.Socket, User: "root"}, Parallel: 3, ChunkBytes: 64 << 10,
		Filter: schema.Filter{Databases: []string{"o"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	out := newRecordingOutput("o.kept")
	pos, err := d.Run(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	if pos.GTID == "" || pos.BinlogFile == "" {
		t.Errorf("position %+v", pos)
	}
	for _, err := range out.errs {
		t.Error(err)
	}
	c, err := src.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cat := d.Catalog()
	for _, db := range cat.Schema.Databases {
		for _, tb := range db.Tables {
			name := db.Name + "." + tb.Name
			if !slices.Contains(out.asked, name) {
				t.Errorf("%s: Keep never asked", name)
			}
			td, ok := out.done[name]
			if name == "o.kept" {
				if ok {
					t.Errorf("%s: kept, but dumped", name)
				}
				continue
			}
			if !ok {
				t.Errorf("%s: no TableDone", name)
				continue
			}
			rows, sum, _ := td.Sum()
			wantRows, wantSum, err := SumTable(ctx, c, db.Name, tb, cat.DataFormat)
			if err != nil {
				t.Fatal(err)
			}
			if rows != wantRows || sum != wantSum {
				t.Errorf("%s: data files hold %d rows (sum %s), the table %d (%s)", name, rows, sum, wantRows, wantSum)
			}
			if name != "o.empty" && len(td.Chunks) < 2 {
				t.Errorf("%s: %d data files, want several", name, len(td.Chunks))
			}
		}
	}
}
