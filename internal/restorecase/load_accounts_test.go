package restorecase_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// showOne is every row of the SHOW statement q, sorted and one a line,
// or the error it ended with.
func showOne(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		return "error: " + err.Error()
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// Accounts are opt-in on a logical restore, and a partial restore is
// whole: without --users the target's accounts do not change; with it the
// backup's are created, the target's kept (or replaced with
// --replace-users) and passwordless ones named; with --table only the
// grants and objects that refer to restored tables are restored, the rest
// listed, exit 0. The target server is named before the load.
func TestLogicalRestoreAccounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	usecasetest.ExecAll(t, src.DB(),
		"CREATE DATABASE shop",
		"CREATE TABLE shop.items (id INT PRIMARY KEY, v INT)", "INSERT INTO shop.items SELECT seq, seq FROM shop.seq_1_to_100",
		"CREATE TABLE shop.secret (id INT PRIMARY KEY, v INT)", "INSERT INTO shop.secret SELECT seq, seq FROM shop.seq_1_to_10",
		"CREATE VIEW shop.v_items AS SELECT id FROM shop.items",
		"CREATE VIEW shop.v_secret AS SELECT id FROM shop.secret",
		"CREATE TRIGGER shop.secret_ins BEFORE INSERT ON shop.secret FOR EACH ROW SET NEW.v = NEW.v + 1",
		"CREATE PROCEDURE shop.p() SELECT COUNT(*) FROM shop.items",
		"CREATE USER withpw@'%' IDENTIFIED BY 'source-pw'", "GRANT SELECT ON shop.* TO withpw@'%'",
		"CREATE USER nopw@localhost", "GRANT SELECT ON shop.items TO nopw@localhost",
		"CREATE USER tabled@'%' IDENTIFIED BY 'tabled-pw'",
		"GRANT SELECT ON shop.items TO tabled@'%'", "GRANT SELECT, INSERT ON shop.secret TO tabled@'%'",
		"GRANT SELECT (id) ON shop.v_secret TO tabled@'%'", "GRANT EXECUTE ON PROCEDURE shop.p TO tabled@'%'",
	)
	src.DB().ExecContext(ctx, "FLUSH PRIVILEGES")
	repo := usecasetest.NewLocalRepo(t)
	usecasetest.Backup(t, usecasetest.LogicalBackupOf(t, repo, src))
	srcCreate := showOne(t, src.DB(), "SHOW CREATE USER withpw@'%'")
	srcGrants := showOne(t, src.DB(), "SHOW GRANTS FOR withpw@'%'")

	// newTarget is a server that has its own withpw@'%'.
	newTarget := func(t *testing.T) *sandbox.Server {
		dst := sandboxtest.Start(t, sandbox.Options{})
		usecasetest.ExecAll(t, dst.DB(), "CREATE USER withpw@'%' IDENTIFIED BY 'target-pw'")
		return dst
	}
	// restore loads the backup into dst with the choices c, and checks
	// that the load named its target, through its progress, before it
	// began (what restore prints on stderr), and in its result.
	restore := func(t *testing.T, dst *sandbox.Server, c restorecase.Choices) *restorecase.LoadResult {
		t.Helper()
		var said usecasetest.Said
		req := usecasetest.LoadOf(repo, "", dst)
		req.Load, req.Deferred.Tracker = c, said.Tracker
		l := usecasetest.Restore(t, req).Load
		if l == nil {
			t.Fatal("the restore loaded nothing")
		}
		if s := said.String(); !strings.Contains(s, "loading into socket "+dst.Socket) || !strings.Contains(s, "@@hostname ") || !strings.Contains(s, "MariaDB ") {
			t.Errorf("the load said %q: want the target named (socket, version, @@hostname)", s)
		}
		if l.Target.Socket != dst.Socket || l.Target.Version == "" || l.Target.Hostname == "" || l.Target.Port == 0 {
			t.Errorf("target %+v, want socket %s, version, hostname and port", l.Target, dst.Socket)
		}
		return l
	}
	const withpw = "`withpw`@`%`"

	t.Run("without --users", func(t *testing.T) {
		dst := newTarget(t)
		before := usecasetest.Accounts(t, dst.DB())
		theirs := showOne(t, dst.DB(), "SHOW CREATE USER withpw@'%'")
		if l := restore(t, dst, restorecase.Choices{}); l.Users {
			t.Errorf("the load says accounts were asked for")
		}
		if after := usecasetest.Accounts(t, dst.DB()); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("accounts changed without --users:\nbefore %v\nafter  %v", before, after)
		}
		if got := showOne(t, dst.DB(), "SHOW CREATE USER withpw@'%'"); got != theirs {
			t.Errorf("withpw changed without --users: %s, was %s", got, theirs)
		}
		if got := showOne(t, dst.DB(), "SHOW GRANTS FOR withpw@'%'"); strings.Contains(got, "shop") {
			t.Errorf("withpw was granted without --users: %s", got)
		}
		var n int
		if err := dst.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM shop.items").Scan(&n); err != nil || n != 100 {
			t.Errorf("shop.items: %d rows, %v", n, err)
		}
	})

	t.Run("with --users", func(t *testing.T) {
		dst := newTarget(t)
		theirs := showOne(t, dst.DB(), "SHOW CREATE USER withpw@'%'")
		l := restore(t, dst, restorecase.Choices{Users: true})
		accts := usecasetest.Accounts(t, dst.DB())
		for _, a := range []string{"nopw@localhost", "tabled@%"} {
			if !slices.Contains(accts, a) {
				t.Errorf("%s not created (accounts %v)", a, accts)
			}
		}
		if got := showOne(t, dst.DB(), "SHOW CREATE USER withpw@'%'"); got != theirs {
			t.Errorf("the target's withpw changed: %s, was %s", got, theirs)
		}
		if got := showOne(t, dst.DB(), "SHOW GRANTS FOR withpw@'%'"); strings.Contains(got, "shop") {
			t.Errorf("the target's withpw was granted: %s", got)
		}
		// What restore prints of the accounts: withpw once, as kept.
		said := slices.Concat(l.CreatedAccounts, l.ReplacedAccounts, l.KeptAccounts, l.LeftOut)
		if n := strings.Count(strings.Join(said, "\n"), withpw); n != 1 || !slices.Contains(l.KeptAccounts, withpw) {
			t.Errorf("accounts created %q, replaced %q, kept %q, left out %q: want withpw said once, as kept", l.CreatedAccounts, l.ReplacedAccounts, l.KeptAccounts, l.LeftOut)
		}
		// What restore warns of on stderr.
		if !slices.Contains(l.Passwordless, "`nopw`@`localhost`") {
			t.Errorf("passwordless accounts %q: want nopw@localhost", l.Passwordless)
		}
		if slices.Contains(l.Passwordless, "`tabled`@`%`") {
			t.Errorf("passwordless accounts %q: tabled has a password", l.Passwordless)
		}
		if got, want := showOne(t, dst.DB(), "SHOW GRANTS FOR tabled@'%'"), showOne(t, src.DB(), "SHOW GRANTS FOR tabled@'%'"); got != want {
			t.Errorf("tabled's grants:\n%s\nwant\n%s", got, want)
		}
	})

	t.Run("with --users --replace-users", func(t *testing.T) {
		dst := newTarget(t)
		l := restore(t, dst, restorecase.Choices{Users: true, ReplaceUsers: true})
		if got := showOne(t, dst.DB(), "SHOW CREATE USER withpw@'%'"); got != srcCreate {
			t.Errorf("withpw not replaced: %s, want %s", got, srcCreate)
		}
		if got := showOne(t, dst.DB(), "SHOW GRANTS FOR withpw@'%'"); got != srcGrants {
			t.Errorf("withpw's grants: %s, want %s", got, srcGrants)
		}
		if !slices.Contains(l.ReplacedAccounts, withpw) {
			t.Errorf("accounts replaced %q: want withpw", l.ReplacedAccounts)
		}
		// The restoring account itself is never replaced.
		if strings.Contains(strings.Join(l.ReplacedAccounts, ", "), "`root`@`localhost`") {
			t.Errorf("the restoring account was replaced: %q", l.ReplacedAccounts)
		}
		fresh, err := dst.Open("")
		if err != nil {
			t.Fatal(err)
		}
		defer fresh.Close()
		if err := fresh.PingContext(ctx); err != nil {
			t.Errorf("the restoring account no longer logs in: %v", err)
		}
	})

	t.Run("--table with --users", func(t *testing.T) {
		dst := newTarget(t)
		l := restore(t, dst, restorecase.Choices{Tables: []string{"shop.items", "shop.v_items"}, Users: true})
		got := showOne(t, dst.DB(), "SHOW GRANTS FOR tabled@'%'")
		if !strings.Contains(got, "GRANT SELECT ON `shop`.`items` TO `tabled`@`%`") {
			t.Errorf("tabled's grant on shop.items not restored: %s", got)
		}
		if strings.Contains(got, "secret") || strings.Contains(got, "EXECUTE") {
			t.Errorf("tabled got grants on objects not restored: %s", got)
		}
		left := strings.Join(l.LeftOut, "\n")
		for _, w := range []string{"`shop`.`secret`", "`shop`.`v_secret`", "procedure `shop`.`p`", "view shop.v_secret", "trigger shop.secret_ins", "procedure shop.p"} {
			if !strings.Contains(left, w) {
				t.Errorf("left out:\n%s\nwant it to name %s", left, w)
			}
		}
		if strings.Contains(left, "v_items") || strings.Contains(left, "`shop`.`items`") {
			t.Errorf("left out:\n%s\nnames restored objects", left)
		}
		var n int
		if err := dst.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA IN ('shop', 'backstream_load')").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 2 {
			t.Errorf("%d tables in shop and the journal, want shop.items and shop.v_items alone", n)
		}
		// A second run over the same target is refused for the tables,
		// and does not change the accounts.
		before := usecasetest.Accounts(t, dst.DB())
		again := usecasetest.LoadOf(repo, "", dst)
		again.Load = restorecase.Choices{Tables: []string{"shop.items"}, Users: true}
		if res, err := restorecase.Run(ctx, again); err == nil {
			t.Errorf("a second restore over the restored tables succeeded (%+v); want it refused", res.Load)
		}
		if after := usecasetest.Accounts(t, dst.DB()); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("a refused rerun changed the accounts: %v, then %v", before, after)
		}
	})
}
