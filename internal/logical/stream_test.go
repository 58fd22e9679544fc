package logical

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
)

// A load from a dump that did not finish (its journal says so) resumes
// from a new dump: tables it loaded whole that nobody changed are kept;
// one the source changed, one the target changed and one it had not
// finished are loaded again, the rest too; one the source dropped is
// dropped. The target then holds exactly the source's tables.
func TestLoadFromDumpResumes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	dst := sandboxtest.Start(t, sandbox.Options{})
	exec := func(s *sandbox.Server, qs ...string) {
		t.Helper()
		for _, q := range qs {
			if _, err := s.DB().ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	exec(src, "CREATE DATABASE c")
	for i := range 6 {
		exec(src, fmt.Sprintf("CREATE TABLE c.t%d (id INT PRIMARY KEY, v VARCHAR(40), KEY v (v)) ENGINE=InnoDB", i),
			fmt.Sprintf("INSERT INTO c.t%d SELECT seq, MD5(seq) FROM c.seq_1_to_%d", i, 5000+i*1000))
	}
	// load dumps the source into the target; without finish it stops
	// before the keys and the journal's end, as a killed copy would.
	load := func(resume, finish bool) (*LoadResult, error) {
		d, err := OpenDump(ctx, DumpOptions{Conn: mariadb.Config{Socket: src.Socket, User: "root"}, Parallel: 2, ChunkBytes: 64 << 10,
			Filter: schema.Filter{Databases: []string{"c"}}})
		if err != nil {
			return nil, err
		}
		defer d.Close()
		ld, err := OpenLoad(ctx, LoadJob{Conn: mariadb.Config{Socket: dst.Socket, User: "root"}, ID: "copy-test", Catalog: d.Catalog(),
			Parallel: 2, Resume: resume})
		if err != nil {
			return nil, err
		}
		defer ld.Close()
		if err := ld.Prepare(ctx); err != nil {
			return nil, err
		}
		err = ld.LoadFrom(ctx, func(ctx context.Context, out Output) error {
			_, err := d.Run(ctx, out)
			return err
		})
		if err != nil || !finish {
			return nil, err
		}
		return ld.Finish(ctx)
	}
	if _, err := load(false, false); err != nil {
		t.Fatal(err)
	}
	if _, err := load(false, true); err == nil || !strings.Contains(err.Error(), "did not finish; --resume continues it") {
		t.Fatalf("a load over the unfinished one: %v; want a refusal", err)
	}
	exec(dst, "UPDATE backstream_load.tables SET complete = FALSE WHERE tbl = 't4'", "DELETE FROM c.t4 WHERE id > 100",
		"DELETE FROM c.t2 WHERE id = 7")
	exec(src, "UPDATE c.t1 SET v = 'changed' WHERE id = 5", "DROP TABLE c.t5", "INSERT INTO c.t4 VALUES (0, 'new')")
	res, err := load(true, true)
	if err != nil {
		t.Fatal(err)
	}
	said := strings.Join(slices.Concat(res.Kept, res.Reloaded, res.Dropped), "\n")
	for _, want := range []string{
		"table c.t0 kept", "table c.t3 kept",
		"table c.t1 reloaded from scratch: its rows on the source changed",
		"table c.t2 reloaded from scratch: its rows on the target differ",
		"table c.t4 reloaded from scratch: an earlier run did not finish it",
		"table c.t5 dropped",
	} {
		if !strings.Contains(said, want) {
			t.Errorf("the resumed load said:\n%s\nwant %q", said, want)
		}
	}
	if len(res.Kept) != 2 {
		t.Errorf("kept %v, want t0 and t3", res.Kept)
	}
	want, err := sandbox.ChecksumTables(ctx, src.DB())
	if err != nil {
		t.Fatal(err)
	}
	have, err := sandbox.ChecksumTables(ctx, dst.DB())
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(have) != fmt.Sprint(want) {
		t.Errorf("target %v, source %v", have, want)
	}
	wantObjs, err := sandboxtest.DescribeObjects(ctx, src.DB(), "c")
	if err != nil {
		t.Fatal(err)
	}
	gotObjs, err := sandboxtest.DescribeObjects(ctx, dst.DB(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(gotObjs) != fmt.Sprint(wantObjs) {
		t.Errorf("objects on the target %v, the source's %v", gotObjs, wantObjs)
	}
}
