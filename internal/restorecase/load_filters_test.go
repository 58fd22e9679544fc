package restorecase_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// Filters and renaming load exactly what was asked for. (That restore's
// old plural flag names choose the same is TestRestoreFilterOldNames, in
// internal/cli.)
func TestLogicalFiltersAndRename(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	usecasetest.ExecAll(t, src.DB(),
		"CREATE DATABASE a", "CREATE DATABASE b",
		"CREATE TABLE a.t1 (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO a.t1 SELECT seq, seq FROM a.seq_1_to_1000",
		"CREATE TABLE a.log (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO a.log SELECT seq, seq FROM a.seq_1_to_500",
		"CREATE TABLE b.t2 (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO b.t2 SELECT seq, seq FROM b.seq_1_to_700",
		"CREATE VIEW a.v1 AS SELECT id FROM a.t1 WHERE id < 10",
	)
	want := usecasetest.Checksums(t, src)
	repo := usecasetest.NewLocalRepo(t)
	req := usecasetest.LogicalBackupOf(t, repo, src)
	req.Dump.Skip.Users = true
	usecasetest.Backup(t, req)

	for _, c := range []struct {
		name  string
		load  restorecase.Choices
		want  map[string]string // target table -> source table
		views []string
	}{
		{"database", restorecase.Choices{Databases: []string{"b"}}, map[string]string{"b.t2": "b.t2"}, nil},
		{"exclude-table", restorecase.Choices{ExcludeTables: []string{"a.log"}, Databases: []string{"a"}}, map[string]string{"a.t1": "a.t1"}, []string{"a.v1"}},
		{"table", restorecase.Choices{Tables: []string{"a.log"}}, map[string]string{"a.log": "a.log"}, nil},
		{"exclude-database", restorecase.Choices{ExcludeDatabases: []string{"a"}}, map[string]string{"b.t2": "b.t2"}, nil},
		// Every filter narrows what the others pick: --table inside
		// --database, exclusions last.
		{"database and table", restorecase.Choices{Databases: []string{"a"}, Tables: []string{"a.log"}}, map[string]string{"a.log": "a.log"}, nil},
		{"table and exclude-table", restorecase.Choices{Tables: []string{"a.t1", "a.log"}, ExcludeTables: []string{"a.log"}}, map[string]string{"a.t1": "a.t1"}, nil},
		{"database and exclude-database", restorecase.Choices{Databases: []string{"a", "b"}, ExcludeDatabases: []string{"a"}}, map[string]string{"b.t2": "b.t2"}, nil},
		{"rename", restorecase.Choices{Databases: []string{"a"}, Rename: []string{"a:a_copy"}}, map[string]string{"a_copy.t1": "a.t1", "a_copy.log": "a.log"}, []string{"a_copy.v1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst := sandboxtest.Start(t, sandbox.Options{})
			load := usecasetest.LoadOf(repo, "", dst)
			load.Load = c.load
			usecasetest.Restore(t, load)
			got := usecasetest.Checksums(t, dst)
			for table, from := range c.want {
				if got[table] != want[from] {
					t.Errorf("%s: checksum %q, want %q (of %s)", table, got[table], want[from], from)
				}
			}
			for table := range got {
				if _, ok := c.want[table]; !ok {
					t.Errorf("%s restored, not asked for", table)
				}
			}
			rows, err := dst.DB().QueryContext(ctx, "SELECT CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) FROM information_schema.VIEWS WHERE TABLE_SCHEMA NOT IN ('mysql', 'sys')")
			if err != nil {
				t.Fatal(err)
			}
			var views []string
			for rows.Next() {
				var v string
				rows.Scan(&v)
				views = append(views, v)
			}
			rows.Close()
			if fmt.Sprint(views) != fmt.Sprint(c.views) {
				t.Errorf("views %v, want %v", views, c.views)
			}
		})
	}
}
