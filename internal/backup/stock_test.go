package backup_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/fidelitytest"
	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/usecasetest"
)

// stockDB is a database whose name holds what a path or a script must not
// take as it is: a dot, a slash, a backquote, a line break, a tab, a
// dash, non-ASCII letters.
const stockDB = "st.ck/`odd`\né\t-☃"

// stockAccounts are the accounts stockObjects creates, as DescribeAccounts
// takes them.
var stockAccounts = []string{"'stock role'", "'stock`user'@'%'"}

// stockObjects adds to the server what the fidelity schema and corpus do
// not hold and the stock route must carry: a database with an odd name,
// and in it a table of every type loaded through a variable with hostile
// values, a view over a view over a stored function, routines whose text
// holds every delimiter a script could pick, a line break as \r\n, a
// comment, a string ending in a backslash under NO_BACKSLASH_ESCAPES, a
// string in Shift JIS whose second byte is a backslash (created through a
// Shift JIS connection), a trigger, an event in a time zone of its own, a
// sequence with state, and a user and a role with grants on them.
func stockObjects(t *testing.T, db *sql.DB) {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	q := "`" + strings.ReplaceAll(stockDB, "`", "``") + "`"
	for _, s := range []string{
		"SET SESSION sql_mode = '', time_zone = '+00:00', NAMES utf8mb4",
		"CREATE DATABASE " + q + " CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci",
		"USE " + q,
		"CREATE SEQUENCE `seq\nuence` START WITH 7 INCREMENT BY 3 CACHE 4",
		"SELECT NEXTVAL(`seq\nuence`), NEXTVAL(`seq\nuence`)",
		"CREATE TABLE `ty\npes` (id INT NOT NULL PRIMARY KEY, b5 BIT(5), e ENUM('', 'a', 'b'), st SET('', 'x', 'y'), u UUID, i6 INET6, i4 INET4, j JSON, bl BLOB, tx TEXT, n BIGINT DEFAULT NEXTVAL(`seq\nuence`))",
		// The JSON holds a tab and a backslash as JSON escapes; the text a
		// line break, a tab, a backslash and a NUL.
		"INSERT INTO `ty\npes` VALUES (1, b'10101', 'a', 'x,y', '123e4567-e89b-12d3-a456-426655440000', '::1', '10.0.0.1', " +
			`'{"k": "tab\\there\\\\"}', X'00095C0A0D4E5C4E', 'line\nbreak\ttab\\back\0nul', 5)`,
		"INSERT INTO `ty\npes` VALUES (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '\\\\N', 6)",
		"INSERT INTO `ty\npes` VALUES (3, 0, 'nope', '', '00000000-0000-0000-0000-000000000000', '2001:db8::1', '0.0.0.0', '[]', '', '', 0)",
		"INSERT INTO `ty\npes` VALUES (4, 31, '', '', NULL, NULL, NULL, 'null', X'FF', 'é😀', 7)",
		"CREATE FUNCTION `f ☃`(x INT) RETURNS INT DETERMINISTIC RETURN x * 2",
		"CREATE VIEW `v base` AS SELECT id, `f ☃`(id) AS twice FROM `ty\npes`",
		"CREATE VIEW `v over` AS SELECT twice FROM `v base` WHERE twice > 2",
		"CREATE PROCEDURE `p delims`() COMMENT 'holds ;; $$ //'\nBEGIN\r\n  -- a comment: ;; $$ //\r\n  SELECT ';;' AS a, '$$' AS b, '//' AS c; /* block ;; */\r\nEND",
		"SET SESSION sql_mode = 'NO_BACKSLASH_ESCAPES'",
		"CREATE PROCEDURE `p nbe`() SELECT 'ends in \\' AS s, 'x' AS t",
		"SET SESSION sql_mode = ''",
		"SET NAMES sjis",
		// 表 in Shift JIS is 0x95 0x5C: its second byte is a backslash.
		"CREATE PROCEDURE `p_sjis`() SELECT '\x95\x5c' AS c, 'x' AS d",
		"SET NAMES utf8mb4",
		"CREATE TRIGGER `trg\nins` BEFORE INSERT ON `ty\npes` FOR EACH ROW SET NEW.tx = CONCAT(IFNULL(NEW.tx, ''), '!')",
		"SET SESSION time_zone = '+05:30', sql_mode = 'ANSI_QUOTES'",
		"CREATE EVENT \"ev\" ON SCHEDULE EVERY 1 DAY STARTS '2031-01-01 00:00:00' ON COMPLETION PRESERVE DISABLE DO SELECT \"id\" FROM \"ty\npes\" LIMIT 1",
		"SET SESSION time_zone = '+00:00', sql_mode = ''",
		"CREATE ROLE `stock role`",
		"GRANT SELECT, INSERT ON " + q + ".`ty\npes` TO `stock role`",
		"CREATE USER `stock``user`@`%` IDENTIFIED BY PASSWORD '*D92FF33BE0EDCC442C306FBEE9BDE081FD125F4B'",
		"GRANT `stock role` TO `stock``user`@`%`",
		"SET DEFAULT ROLE `stock role` FOR `stock``user`@`%`",
		"GRANT SELECT ON " + q + ".`v over` TO `stock``user`@`%`",
		// No routine grants here: MariaDB 10.11 stores the database name
		// of one encoded twice when it is not ASCII, and after FLUSH
		// PRIVILEGES SHOW GRANTS shows it so (`Ã©` for `é`), which no
		// restore can give back. The fidelity schema grants on routines.
	} {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
	}
	// Discard the connection: its session settings are the last step's.
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
}

// stockExtractAll extracts every stream object of the latest backup in
// the local repository r into a new directory with the stock tools, as
// the guide says: age -d (with identity, when not ""), the codec's
// decompressor, mbstream -x.
func stockExtractAll(t *testing.T, r usecasetest.Repo, identity string) string {
	t.Helper()
	id := usecasetest.List(t, r)[0].ID
	objects, err := filepath.Glob(filepath.Join(r.Location, "backups", id, "streams", "*.xbs.zst*"))
	if err != nil || len(objects) == 0 {
		t.Fatalf("stream objects of %s: %v, %v", id, objects, err)
	}
	dir := t.TempDir()
	for _, o := range objects {
		pipeline := `zstd -dc "$1" | mbstream -x -C "$2"`
		if identity != "" {
			pipeline = `age -d -i "$3" "$1" | zstd -dc | mbstream -x -C "$2"`
		}
		cmd := exec.Command("bash", "-o", "pipefail", "-c", pipeline, "extract", o, dir, identity)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s of %s: %v\n%s", pipeline, o, err, out)
		}
	}
	return dir
}

// stockLoad restores an extracted backup into s with the mariadb client
// alone, as README.txt and the guide say: the scripts restore.list names,
// in its order, through one client, then accounts.sql.
func stockLoad(t *testing.T, dir string, s *sandbox.Server) {
	t.Helper()
	cnf := filepath.Join(t.TempDir(), "target.cnf")
	if err := os.WriteFile(cnf, []byte("[client]\nsocket="+s.Socket+"\nuser=root\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{
		`set -o pipefail; xargs cat < restore.list | mariadb --defaults-file="$1" --binary-mode --comments --local-infile=1`,
		`mariadb --defaults-file="$1" --binary-mode --comments < accounts.sql`,
	} {
		cmd := exec.Command("bash", "-c", c, "stock", cnf)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		t.Logf("%s:\n%s", c, out)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
	}
}

// serverState is what the stock route must restore as backstream does:
// every database's fingerprint (SHOW CREATE of every object, sequence
// rows, every row rendered by type, CHECKSUM TABLE), every table's
// checksum, and the accounts' SHOW CREATE USER and SHOW GRANTS.
type serverState struct {
	fingerprints map[string]map[string]string
	sums         map[string]string
	accounts     map[string]string
	accountList  []string
}

// stateOf is what the stock route must restore of s: the fingerprints of
// the databases dbs, every table's checksum, and the accounts' SHOW CREATE
// USER and SHOW GRANTS.
func stateOf(t *testing.T, s *sandbox.Server, dbs, accounts []string) serverState {
	t.Helper()
	ctx := context.Background()
	st := serverState{fingerprints: map[string]map[string]string{}}
	for _, d := range dbs {
		fp, err := fidelitytest.Fingerprint(ctx, s.DB(), d)
		if err != nil {
			t.Fatalf("fingerprint %s: %v", d, err)
		}
		st.fingerprints[d] = fp
	}
	st.sums = usecasetest.Checksums(t, s)
	// SHOW GRANTS lists column grants in an in-memory hash order until
	// the privileges are reloaded.
	if _, err := s.DB().ExecContext(ctx, "FLUSH PRIVILEGES"); err != nil {
		t.Fatal(err)
	}
	var err error
	if st.accounts, err = sandboxtest.DescribeAccounts(ctx, s.DB(), accounts...); err != nil {
		t.Fatal(err)
	}
	st.accountList = usecasetest.Accounts(t, s.DB())
	return st
}

// compareStates reports every difference of got from want.
func compareStates(t *testing.T, what string, got, want serverState) {
	t.Helper()
	for d, w := range want.fingerprints {
		if diffs := fidelitytest.Compare(got.fingerprints[d], w); len(diffs) > 0 {
			t.Errorf("%s: database %q: %d differences:\n%s", what, d, len(diffs), strings.Join(diffs, "\n"))
		}
	}
	for name, w := range want.sums {
		if got.sums[name] != w {
			t.Errorf("%s: table %s: checksum %q, want %q", what, name, got.sums[name], w)
		}
	}
	for name := range got.sums {
		if _, ok := want.sums[name]; !ok {
			t.Errorf("%s: table %s is not in the source", what, name)
		}
	}
	for k, w := range want.accounts {
		if got.accounts[k] != w {
			t.Errorf("%s: %s differs:\n got: %s\nwant: %s", what, k, got.accounts[k], w)
		}
	}
	if !slices.Equal(got.accountList, want.accountList) {
		t.Errorf("%s: accounts %q, want %q", what, got.accountList, want.accountList)
	}
}

// The stock-tool way out (issue #18 item 3): a whole-server logical
// backup of every kind of object (the fidelity schema and its accounts,
// the fidelity corpus, the value fixtures, the sample tables with blobs,
// and stockObjects' odd names and texts), plain and encrypted, is
// restored once by backstream and once with zstd, age, mbstream and the
// mariadb client alone, following the backup's README into servers whose
// global sql_mode differs from the source's. Every database's fingerprint
// (SHOW CREATE of every table, sequence and its row, view, trigger,
// routine, package and event; every row; CHECKSUM TABLE), the checksums
// of all tables, and the accounts' SHOW CREATE USER and SHOW GRANTS equal
// the source's and the backstream restore's.
func TestStockRestore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{Args: usecasetest.CorpusServerArgs("permissive")})
	if err := sandboxtest.LoadFidelitySchema(ctx, src.DB()); err != nil {
		t.Fatal(err)
	}
	if err := sandboxtest.LoadValueFixtures(ctx, src.DB()); err != nil {
		t.Fatal(err)
	}
	if err := sandbox.LoadSample(ctx, src.DB(), sandbox.SampleOptions{Tables: 1, Blobs: true}); err != nil {
		t.Fatal(err)
	}
	fixtures, err := fidelitytest.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fixtures {
		if f.Refuse == "" && f.Takes(fidelitytest.Logical, "permissive") {
			if err := f.Load(ctx, src.Socket, "root"); err != nil {
				t.Fatal(err)
			}
		}
	}
	stockObjects(t, src.DB())
	dbs := usecasetest.QueryRows(t, src.DB(), "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys') ORDER BY 1")
	accounts := append(sandboxtest.FidelityUsers(), stockAccounts...)
	want := stateOf(t, src, dbs, accounts)
	if len(dbs) < 40 || !slices.Contains(dbs, stockDB) {
		t.Fatalf("databases %q: the source is not what it should be", dbs)
	}

	// backup --logical --chunk-size 1MiB into a plain repository; backup
	// --logical into one made with init --encrypt --recipient-file, which
	// encrypts the backup by itself.
	plain := usecasetest.NewLocalRepo(t)
	req := usecasetest.LogicalBackupOf(t, plain, src)
	req.Dump.ChunkBytes = 1 << 20
	usecasetest.Backup(t, req)
	pub, key := usecasetest.AgeKeys(t)
	encrypted := usecasetest.NewEncryptedRepo(t, repoaccess.KeyFiles{RecipientFile: pub})
	usecasetest.Backup(t, usecasetest.RepoEncrypted(t, encrypted, usecasetest.LogicalBackupOf(t, encrypted, src)))

	// Targets run under another global sql_mode than the source: the
	// scripts set every session setting that matters themselves.
	targetArgs := append([]string{"--sql-mode=" + fidelitytest.Modes["strict"]}, fidelitytest.TargetArgs...)
	restored := sandboxtest.Start(t, sandbox.Options{Args: targetArgs})
	load := usecasetest.LoadOf(plain, "", restored)
	load.Load.Users = true
	usecasetest.Restore(t, load)
	byBackstream := stateOf(t, restored, dbs, accounts)
	compareStates(t, "backstream restore vs the source", byBackstream, want)

	for _, c := range []struct {
		name, identity string
		repo           usecasetest.Repo
	}{{"plain", "", plain}, {"encrypted", key, encrypted}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := stockExtractAll(t, c.repo, c.identity)
			for _, f := range []string{"README.txt", "restore.list", "accounts.sql", "load-data.txt"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Errorf("the extracted backup has no %s: %v", f, err)
				}
			}
			dst := sandboxtest.Start(t, sandbox.Options{Args: targetArgs})
			stockLoad(t, dir, dst)
			got := stateOf(t, dst, dbs, accounts)
			compareStates(t, "stock restore vs the source", got, want)
			compareStates(t, "stock restore vs backstream restore", got, byBackstream)
		})
	}
}
