package cli

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"

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
	repoDir := newRepoDir(t)
	backup := append([]string{"backup", "--logical", "--repo", repoDir, "--skip-users"}, sandboxConn(src)...)

	r := run(t, backup...)
	if r.code != ExitFailure || r.err == nil || !strings.Contains(r.err.Error(), "v.trx") ||
		!strings.Contains(r.err.Error(), "--versioned-current-only") || strings.Contains(r.err.Error(), "v.ts") {
		t.Fatalf("backup of a table versioned by transaction id: exit %d, %v; want exit %d naming v.trx (only) and --versioned-current-only", r.code, r.err, ExitFailure)
	}
	if entries := backupListing(t, repoDir); len(entries) != 0 {
		t.Fatalf("the refused backup left %d backups in the repository", len(entries))
	}

	r = run(t, append(backup, "--versioned-current-only")...).mustSucceed(t)
	const said = "table v.trx: history not in the backup (--versioned-current-only)"
	if !strings.Contains(r.stdout, said) || strings.Contains(r.stdout, "v.ts:") {
		t.Errorf("backup printed %q, want it to say %q (and nothing of v.ts)", r.stdout, said)
	}
	if out := run(t, "list", "--repo", repoDir).mustSucceed(t).stdout; !strings.Contains(out, said) {
		t.Errorf("list printed %q, want it to say %q", out, said)
	}
	if e := backupListing(t, repoDir); len(e) != 1 || len(e[0].Databases) != 1 || strings.Join(e[0].Databases[0].NoHistory, ",") != "trx" {
		t.Errorf("list --json: %+v, want database v with no_history [trx]", e)
	}

	dst := sandboxtest.Start(t, sandbox.Options{})
	r = run(t, append([]string{"restore", "--repo", repoDir}, sandboxConn(dst)...)...).mustSucceed(t)
	if !strings.Contains(r.stdout, said) {
		t.Errorf("restore printed %q, want it to say %q", r.stdout, said)
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
	run(t, "verify", "latest", "--repo", repoDir, "--restore-test").mustSucceed(t)

	if r := run(t, append([]string{"backup", "--repo", repoDir, "--versioned-current-only"}, sandboxConn(src)...)...); r.code != ExitUsage {
		t.Errorf("--versioned-current-only without --logical: exit %d, want %d", r.code, ExitUsage)
	}
	run(t, append([]string{"backup", "--repo", repoDir, "--parallel", "2"}, sandboxConn(src)...)...).mustSucceed(t)
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

	repoDir := newRepoDir(t)
	run(t, append([]string{"backup", "--logical", "--repo", repoDir, "--parallel", "2", "--skip-users"}, sandboxConn(src)...)...).mustSucceed(t)
	if e := backupListing(t, repoDir); len(e) != 1 || len(e[0].Databases) != 1 || e[0].Databases[0].Rows != wantRows {
		t.Errorf("list --json: %+v, want database e with %d rows: the rows of its own tables, none read through another", e, wantRows)
	}
	r := run(t, append([]string{"restore", "--repo", repoDir}, sandboxConn(dst)...)...).mustSucceed(t)
	definitionOnly := []string{"e.a_merge: definition only (MRG_MyISAM", "e.a_fed: definition only (FEDERATED"}
	if connect {
		definitionOnly = append(definitionOnly, "e.a_conn: definition only (CONNECT")
	}
	for _, name := range definitionOnly {
		if !strings.Contains(r.stdout, "table "+name) {
			t.Errorf("restore printed %q, want it to name table %s", r.stdout, name)
		}
	}
	if strings.Contains(r.stdout, "own_csv") {
		t.Errorf("restore printed %q: the CONNECT table with a file of its own is not definition only", r.stdout)
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
	run(t, append([]string{"backup", "--logical", "--repo", repoDir, "--skip-users", "--table", "e.m1,e.m2,e.a_merge"}, sandboxConn(src)...)...).mustSucceed(t)
	run(t, "verify", "latest", "--repo", repoDir, "--restore-test").mustSucceed(t)
}
