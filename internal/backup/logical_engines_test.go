package backup_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/refusal"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// A table versioned by transaction id cannot get its history back: the
// server ignores the period values a load gives it. A logical backup of it
// refuses, naming it and the flag, and commits nothing; with
// --versioned-current-only it dumps the current rows, and the backup,
// list and the restore say the history is not there. A timestamp-versioned
// table in the same backup keeps its whole history. A physical backup,
// which copies the history as it is, is not refused.
func TestLogicalVersionedByTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	usecasetest.ExecAll(t, src.DB(),
		"CREATE DATABASE v",
		`CREATE TABLE v.trx (id INT PRIMARY KEY, n INT,
			s BIGINT UNSIGNED GENERATED ALWAYS AS ROW START INVISIBLE, e BIGINT UNSIGNED GENERATED ALWAYS AS ROW END INVISIBLE,
			PERIOD FOR SYSTEM_TIME (s, e)) ENGINE=InnoDB WITH SYSTEM VERSIONING`,
		"CREATE TABLE v.ts (id INT PRIMARY KEY, n INT) ENGINE=InnoDB WITH SYSTEM VERSIONING",
	)
	for _, tbl := range []string{"v.trx", "v.ts"} {
		usecasetest.ExecAll(t, src.DB(),
			"INSERT INTO "+tbl+" (id, n) SELECT seq, seq FROM v.seq_1_to_50",
			"UPDATE "+tbl+" SET n = n + 100 WHERE id <= 20",
			"DELETE FROM "+tbl+" WHERE id > 45")
	}
	wantCurrent := usecasetest.QueryRows(t, src.DB(), "SELECT id, n FROM v.trx ORDER BY id")
	wantTSHistory := usecasetest.QueryRows(t, src.DB(), "SELECT id, n, row_start, row_end FROM v.ts FOR SYSTEM_TIME ALL ORDER BY id, row_end")
	if len(usecasetest.QueryRows(t, src.DB(), "SELECT id FROM v.trx FOR SYSTEM_TIME ALL")) != 70 || len(wantTSHistory) != 70 {
		t.Fatal("the source tables do not hold the history the test expects")
	}
	repo := usecasetest.NewLocalRepo(t)
	req := usecasetest.LogicalBackupOf(t, repo, src)
	req.Dump.Skip.Users = true

	res, err := backup.Run(ctx, req)
	if !usecasetest.Failed(err) || res != nil || !strings.Contains(err.Error(), "v.trx") ||
		!strings.Contains(err.Error(), "--versioned-current-only") || strings.Contains(err.Error(), "v.ts") {
		t.Fatalf("backup of a table versioned by transaction id: %+v, %v; want a failure naming v.trx (only) and --versioned-current-only", res, err)
	}
	if entries := usecasetest.List(t, repo); len(entries) != 0 {
		t.Fatalf("the refused backup left %d backups in the repository", len(entries))
	}

	req.Dump.VersionedCurrentOnly = true
	// What backup, list and restore print of the table.
	const said = "table v.trx: history not in the backup (--versioned-current-only)"
	if made := usecasetest.Backup(t, req); !slices.Equal(made.NoHistory, []string{"v.trx"}) {
		t.Errorf("backup without history of %q, want v.trx (and nothing of v.ts)", made.NoHistory)
	}
	if e := usecasetest.List(t, repo); len(e) != 1 || len(e[0].Databases) != 1 || e[0].Databases[0].Name != "v" || strings.Join(e[0].Databases[0].NoHistory, ",") != "trx" {
		t.Errorf("list: %+v, want database v with no_history [trx]", e)
	}

	dst := sandboxtest.Start(t, sandbox.Options{})
	if l := usecasetest.Restore(t, usecasetest.LoadOf(repo, "", dst)).Load; l == nil || !strings.Contains(strings.Join(l.HistoryLeftOut, "\n"), said) {
		t.Errorf("restore: %+v, want it to say %q", l, said)
	}
	if got := usecasetest.QueryRows(t, dst.DB(), "SELECT id, n FROM v.trx ORDER BY id"); strings.Join(got, "\n") != strings.Join(wantCurrent, "\n") {
		t.Errorf("restored current rows of v.trx:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantCurrent, "\n"))
	}
	if n := len(usecasetest.QueryRows(t, dst.DB(), "SELECT id FROM v.trx FOR SYSTEM_TIME ALL")); n != len(wantCurrent) {
		t.Errorf("restored v.trx holds %d rows over all time, want its %d current rows (history rows made current?)", n, len(wantCurrent))
	}
	if got := usecasetest.QueryRows(t, dst.DB(), "SELECT id, n, row_start, row_end FROM v.ts FOR SYSTEM_TIME ALL ORDER BY id, row_end"); strings.Join(got, "\n") != strings.Join(wantTSHistory, "\n") {
		t.Errorf("restored history of v.ts differs from the source's:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantTSHistory, "\n"))
	}
	// The restore test reads the tables back as the dump read them.
	if rep, err := usecasetest.RestoreTest(t, repo, "latest"); err != nil {
		t.Fatalf("restore test: %v (%+v)", err, rep)
	}

	// --versioned-current-only without --logical.
	physical := usecasetest.BackupOf(t, repo, src)
	physical.Given.Dump = "versioned-current-only"
	var refused *refusal.Error
	if res, err := backup.Run(ctx, physical); !errors.As(err, &refused) || res != nil {
		t.Errorf("--versioned-current-only without --logical: %+v, %v; want a refusal", res, err)
	}
	usecasetest.Backup(t, usecasetest.BackupOf(t, repo, src))
}

// Tables whose rows are other tables' are dumped as their definition only
// and created after the tables they name: a MERGE table over two MyISAM
// tables (a restore that loaded its rows too would show every row twice),
// a FEDERATED table over a table of the same server (loading its rows
// would write them into that table, on the source server its definition
// names), and, where the CONNECT engine is installed, a CONNECT table over
// another table; a CONNECT table whose rows are a file of its own keeps
// them.
func TestLogicalRowsElsewhere(t *testing.T) {
	t.Parallel()
	_, err := os.Stat("/usr/lib/mysql/plugin/ha_connect.so")
	connect := err == nil
	if !connect {
		t.Log("ha_connect.so is not installed (mariadb-plugin-connect): the CONNECT tables are left out")
	}
	src := sandboxtest.Start(t, sandbox.Options{})
	dst := sandboxtest.Start(t, sandbox.Options{})
	for _, s := range []*sandbox.Server{src, dst} {
		usecasetest.ExecAll(t, s.DB(), "INSTALL SONAME 'ha_federatedx'")
		if connect {
			usecasetest.ExecAll(t, s.DB(), "INSTALL SONAME 'ha_connect'")
		}
	}
	usecasetest.ExecAll(t, src.DB(),
		"CREATE DATABASE e",
		"CREATE TABLE e.m1 (id INT NOT NULL, KEY (id)) ENGINE=MyISAM",
		"CREATE TABLE e.m2 (id INT NOT NULL, KEY (id)) ENGINE=MyISAM",
		"INSERT INTO e.m1 SELECT seq FROM e.seq_1_to_30",
		"INSERT INTO e.m2 SELECT seq FROM e.seq_31_to_50",
		// Named to sort before its tables: a restore in name order would
		// create it first.
		"CREATE TABLE e.a_merge (id INT NOT NULL, KEY (id)) ENGINE=MRG_MyISAM UNION=(e.m1, e.m2) INSERT_METHOD=LAST",
		"CREATE TABLE e.remote (id INT PRIMARY KEY, v VARCHAR(10)) ENGINE=InnoDB",
		"INSERT INTO e.remote SELECT seq, seq FROM e.seq_1_to_40",
		fmt.Sprintf("CREATE TABLE e.a_fed (id INT PRIMARY KEY, v VARCHAR(10)) ENGINE=FEDERATED CONNECTION='mysql://root@127.0.0.1:%d/e/remote'", src.Port),
	)
	wantRows := int64(30 + 20 + 40)
	if connect {
		usecasetest.ExecAll(t, src.DB(),
			"CREATE TABLE e.a_conn (id INT NOT NULL, v VARCHAR(10)) ENGINE=CONNECT TABLE_TYPE=PROXY TABNAME='remote'",
			"CREATE TABLE e.own_csv (id INT NOT NULL, v VARCHAR(10) NOT NULL) ENGINE=CONNECT TABLE_TYPE=CSV",
			"INSERT INTO e.own_csv VALUES (1, 'one'), (2, 'two'), (3, 'three')")
		wantRows += 3
	}
	counts := func(db *sql.DB) string {
		q := "SELECT (SELECT COUNT(*) FROM e.a_merge), (SELECT COUNT(*) FROM e.a_fed), (SELECT COUNT(*) FROM e.remote)"
		if connect {
			q += ", (SELECT COUNT(*) FROM e.a_conn), (SELECT COUNT(*) FROM e.own_csv)"
		}
		return strings.Join(usecasetest.QueryRows(t, db, q), "")
	}
	want := counts(src.DB())
	wantDefs, err := sandboxtest.DescribeObjects(context.Background(), src.DB(), "e")
	if err != nil {
		t.Fatal(err)
	}

	repo := usecasetest.NewLocalRepo(t)
	req := usecasetest.LogicalBackupOf(t, repo, src)
	req.Dump.Skip.Users = true
	usecasetest.Backup(t, req)
	if e := usecasetest.List(t, repo); len(e) != 1 || len(e[0].Databases) != 1 || e[0].Databases[0].Rows != wantRows {
		t.Errorf("list: %+v, want database e with %d rows: the rows of its own tables, none read through another", e, wantRows)
	}
	l := usecasetest.Restore(t, usecasetest.LoadOf(repo, "", dst)).Load
	if l == nil {
		t.Fatal("the restore loaded nothing")
	}
	said := strings.Join(l.DefinitionOnly, "\n")
	definitionOnly := []string{"e.a_merge: definition only (MRG_MyISAM", "e.a_fed: definition only (FEDERATED"}
	if connect {
		definitionOnly = append(definitionOnly, "e.a_conn: definition only (CONNECT")
	}
	for _, name := range definitionOnly {
		if !strings.Contains(said, "table "+name) {
			t.Errorf("restore's tables made without rows: %q, want it to name table %s", l.DefinitionOnly, name)
		}
	}
	// Nothing the restore says (what its text prints) names the CONNECT
	// table with a file of its own.
	for _, s := range slices.Concat(l.DefinitionOnly, l.Reloaded, l.Kept, l.Dropped, l.HistoryLeftOut, l.LeftOut) {
		if strings.Contains(s, "own_csv") {
			t.Errorf("restore said %q: the CONNECT table with a file of its own is not definition only", s)
		}
	}
	if got := counts(dst.DB()); got != want {
		t.Errorf("restored counts (merge, federated, remote[, connect proxy, connect csv]) %s, want the source's %s", got, want)
	}
	// The restored FEDERATED table names the source's table: a load
	// through it would have added rows there.
	if got := counts(src.DB()); got != want {
		t.Errorf("after the restore the source's counts are %s, were %s", got, want)
	}
	gotDefs, err := sandboxtest.DescribeObjects(context.Background(), dst.DB(), "e")
	if err != nil {
		t.Fatal(err)
	}
	usecasetest.CompareDescriptions(t, gotDefs, wantDefs)

	// The restore test's server has none of the plugins: a backup of the
	// MERGE table and its tables only, whose restored MERGE table shows
	// their rows and no rows of its own.
	req = usecasetest.LogicalBackupOf(t, repo, src)
	req.Dump.Filter.Tables, req.Dump.Skip.Users = []string{"e.m1", "e.m2", "e.a_merge"}, true
	usecasetest.Backup(t, req)
	if rep, err := usecasetest.RestoreTest(t, repo, "latest"); err != nil {
		t.Fatalf("restore test: %v (%+v)", err, rep)
	}
}
