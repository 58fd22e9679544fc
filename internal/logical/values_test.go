package logical

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/codec"
	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/xbstream"
)

// The load's sql_mode keeps the source's, less the flags that would turn
// a stored zero or invalid date into 0000-00-00, plus the ones that keep
// values as they are.
func TestLoadSQLMode(t *testing.T) {
	for _, c := range []struct{ source, want string }{
		{"", "NO_AUTO_VALUE_ON_ZERO,ALLOW_INVALID_DATES"},
		{"STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION",
			"STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION,NO_AUTO_VALUE_ON_ZERO,ALLOW_INVALID_DATES"},
		// As @@GLOBAL.sql_mode shows TRADITIONAL.
		{"STRICT_TRANS_TABLES,STRICT_ALL_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,TRADITIONAL,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION",
			"STRICT_TRANS_TABLES,STRICT_ALL_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION,NO_AUTO_VALUE_ON_ZERO,ALLOW_INVALID_DATES"},
		{"traditional", "STRICT_TRANS_TABLES,STRICT_ALL_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION,NO_AUTO_VALUE_ON_ZERO,ALLOW_INVALID_DATES"},
		{"ANSI_QUOTES,NO_AUTO_VALUE_ON_ZERO,NO_ZERO_DATE,ALLOW_INVALID_DATES", "ANSI_QUOTES,NO_AUTO_VALUE_ON_ZERO,ALLOW_INVALID_DATES"},
	} {
		if got := loadSQLMode(c.source); got != c.want {
			t.Errorf("loadSQLMode(%q) = %q, want %q", c.source, got, c.want)
		}
	}
}

// ENUM and SET columns load through a number in the numeric format, by
// name in the text one; other columns alike in both.
func TestLoadStatementFormats(t *testing.T) {
	tb := &schema.Table{Name: "t", Columns: []schema.Column{{Name: "id", DataType: "int"}, {Name: "e", DataType: "enum"}, {Name: "s", DataType: "set"}, {Name: "b", DataType: "bit"}}}
	cols := []string{"id", "e", "s", "b"}
	text := loadStatement("`d`.`t`", tb, cols, DataFormatText)
	if !strings.Contains(text, "(`id`, `e`, `s`, @v3) SET `b` = CAST(@v3 AS UNSIGNED)") {
		t.Errorf("text format: %s", text)
	}
	num := loadStatement("`d`.`t`", tb, cols, DataFormatNumeric)
	if !strings.Contains(num, "(`id`, @v1, @v2, @v3) SET `e` = CAST(@v1 AS UNSIGNED), `s` = CAST(@v2 AS UNSIGNED), `b` = CAST(@v3 AS UNSIGNED)") {
		t.Errorf("numeric format: %s", num)
	}
	for format, want := range map[int]string{DataFormatText: "`id`, `e`, `s`, CAST(`b` AS UNSIGNED)", DataFormatNumeric: "`id`, CAST(`e` AS UNSIGNED), CAST(`s` AS UNSIGNED), CAST(`b` AS UNSIGNED)"} {
		if got := newTableWork("d", tb, format).list; got != want {
			t.Errorf("format %d: select list %s, want %s", format, got, want)
		}
	}
}

// A catalog from a newer backstream, whose data files this one would
// misread, is refused; one without a data format is the text format.
func TestParseCatalogDataFormat(t *testing.T) {
	c, err := ParseCatalog([]byte(`{"schema":{},"sql_mode":"","tables":[]}`))
	if err != nil || c.DataFormat != DataFormatText {
		t.Fatalf("catalog without data_format: %+v, %v", c, err)
	}
	if _, err := ParseCatalog([]byte(`{"schema":{},"data_format":1,"tables":[]}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseCatalog([]byte(`{"schema":{},"data_format":2,"tables":[]}`)); err == nil || !strings.Contains(err.Error(), "data file format 2") {
		t.Fatalf("data_format 2: %v", err)
	}
}

// A backup in the text format (every backup made before the numeric one)
// loads as it always did: ENUM and SET columns by their text, so an
// ENUM's error value comes back as its empty member when it has one (and
// as the error value when not), a SET holding only its empty member as
// the empty set. Its dates come back exact, and the row sums its restore test
// compares still match. A new backup writes the numeric format.
func TestLoadTextFormatBackup(t *testing.T) {
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{Args: []string{"--sql-mode=TRADITIONAL"}})
	if err := sandboxtest.LoadValueFixtures(ctx, src.DB()); err != nil {
		t.Fatal(err)
	}
	want, err := sandboxtest.DescribeValues(ctx, src.DB(), sandboxtest.ValuesDB)
	if err != nil {
		t.Fatal(err)
	}
	r := testRepo(t)
	c, _ := codec.Parse("zstd")
	dump := func(legacy bool) (*archive.Manifest, *Catalog, []byte) {
		t.Helper()
		m, err := Dump(ctx, DumpJob{Dest: r, Codec: c, DumpOptions: DumpOptions{
			Conn: mariadb.Config{Socket: src.Socket, User: "root"}, Parallel: 2,
			// Its '' member and error value collide as a key in the text
			// format: that backup cannot load (and never could).
			Filter: schema.Filter{Databases: []string{sandboxtest.ValuesDB}, ExcludeTables: []string{sandboxtest.ValuesDB + ".enum_key"}},
			Skip:   schema.Skip{Users: true}, legacyText: legacy,
		}})
		if err != nil {
			t.Fatal(err)
		}
		cat, data := catalogOf(t, r, m)
		return m, cat, data
	}
	m, cat, raw := dump(true)
	if bytes.Contains(raw, []byte("data_format")) || cat.DataFormat != DataFormatText {
		t.Fatalf("a text-format catalog must look like the ones made before the format existed: %s", raw)
	}
	// Row 1: e, en and ed hold their error value, s only its empty member.
	if enums := readDataFiles(t, r, m, "fid_v/enums_innodb."); !strings.HasPrefix(enums, "1\t\t\t\t\tm00,") && !strings.Contains(enums, "\n1\t\t\t\t\tm00,") {
		t.Fatalf("text format data files: %q", enums)
	}
	_, cur, raw := dump(false)
	if cur.DataFormat != DataFormatNumeric || !bytes.Contains(raw, []byte(`"data_format":1`)) {
		t.Fatalf("a new backup's catalog: %s", raw)
	}

	dst := sandboxtest.Start(t, sandbox.Options{Args: []string{"--sql-mode=TRADITIONAL"}})
	_, err = Load(ctx, LoadJob{Conn: mariadb.Config{Socket: dst.Socket, User: "root"}, Input: r.Input(m), Manifest: m, Catalog: cat, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	got, err := sandboxtest.DescribeValues(ctx, dst.DB(), sandboxtest.ValuesDB)
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"fid_v.dates_innodb", "fid_v.dates_myisam"} {
		if got[table] != want[table] {
			t.Errorf("%s:\n got:\n%s\nwant:\n%s", table, got[table], want[table])
		}
	}
	// Row 1: e ENUM('', 'a', 'b') and en ENUM('a', 'b') hold their error
	// value, s SET('', 'a', 'b') only its '' member.
	for _, table := range []string{"fid_v.enums_innodb", "fid_v.enums_aria"} {
		row1 := strings.SplitN(got[table], "\n", 2)[0]
		if f := strings.Split(row1, "\t"); len(f) < 9 || f[2] != "1" || f[4] != "0" || f[8] != "0" {
			t.Errorf("%s: row 1 %q: want e at its '' member (1), en at its error value (0), s empty (0), as text-format backups load", table, row1)
		}
	}
	// Not dst.DB(): it parses dates, which SumTable refuses.
	db, err := mariadb.Open(ctx, mariadb.Config{Socket: dst.Socket, User: "root"}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, td := range cat.Tables {
		wantRows, wantSum, ok := td.Sum()
		if !ok {
			t.Fatalf("%s.%s: no row sums recorded", td.Database, td.Table)
		}
		var tb *schema.Table
		for _, d := range cat.Schema.Databases {
			for _, x := range d.Tables {
				if d.Name == td.Database && x.Name == td.Table {
					tb = x
				}
			}
		}
		rows, sum, err := SumTable(ctx, conn, td.Database, tb, cat.DataFormat)
		if err != nil {
			t.Fatal(err)
		}
		if rows != wantRows || sum != wantSum {
			t.Errorf("%s.%s: %d rows, row sum %s; the backup recorded %d, %s", td.Database, td.Table, rows, sum, wantRows, wantSum)
		}
	}
}

// readDataFiles returns the data files of a backup whose paths start with
// prefix, one after the other in path order.
func readDataFiles(t *testing.T, r *repo.Repo, m *archive.Manifest, prefix string) string {
	t.Helper()
	var mu sync.Mutex // streams are read in parallel
	files := map[string][]byte{}
	err := archive.Read(context.Background(), archive.ReadOptions{Input: r.Input(m), Manifest: m, Sink: sinkFunc(func(c *xbstream.Chunk) error {
		if strings.HasPrefix(c.Path, prefix) && c.Type == xbstream.TypePayload {
			mu.Lock()
			files[c.Path] = append(files[c.Path], c.Payload...)
			mu.Unlock()
		}
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, p := range slices.Sorted(maps.Keys(files)) {
		out = append(out, files[p]...)
	}
	return string(out)
}

type sinkFunc func(c *xbstream.Chunk) error

func (f sinkFunc) Chunk(c *xbstream.Chunk) error { return f(c) }
