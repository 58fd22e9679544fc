package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/importtable"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/crypt"
	"github.com/backstream/backstream/internal/storage/local"
	"github.com/backstream/backstream/internal/usecasetest"
)

// restore --table --apply-to imports InnoDB tables of a physical backup
// into a running server while other tables take writes: beside the live
// table (--as), or a dropped partitioned table back; what cannot be
// imported is refused before the target changes.
func TestRestoreTableIntoRunningServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	db := src.DB()
	for _, q := range []string{
		"CREATE DATABASE shop",
		"CREATE TABLE shop.orders (id INT PRIMARY KEY, customer VARCHAR(40) NOT NULL, total DECIMAL(12,2), note BLOB, placed DATETIME(6), KEY (customer)) ENGINE=InnoDB",
		"INSERT INTO shop.orders SELECT seq, CONCAT('c', seq % 97), seq * 1.25, RANDOM_BYTES(200), '2026-11-25 01:02:03.456789' + INTERVAL seq SECOND FROM shop.seq_1_to_20000",
		"CREATE TABLE shop.parts (id INT, kind INT, name VARCHAR(20), PRIMARY KEY (id, kind)) ENGINE=InnoDB PARTITION BY HASH (kind) PARTITIONS 3",
		"INSERT INTO shop.parts SELECT seq, seq % 7, CONCAT('part ', seq) FROM shop.seq_1_to_5000",
		"CREATE TABLE shop.legacy (id INT PRIMARY KEY) ENGINE=MyISAM",
		"INSERT INTO shop.legacy SELECT seq FROM shop.seq_1_to_10",
		"CREATE TABLE shop.events (id INT AUTO_INCREMENT PRIMARY KEY, at DATETIME(6)) ENGINE=InnoDB",
		"CREATE TRIGGER shop.parts_upper BEFORE INSERT ON shop.parts FOR EACH ROW SET NEW.name = UPPER(NEW.name)",
		"CREATE TRIGGER shop.orders_note BEFORE INSERT ON shop.orders FOR EACH ROW SET NEW.note = 'n'",
		"CREATE TABLE shop.items (id INT PRIMARY KEY, order_id INT NOT NULL, qty INT, KEY (order_id), CONSTRAINT items_order FOREIGN KEY (order_id) REFERENCES shop.orders (id)) ENGINE=InnoDB",
		"INSERT INTO shop.items SELECT seq, seq % 20000 + 1, seq % 9 FROM shop.seq_1_to_30000",
		"CREATE DATABASE crm",
		"CREATE TABLE crm.customers (id INT PRIMARY KEY, name VARCHAR(40)) ENGINE=InnoDB",
		"INSERT INTO crm.customers SELECT seq, CONCAT('customer ', seq) FROM shop.seq_1_to_3000",
		"CREATE TABLE crm.notes (id INT AUTO_INCREMENT PRIMARY KEY, customer INT, body TEXT) ENGINE=InnoDB",
		"INSERT INTO crm.notes (customer, body) SELECT seq % 3000, REPEAT('x', seq % 300) FROM shop.seq_1_to_6000",
		"CREATE VIEW crm.v AS SELECT id FROM crm.customers",
		// Big and incompressible: an import of another table fetches none of it.
		"CREATE TABLE shop.big (id INT PRIMARY KEY, b BLOB) ENGINE=InnoDB",
		"INSERT INTO shop.big SELECT seq, RANDOM_BYTES(1000) FROM shop.seq_1_to_40000",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	sum := func(table string) string {
		t.Helper()
		var name, s string
		if err := db.QueryRowContext(ctx, "CHECKSUM TABLE "+table).Scan(&name, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	usecasetest.WaitCheckpoint(t, db)
	orders, parts := sum("shop.orders"), sum("shop.parts")
	customers, notes, items := sum("crm.customers"), sum("crm.notes"), sum("shop.items")
	repoDir := newRepoDir(t)
	bk := completeID.FindStringSubmatch(run(t, append([]string{"backup", "--repo", repoDir, "--parallel", "2"}, sandboxConn(src)...)...).mustSucceed(t).stdout)
	if bk == nil {
		t.Fatal("backup printed no id")
	}
	// The orders change after the backup; the import brings the backup's.
	if _, err := db.ExecContext(ctx, "UPDATE shop.orders SET total = total + 1 WHERE id % 10 = 0"); err != nil {
		t.Fatal(err)
	}
	load := usecasetest.StartLoad(1, func(rng *rand.Rand) error {
		_, err := db.ExecContext(ctx, "INSERT INTO shop.events (at) VALUES (NOW(6))")
		return err
	})
	// The source writes a binary log: the imports go with --no-binlog.
	restoreTable := func(table string, flags ...string) result {
		return run(t, append(append([]string{"restore", "--repo", repoDir, "--table", table, "--apply-to", "--no-binlog"}, flags...), sandboxConn(src)...)...)
	}
	tables := func() string {
		t.Helper()
		var names string
		if err := db.QueryRowContext(ctx, "SELECT GROUP_CONCAT(table_name ORDER BY table_name) FROM information_schema.tables WHERE table_schema = 'shop'").Scan(&names); err != nil {
			t.Fatal(err)
		}
		return names
	}
	before := tables()

	// Refused before the target changes: a table it has, one not InnoDB,
	// one the backup lacks, --as for several tables.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"shop.orders"}, "the target already has table shop.orders"},
		{[]string{"shop.legacy", "--as", "shop.legacy2"}, "table shop.legacy is MyISAM in backup"},
		{[]string{"shop.nope"}, "has no table shop.nope"},
		{[]string{"shop.orders,shop.parts", "--as", "shop.x"}, "--as names one table"},
		{[]string{"shop.orders", "--as", "nodb.orders"}, "the target has no database nodb"},
		{[]string{"", "--database", "shop"}, "holds tables that are not InnoDB: legacy (MyISAM)"},
		{[]string{"", "--database", "crm"}, "the target already has table crm.customers"},
		{[]string{"", "--database", "crm", "--as", "crm.x"}, "--as names one table"},
	} {
		var r result
		if c.args[0] == "" {
			r = run(t, append(append([]string{"restore", "--repo", repoDir, "--apply-to", "--no-binlog"}, c.args[1:]...), sandboxConn(src)...)...)
		} else {
			r = restoreTable(c.args[0], c.args[1:]...)
		}
		if r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), c.want) {
			t.Errorf("restore --table %v: exit %d, %v; want exit %d saying %q", c.args, r.code, r.err, ExitUsage, c.want)
		}
	}
	// Without --no-binlog a target that writes a binary log is refused:
	// its replicas would replay the DISCARD and IMPORT without the files.
	if r := run(t, append([]string{"restore", "--repo", repoDir, "--table", "shop.orders", "--apply-to", "--as", "shop.orders2"}, sandboxConn(src)...)...); r.code != ExitUsage || !strings.Contains(fmt.Sprint(r.err), "the target writes a binary log") {
		t.Errorf("import into a target with a binary log, without --no-binlog: exit %d, %v", r.code, r.err)
	}
	load.More(t, 20)
	if got := tables(); got != before {
		t.Errorf("refused imports changed the target's tables: %s, before %s", got, before)
	}

	// Beside the live table, which keeps its newer rows.
	live := sum("shop.orders")
	r := restoreTable("shop.orders", "--as", "shop.orders_restored", "--progress", "json").mustSucceed(t)
	if !strings.Contains(r.stdout, "imported as shop.orders_restored") || !strings.Contains(r.stdout, "its triggers orders_note were not created") {
		t.Errorf("restore --table --as printed %q", r.stdout)
	}
	// It read the frames of the table's files and the system's, no
	// other: not shop.big's.
	needed, all := neededFrameBytes(t, localRepoBackend(t, repoDir), "", importtable.Needed([]importtable.Table{{DB: "shop", Name: "orders"}}, nil))
	if read := bytesIn(t, r.stderr); read != needed || needed >= all {
		t.Errorf("restore --table read %d bytes; the frames of the table's and the system's files store %d of the backup's %d", read, needed, all)
	}
	// Its progress was of what it reads, not the whole backup.
	checkProgress(t, "restore --table", r.stderr, bk[1], 99)
	if got := sum("shop.orders_restored"); got != orders {
		t.Errorf("shop.orders_restored: checksum %s, the backup's orders %s", got, orders)
	}
	if got := sum("shop.orders"); got != live {
		t.Errorf("the live shop.orders changed: checksum %s, was %s", got, live)
	}

	// Beside its original, a table's foreign keys would clash: it comes
	// without them, and says so.
	r = restoreTable("shop.items", "--as", "shop.items_restored").mustSucceed(t)
	if !strings.Contains(r.stdout, "its foreign keys items_order were not created") {
		t.Errorf("restore --table shop.items --as printed %q", r.stdout)
	}
	if got := sum("shop.items_restored"); got != items {
		t.Errorf("shop.items_restored: checksum %s, the backup's items %s", got, items)
	}

	// A dropped partitioned table back under its name.
	if _, err := db.ExecContext(ctx, "DROP TABLE shop.parts"); err != nil {
		t.Fatal(err)
	}
	if r := restoreTable("shop.parts").mustSucceed(t); !strings.Contains(r.stdout, "with its triggers parts_upper") {
		t.Errorf("restore --table shop.parts printed %q", r.stdout)
	}
	if got := sum("shop.parts"); got != parts {
		t.Errorf("shop.parts: checksum %s after the import, %s in the backup", got, parts)
	}
	// Its trigger came back with it, and fires.
	var upper string
	if _, err := db.ExecContext(ctx, "INSERT INTO shop.parts VALUES (999999, 1, 'lower')"); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, "SELECT name FROM shop.parts WHERE id = 999999").Scan(&upper); err != nil || upper != "LOWER" {
		t.Errorf("the restored trigger parts_upper did not fire: %q, %v", upper, err)
	}
	if _, err := db.ExecContext(ctx, "DELETE FROM shop.parts WHERE id = 999999"); err != nil {
		t.Fatal(err)
	}

	// A whole database's tables (its view is not a table).
	for _, q := range []string{"DROP TABLE crm.customers", "DROP TABLE crm.notes"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	out := run(t, append([]string{"restore", "--repo", repoDir, "--database", "crm", "--apply-to", "--no-binlog", "--json"}, sandboxConn(src)...)...).mustSucceed(t).stdout
	var imported struct {
		Tables []struct {
			Table    string `json:"table"`
			Checksum int64  `json:"checksum"`
		} `json:"tables"`
	}
	if err := json.Unmarshal([]byte(out), &imported); err != nil || len(imported.Tables) != 2 || imported.Tables[0].Table != "crm.customers" {
		t.Errorf("restore --database crm --apply-to --json: %v, %+v:\n%s", err, imported, out)
	}
	if c, n := sum("crm.customers"), sum("crm.notes"); c != customers || n != notes {
		t.Errorf("crm after --database crm: checksums %s, %s; the backup's %s, %s", c, n, customers, notes)
	}
	var partitions int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.partitions WHERE table_schema = 'shop' AND table_name = 'parts'").Scan(&partitions); err != nil || partitions != 3 {
		t.Errorf("shop.parts has %d partitions (%v), want 3", partitions, err)
	}
	load.More(t, 20)
	load.Finish(t)
	var check, msg, typ, text string
	if err := db.QueryRowContext(ctx, "CHECK TABLE shop.orders_restored").Scan(&check, &msg, &typ, &text); err != nil || text != "OK" {
		t.Errorf("CHECK TABLE shop.orders_restored: %s %s (%v)", typ, text, err)
	}
	// With --no-binlog nothing of the imports reached the binary log,
	// which the inserts of the load did.
	logged := binlogInfo(t, db)
	if !strings.Contains(logged, "events") || strings.Contains(logged, "TABLESPACE") || strings.Contains(logged, "orders_restored") {
		t.Errorf("the binary log holds the imports' statements, or not the load's:\n%.2000s", logged)
	}
	if left, _ := filepath.Glob(filepath.Join(src.Datadir, "shop", "*.cfg")); len(left) != 0 {
		t.Errorf("export files left in the target's datadir: %v", left)
	}
}

// binlogInfo is the Info column of every event of every binary log of db.
func binlogInfo(t *testing.T, db *sql.DB) string {
	t.Helper()
	files, err := db.Query("SHOW BINARY LOGS")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for files.Next() {
		var name string
		var size any
		if err := files.Scan(&name, &size); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	files.Close()
	var b strings.Builder
	for _, n := range names {
		rows, err := db.Query("SHOW BINLOG EVENTS IN " + mariadb.QuoteString(n, false))
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			b.Write(vals[len(vals)-1])
			b.WriteByte('\n')
		}
		rows.Close()
	}
	return b.String()
}

// bytesIn is the bytes a command read, from its --progress json summary.
func bytesIn(t *testing.T, stderr string) int64 {
	t.Helper()
	for _, line := range strings.Split(stderr, "\n") {
		var e progress.Event
		if json.Unmarshal([]byte(line), &e) == nil && e.Event == "summary" {
			return e.BytesIn
		}
	}
	t.Fatalf("no progress summary in:\n%s", stderr)
	return 0
}

// A table of an encrypted incremental chain, locally and on S3: the
// import brings the chain end's rows, and fetches the table's frames and
// the system's from each link, decrypting ranges, not a big table's.
func TestRestoreTableFromEncryptedChain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	db := src.DB()
	for _, q := range []string{
		"CREATE DATABASE shop",
		"CREATE TABLE shop.orders (id INT PRIMARY KEY, total DECIMAL(12,2), note VARBINARY(200)) ENGINE=InnoDB",
		"INSERT INTO shop.orders SELECT seq, seq * 1.25, RANDOM_BYTES(150) FROM shop.seq_1_to_20000",
		"CREATE TABLE shop.big (id INT PRIMARY KEY, b BLOB) ENGINE=InnoDB",
		"INSERT INTO shop.big SELECT seq, RANDOM_BYTES(1000) FROM shop.seq_1_to_40000",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	usecasetest.WaitCheckpoint(t, db)
	pub, key := ageKeys(t)
	var n int
	forEachBackend(t, func(t *testing.T, tr testRepo) {
		n++
		backup := func(flags ...string) {
			run(t, append(append([]string{"backup", "--repo", tr.Location, "--parallel", "2", "--encrypt", "--recipient-file", pub}, flags...), sandboxConn(src)...)...).mustSucceed(t)
		}
		backup()
		if _, err := db.ExecContext(ctx, "UPDATE shop.orders SET total = total + ? WHERE id % 7 = 0", n); err != nil {
			t.Fatal(err)
		}
		backup("--incremental")
		var name, want string
		if err := db.QueryRowContext(ctx, "CHECKSUM TABLE shop.orders").Scan(&name, &want); err != nil {
			t.Fatal(err)
		}
		as := fmt.Sprintf("shop.orders_%d", n)
		r := run(t, append([]string{"restore", "--repo", tr.Location, "--identity-file", key, "--table", "shop.orders", "--apply-to", "--no-binlog", "--as", as, "--progress", "json"}, sandboxConn(src)...)...).mustSucceed(t)
		var got string
		if err := db.QueryRowContext(ctx, "CHECKSUM TABLE "+as).Scan(&name, &got); err != nil || got != want {
			t.Errorf("%s: checksum %s (%v), the chain end's shop.orders %s", as, got, err, want)
		}
		needed, all := neededFrameBytes(t, tr.Backend, key, importtable.Needed([]importtable.Table{{DB: "shop", Name: "orders"}}, nil))
		if read := bytesIn(t, r.stderr); read != needed || needed >= all {
			t.Errorf("the import read %d bytes; the frames of the table's and the system's files store %d of the chain's %d", read, needed, all)
		}
	})
}

// neededFrameBytes is what restoring the files that need accepts from
// every backup of the repository on b must read (decrypting with the
// age identity file key, if given): the stored bytes of the frames that
// hold them; and all, what the backups store.
func neededFrameBytes(t *testing.T, b storage.Backend, key string, need func(string) bool) (needed, all int64) {
	t.Helper()
	ctx := context.Background()
	if key != "" {
		var keys crypt.Keys
		f, err := os.Open(key)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := keys.AddIdentities(f); err != nil {
			t.Fatal(err)
		}
		b = crypt.New(b, keys, crypt.Options{Covers: repo.Encrypted, KeyPrefix: repo.KeysDir})
	}
	read := func(name string) []byte { return usecasetest.Repo{Backend: b}.Read(t, name) }
	infos, err := b.List(ctx, "backups/")
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range infos {
		if path.Base(i.Name) != "manifest.json" {
			continue
		}
		m, err := archive.ParseManifest(read(i.Name))
		if err != nil {
			t.Fatal(err)
		}
		for si, st := range m.Streams {
			frames, err := archive.ParseIndex(read(path.Dir(i.Name)+"/"+st.Index.Name), st.Size)
			if err != nil {
				t.Fatal(err)
			}
			used := map[int]bool{}
			for _, f := range m.Files {
				if f.Stream != si || !need(f.Path) {
					continue
				}
				if len(f.Frames) == 0 {
					t.Fatalf("backup %s: file %s has no frame list", m.ID, f.Path)
				}
				for _, r := range f.Frames {
					for n := r[0]; n <= r[1]; n++ {
						used[n] = true
					}
				}
			}
			for n, fr := range frames {
				all += int64(fr.Stored)
				if used[n] {
					needed += int64(fr.Stored)
				}
			}
		}
	}
	return needed, all
}

// localRepoBackend is the local backend of the repository in dir.
func localRepoBackend(t *testing.T, dir string) storage.Backend {
	t.Helper()
	b, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Issue 28, item 1: a table imported into a running server is in every
// later physical backup. Beside a live table (--as, --no-binlog) and in
// place of a dropped one, the imports are followed at once by an
// incremental on the full from before them, then by a full and an
// incremental on that; each is restored and prepared, a server started on
// it, and every table's checksum is the source's at that backup.
// mariabackup took an imported table's tablespace for one dropped during
// the backup and left it out (of the full and the incremental alike), and
// an incremental on a backup from before the import lacked the pages the
// import kept from the backup.
func TestImportedTableInLaterBackups(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	db := src.DB()
	for _, q := range []string{
		"CREATE DATABASE shop",
		"CREATE TABLE shop.customers (id INT PRIMARY KEY, name VARCHAR(40), note VARBINARY(200)) ENGINE=InnoDB",
		"INSERT INTO shop.customers SELECT seq, CONCAT('customer ', seq), RANDOM_BYTES(150) FROM shop.seq_1_to_20000",
		"CREATE TABLE shop.orders (id INT PRIMARY KEY, customer INT, total DECIMAL(12,2)) ENGINE=InnoDB",
		"INSERT INTO shop.orders SELECT seq, seq % 20000, seq * 1.25 FROM shop.seq_1_to_30000",
		"CREATE TABLE shop.parts (id INT, kind INT, name VARCHAR(20), PRIMARY KEY (id, kind)) ENGINE=InnoDB PARTITION BY HASH (kind) PARTITIONS 3",
		"INSERT INTO shop.parts SELECT seq, seq % 7, CONCAT('part ', seq) FROM shop.seq_1_to_20000",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	repoDir := newRepoDir(t)
	backup := func(flags ...string) string {
		t.Helper()
		r := run(t, append(append([]string{"backup", "--repo", repoDir, "--parallel", "2"}, flags...), sandboxConn(src)...)...).mustSucceed(t)
		id := completeID.FindStringSubmatch(r.stdout)
		if id == nil {
			t.Fatalf("backup printed no id: %s", r.stdout)
		}
		return id[1]
	}
	backup()
	if _, err := db.ExecContext(ctx, "DROP TABLE shop.orders, shop.parts"); err != nil {
		t.Fatal(err)
	}
	run(t, append([]string{"restore", "--repo", repoDir, "--table", "shop.customers", "--apply-to", "--as", "shop.customers_restored", "--no-binlog"}, sandboxConn(src)...)...).mustSucceed(t)
	run(t, append([]string{"restore", "--repo", repoDir, "--table", "shop.orders", "--table", "shop.parts", "--apply-to", "--no-binlog"}, sandboxConn(src)...)...).mustSucceed(t)

	imported := []string{"shop.customers_restored", "shop.orders", "shop.parts"}
	// Each imported table's tablespace (a partitioned table's first
	// partition's), as a restore has it.
	files := []string{"shop/customers_restored.ibd", "shop/orders.ibd", "shop/parts#P#p0.ibd"}
	// restored restores backup id (and its chain), starts a server on it
	// and compares every table's checksum with want.
	restored := func(id string, want map[string]string) {
		t.Helper()
		target := filepath.Join(t.TempDir(), "datadir")
		r := run(t, "restore", id, "--repo", repoDir, "--target-dir", target, "--prepare")
		if r.err != nil {
			log, _ := os.ReadFile(filepath.Join(repoDir, repo.Dir(id), "meta", "mariabackup.log"))
			t.Fatalf("restore --prepare of %s: %v\n%s\nits backup's mariabackup log:\n%s", id, r.err, r.stderr, log)
		}
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(target, f)); err != nil {
				log, _ := os.ReadFile(filepath.Join(repoDir, repo.Dir(id), "meta", "mariabackup.log"))
				t.Errorf("backup %s restored without the tablespace %s: %v\nits mariabackup log:\n%s", id, f, err, log)
			}
		}
		on := usecasetest.ServerOn(t, target)
		got, err := sandbox.ChecksumTables(ctx, on.DB())
		if err != nil {
			mb, _ := os.ReadFile(filepath.Join(repoDir, repo.Dir(id), "meta", "mariabackup.log"))
			elog, _ := os.ReadFile(on.ErrorLog)
			t.Fatalf("backup %s restored: %v\nits mariabackup log:\n%s\nthe restored server's error log:\n%s", id, err, mb, elog)
		}
		usecasetest.CompareChecksums(t, got, want)
	}
	// An incremental on the full taken before the imports.
	across := backup("--incremental")
	atAcross := usecasetest.Checksums(t, src)
	full := backup()
	atFull := usecasetest.Checksums(t, src)
	for _, q := range []string{
		"UPDATE shop.customers_restored SET name = CONCAT(name, '+') WHERE id % 5 = 0",
		"UPDATE shop.orders SET total = total + 1 WHERE id % 3 = 0",
		"INSERT INTO shop.orders SELECT seq, seq % 20000, seq * 2.5 FROM shop.seq_30001_to_31000",
		"UPDATE shop.parts SET name = CONCAT(name, '+') WHERE id % 4 = 0",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	incr := backup("--incremental")
	atIncr := usecasetest.Checksums(t, src)
	for _, tbl := range imported {
		if atFull[tbl] == "" || atFull[tbl] == atIncr[tbl] {
			t.Fatalf("%s: checksum %q at the full, %q at the incremental: the test needs it changed between them", tbl, atFull[tbl], atIncr[tbl])
		}
	}
	restored(across, atAcross)
	restored(full, atFull)
	restored(incr, atIncr)
}

// Tables with FULLTEXT indexes import with them working: the exported
// files do not hold them (their words are in tables of their own), so
// IMPORT left them unusable, and a rebuild that keeps them refused them
// as corrupt. Beside the live table (--as, two such indexes) and in place
// of a dropped one (one), the imported table has the backup's definition,
// MATCH finds what it finds in the source, and a later full backup
// restores it so.
func TestRestoreTableWithFulltextIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	db := src.DB()
	for _, q := range []string{
		"CREATE DATABASE shop",
		"CREATE TABLE shop.docs (id INT PRIMARY KEY, title VARCHAR(100), body TEXT, FULLTEXT KEY words (title, body), FULLTEXT KEY (body), KEY (title)) ENGINE=InnoDB",
		"INSERT INTO shop.docs SELECT seq, CONCAT('title', seq % 50), CONCAT('body word', seq % 300, ' other', seq) FROM shop.seq_1_to_3000",
		// Deleted rows are in the index's tables until it is optimized.
		"DELETE FROM shop.docs WHERE id > 2900",
		"CREATE TABLE shop.notes (id INT PRIMARY KEY, n TEXT, FULLTEXT KEY (n)) ENGINE=InnoDB",
		"INSERT INTO shop.notes SELECT seq, CONCAT('note', seq % 40) FROM shop.seq_1_to_2000",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// What MATCH finds in docs (or its copy) and in notes.
	matches := func(db *sql.DB, docs string) string {
		t.Helper()
		var out []string
		for _, q := range []string{
			"SELECT COUNT(*) FROM shop." + docs + " WHERE MATCH (title, body) AGAINST ('title7')",
			"SELECT COUNT(*) FROM shop." + docs + " WHERE MATCH (body) AGAINST ('word77')",
			"SELECT COUNT(*) FROM shop.notes WHERE MATCH (n) AGAINST ('note7')",
		} {
			var n int
			if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil {
				t.Errorf("%s: %v", q, err)
			}
			out = append(out, fmt.Sprint(n))
		}
		return strings.Join(out, " ")
	}
	// The definition as a set of lines: a rebuilt index may come last.
	definition := func(db *sql.DB, table string) []string {
		t.Helper()
		var name, create string
		if err := db.QueryRowContext(ctx, "SHOW CREATE TABLE shop."+table).Scan(&name, &create); err != nil {
			t.Fatal(err)
		}
		l := strings.Split(strings.ReplaceAll(create, "`"+table+"`", "`T`"), "\n")
		for i := range l {
			l[i] = strings.TrimSuffix(l[i], ",")
		}
		slices.Sort(l)
		return l
	}
	want := matches(db, "docs")
	if want != "58 10 50" {
		t.Fatalf("MATCH on the source: %s rows, want 58 10 50", want)
	}
	notes := definition(db, "notes")
	repoDir := newRepoDir(t)
	run(t, append([]string{"backup", "--repo", repoDir}, sandboxConn(src)...)...).mustSucceed(t)
	run(t, append([]string{"restore", "--repo", repoDir, "--table", "shop.docs", "--apply-to", "--as", "shop.docs_restored", "--no-binlog"}, sandboxConn(src)...)...).mustSucceed(t)
	if _, err := db.ExecContext(ctx, "DROP TABLE shop.notes"); err != nil {
		t.Fatal(err)
	}
	run(t, append([]string{"restore", "--repo", repoDir, "--table", "shop.notes", "--apply-to", "--no-binlog"}, sandboxConn(src)...)...).mustSucceed(t)
	if got, want := definition(db, "docs_restored"), definition(db, "docs"); !slices.Equal(got, want) {
		t.Errorf("the imported docs_restored's definition:\n%s\nthe source's docs:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := definition(db, "notes"); !slices.Equal(got, notes) {
		t.Errorf("the imported notes' definition:\n%s\nthe source's:\n%s", strings.Join(got, "\n"), strings.Join(notes, "\n"))
	}
	if got := matches(db, "docs_restored"); got != want {
		t.Errorf("MATCH on the imported tables: %s rows, on the source's %s", got, want)
	}
	run(t, append([]string{"backup", "--repo", repoDir}, sandboxConn(src)...)...).mustSucceed(t)
	sums := usecasetest.Checksums(t, src)
	target := filepath.Join(t.TempDir(), "datadir")
	run(t, "restore", "--repo", repoDir, "--target-dir", target, "--prepare").mustSucceed(t)
	on := usecasetest.ServerOn(t, target)
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, on), sums)
	if got := matches(on.DB(), "docs_restored"); got != want {
		t.Errorf("MATCH on the imported tables restored from a later backup: %s rows, on the source's %s", got, want)
	}
}
