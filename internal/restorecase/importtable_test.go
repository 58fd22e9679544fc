package restorecase_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/backup"
	"github.com/backstream/backstream/internal/importtable"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/repoaccess"
	"github.com/backstream/backstream/internal/restorecase"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/sandbox/sandboxtest"
	"github.com/backstream/backstream/internal/storage"
	"github.com/backstream/backstream/internal/storage/crypt"
	"github.com/backstream/backstream/internal/usecasetest"
)

// An import of InnoDB tables of a physical backup into a running server
// (--table --apply-to) while other tables take writes: beside the live
// table (As), or a dropped partitioned table back; what cannot be
// imported is refused before the target changes.
func TestRestoreTableIntoRunningServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	db := src.DB()
	usecasetest.ExecAll(t, db,
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
	)
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
	r := usecasetest.NewLocalRepo(t)
	id := usecasetest.Backup(t, usecasetest.BackupOf(t, r, src)).Manifest.ID
	// The orders change after the backup; the import brings the backup's.
	usecasetest.ExecAll(t, db, "UPDATE shop.orders SET total = total + 1 WHERE id % 10 = 0")
	load := usecasetest.StartLoad(1, func(rng *rand.Rand) error {
		_, err := db.ExecContext(ctx, "INSERT INTO shop.events (at) VALUES (NOW(6))")
		return err
	})
	// The source writes a binary log: the imports go with --no-binlog
	// (ImportOf's).
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
	// one the backup lacks, As for several tables.
	for _, c := range []struct {
		tables, databases []string
		as, want          string
	}{
		{[]string{"shop.orders"}, nil, "", "the target already has table shop.orders"},
		{[]string{"shop.legacy"}, nil, "shop.legacy2", "table shop.legacy is MyISAM in backup"},
		{[]string{"shop.nope"}, nil, "", "has no table shop.nope"},
		{[]string{"shop.orders", "shop.parts"}, nil, "shop.x", "--as names one table"},
		{[]string{"shop.orders"}, nil, "nodb.orders", "the target has no database nodb"},
		{nil, []string{"shop"}, "", "holds tables that are not InnoDB: legacy (MyISAM)"},
		{nil, []string{"crm"}, "", "the target already has table crm.customers"},
		{nil, []string{"crm"}, "crm.x", "--as names one table"},
	} {
		req := usecasetest.ImportOf(r, src, c.tables...)
		req.Load.Databases, req.As = c.databases, c.as
		if _, err := restorecase.Run(ctx, req); !refused(err) || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("import of tables %v, databases %v as %q: %v; want refused saying %q", c.tables, c.databases, c.as, err, c.want)
		}
	}
	// Without --no-binlog a target that writes a binary log is refused:
	// its replicas would replay the DISCARD and IMPORT without the files.
	req := usecasetest.ImportOf(r, src, "shop.orders")
	req.As, req.Load.NoBinlog = "shop.orders2", false
	if _, err := restorecase.Run(ctx, req); !refused(err) || !strings.Contains(fmt.Sprint(err), "the target writes a binary log") {
		t.Errorf("import into a target with a binary log, without --no-binlog: %v", err)
	}
	load.More(t, 20)
	if got := tables(); got != before {
		t.Errorf("refused imports changed the target's tables: %s, before %s", got, before)
	}

	// Beside the live table, which keeps its newer rows.
	live := sum("shop.orders")
	var progress usecasetest.JSONProgress
	req = usecasetest.ImportOf(r, src, "shop.orders")
	req.As, req.Deferred.Tracker = "shop.orders_restored", progress.Tracker
	imported := usecasetest.Restore(t, req).Import
	if len(imported.Imported) != 1 || imported.Imported[0].Table.String() != "shop.orders" || imported.Imported[0].Table.As() != "shop.orders_restored" ||
		!slices.Equal(imported.Imported[0].Skipped, []string{"orders_note"}) {
		t.Errorf("import of shop.orders as shop.orders_restored: %+v; want it imported as shop.orders_restored, its triggers orders_note not created", imported.Imported)
	}
	// It read the frames of the table's files and the system's, no
	// other: not shop.big's.
	needed, all := neededFrameBytes(t, r.Backend, "", importtable.Needed([]importtable.Table{{DB: "shop", Name: "orders"}}, nil))
	if read := progress.Summary(t).BytesIn; read != needed || needed >= all {
		t.Errorf("the import read %d bytes; the frames of the table's and the system's files store %d of the backup's %d", read, needed, all)
	}
	// Its progress was of what it reads, not the whole backup.
	progress.Check(t, "restore --table", id, 99)
	if got := sum("shop.orders_restored"); got != orders {
		t.Errorf("shop.orders_restored: checksum %s, the backup's orders %s", got, orders)
	}
	if got := sum("shop.orders"); got != live {
		t.Errorf("the live shop.orders changed: checksum %s, was %s", got, live)
	}

	// Beside its original, a table's foreign keys would clash: it comes
	// without them, and says so.
	req = usecasetest.ImportOf(r, src, "shop.items")
	req.As = "shop.items_restored"
	if imported := usecasetest.Restore(t, req).Import.Imported; len(imported) != 1 || !slices.Equal(imported[0].ForeignKeys, []string{"items_order"}) {
		t.Errorf("import of shop.items as shop.items_restored: %+v; want its foreign keys items_order not created", imported)
	}
	if got := sum("shop.items_restored"); got != items {
		t.Errorf("shop.items_restored: checksum %s, the backup's items %s", got, items)
	}

	// A dropped partitioned table back under its name.
	usecasetest.ExecAll(t, db, "DROP TABLE shop.parts")
	if imported := usecasetest.Restore(t, usecasetest.ImportOf(r, src, "shop.parts")).Import.Imported; len(imported) != 1 || imported[0].Table.As() != "shop.parts" ||
		!slices.Equal(imported[0].Triggers, []string{"parts_upper"}) {
		t.Errorf("import of shop.parts: %+v; want it with its triggers parts_upper", imported)
	}
	if got := sum("shop.parts"); got != parts {
		t.Errorf("shop.parts: checksum %s after the import, %s in the backup", got, parts)
	}
	// Its trigger came back with it, and fires.
	var upper string
	usecasetest.ExecAll(t, db, "INSERT INTO shop.parts VALUES (999999, 1, 'lower')")
	if err := db.QueryRowContext(ctx, "SELECT name FROM shop.parts WHERE id = 999999").Scan(&upper); err != nil || upper != "LOWER" {
		t.Errorf("the restored trigger parts_upper did not fire: %q, %v", upper, err)
	}
	usecasetest.ExecAll(t, db, "DELETE FROM shop.parts WHERE id = 999999")

	// A whole database's tables (its view is not a table).
	usecasetest.ExecAll(t, db, "DROP TABLE crm.customers", "DROP TABLE crm.notes")
	req = usecasetest.ImportOf(r, src)
	req.Load.Databases = []string{"crm"}
	if imported := usecasetest.Restore(t, req).Import.Imported; len(imported) != 2 || imported[0].Table.String() != "crm.customers" {
		t.Errorf("import of database crm: %+v; want crm.customers and crm.notes", imported)
	}
	if c, n := sum("crm.customers"), sum("crm.notes"); c != customers || n != notes {
		t.Errorf("crm after the import of database crm: checksums %s, %s; the backup's %s, %s", c, n, customers, notes)
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

// A table of an encrypted incremental chain, locally and on S3: the
// import brings the chain end's rows, and fetches the table's frames and
// the system's from each link, decrypting ranges, not a big table's.
func TestRestoreTableFromEncryptedChain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	db := src.DB()
	usecasetest.ExecAll(t, db,
		"CREATE DATABASE shop",
		"CREATE TABLE shop.orders (id INT PRIMARY KEY, total DECIMAL(12,2), note VARBINARY(200)) ENGINE=InnoDB",
		"INSERT INTO shop.orders SELECT seq, seq * 1.25, RANDOM_BYTES(150) FROM shop.seq_1_to_20000",
		"CREATE TABLE shop.big (id INT PRIMARY KEY, b BLOB) ENGINE=InnoDB",
		"INSERT INTO shop.big SELECT seq, RANDOM_BYTES(1000) FROM shop.seq_1_to_40000",
	)
	usecasetest.WaitCheckpoint(t, db)
	pub, key := usecasetest.AgeKeys(t)
	var n int
	usecasetest.ForEachBackend(t, func(t *testing.T, r usecasetest.Repo) {
		n++
		full := usecasetest.Backup(t, usecasetest.EncryptedBackupOf(t, r, src, pub)).Manifest
		if _, err := db.ExecContext(ctx, "UPDATE shop.orders SET total = total + ? WHERE id % 7 = 0", n); err != nil {
			t.Fatal(err)
		}
		inc := usecasetest.EncryptedBackupOf(t, r, src, pub)
		inc.Physical.Incremental = &backup.Incremental{FullBecause: func(why string) { t.Errorf("a full backup instead of an incremental: %s", why) }}
		if m := usecasetest.Backup(t, inc).Manifest; m.Parent != full.ID || m.Encryption == nil {
			t.Errorf("the incremental %s: parent %q, encryption %+v; want an encrypted incremental on %s", m.ID, m.Parent, m.Encryption, full.ID)
		}
		var name, want string
		if err := db.QueryRowContext(ctx, "CHECKSUM TABLE shop.orders").Scan(&name, &want); err != nil {
			t.Fatal(err)
		}
		as := fmt.Sprintf("shop.orders_%d", n)
		var progress usecasetest.JSONProgress
		req := usecasetest.ImportOf(r, src, "shop.orders")
		req.As, req.Deferred.Tracker = as, progress.Tracker
		req.Deferred.Open = r.AccessWith(repoaccess.KeyFiles{IdentityFile: key}).Open
		usecasetest.Restore(t, req)
		var got string
		if err := db.QueryRowContext(ctx, "CHECKSUM TABLE "+as).Scan(&name, &got); err != nil || got != want {
			t.Errorf("%s: checksum %s (%v), the chain end's shop.orders %s", as, got, err, want)
		}
		needed, all := neededFrameBytes(t, r.Backend, key, importtable.Needed([]importtable.Table{{DB: "shop", Name: "orders"}}, nil))
		if read := progress.Summary(t).BytesIn; read != needed || needed >= all {
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
		if err == nil {
			m, err = m.LoadContents(read(path.Dir(i.Name) + "/" + archive.ContentsName))
		}
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

// Issue 28, item 1: a table imported into a running server is in every
// later physical backup. Beside a live table (As, --no-binlog) and in
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
	usecasetest.ExecAll(t, db,
		"CREATE DATABASE shop",
		"CREATE TABLE shop.customers (id INT PRIMARY KEY, name VARCHAR(40), note VARBINARY(200)) ENGINE=InnoDB",
		"INSERT INTO shop.customers SELECT seq, CONCAT('customer ', seq), RANDOM_BYTES(150) FROM shop.seq_1_to_20000",
		"CREATE TABLE shop.orders (id INT PRIMARY KEY, customer INT, total DECIMAL(12,2)) ENGINE=InnoDB",
		"INSERT INTO shop.orders SELECT seq, seq % 20000, seq * 1.25 FROM shop.seq_1_to_30000",
		"CREATE TABLE shop.parts (id INT, kind INT, name VARCHAR(20), PRIMARY KEY (id, kind)) ENGINE=InnoDB PARTITION BY HASH (kind) PARTITIONS 3",
		"INSERT INTO shop.parts SELECT seq, seq % 7, CONCAT('part ', seq) FROM shop.seq_1_to_20000",
	)
	r := usecasetest.NewLocalRepo(t)
	// takeBackup takes a full backup, or an incremental on the latest one.
	takeBackup := func(incremental bool) string {
		t.Helper()
		req := usecasetest.BackupOf(t, r, src)
		if incremental {
			req.Physical.Incremental = &backup.Incremental{FullBecause: func(why string) { t.Errorf("a full backup instead of an incremental: %s", why) }}
		}
		return usecasetest.Backup(t, req).Manifest.ID
	}
	takeBackup(false)
	usecasetest.ExecAll(t, db, "DROP TABLE shop.orders, shop.parts")
	req := usecasetest.ImportOf(r, src, "shop.customers")
	req.As = "shop.customers_restored"
	usecasetest.Restore(t, req)
	usecasetest.Restore(t, usecasetest.ImportOf(r, src, "shop.orders", "shop.parts"))

	imported := []string{"shop.customers_restored", "shop.orders", "shop.parts"}
	// Each imported table's tablespace (a partitioned table's first
	// partition's), as a restore has it.
	files := []string{"shop/customers_restored.ibd", "shop/orders.ibd", "shop/parts#P#p0.ibd"}
	// mariabackupLog is the mariabackup log of backup id.
	mariabackupLog := func(id string) []byte {
		log, _ := os.ReadFile(filepath.Join(r.Location, repo.Dir(id), "meta", "mariabackup.log"))
		return log
	}
	// restored restores backup id (and its chain), starts a server on it
	// and compares every table's checksum with want.
	restored := func(id string, want map[string]string) {
		t.Helper()
		target := filepath.Join(t.TempDir(), "datadir")
		req := usecasetest.RestoreOf(r, id)
		req.Restore.TargetDir, req.Restore.Options.Prepare = target, true
		if _, err := restorecase.Run(ctx, req); err != nil {
			t.Fatalf("restore --prepare of %s: %v\nits backup's mariabackup log:\n%s", id, err, mariabackupLog(id))
		}
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(target, f)); err != nil {
				t.Errorf("backup %s restored without the tablespace %s: %v\nits mariabackup log:\n%s", id, f, err, mariabackupLog(id))
			}
		}
		on := usecasetest.ServerOn(t, target)
		got, err := sandbox.ChecksumTables(ctx, on.DB())
		if err != nil {
			elog, _ := os.ReadFile(on.ErrorLog)
			t.Fatalf("backup %s restored: %v\nits mariabackup log:\n%s\nthe restored server's error log:\n%s", id, err, mariabackupLog(id), elog)
		}
		usecasetest.CompareChecksums(t, got, want)
	}
	// An incremental on the full taken before the imports.
	across := takeBackup(true)
	atAcross := usecasetest.Checksums(t, src)
	full := takeBackup(false)
	atFull := usecasetest.Checksums(t, src)
	usecasetest.ExecAll(t, db,
		"UPDATE shop.customers_restored SET name = CONCAT(name, '+') WHERE id % 5 = 0",
		"UPDATE shop.orders SET total = total + 1 WHERE id % 3 = 0",
		"INSERT INTO shop.orders SELECT seq, seq % 20000, seq * 2.5 FROM shop.seq_30001_to_31000",
		"UPDATE shop.parts SET name = CONCAT(name, '+') WHERE id % 4 = 0",
	)
	incr := takeBackup(true)
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
// as corrupt. Beside the live table (As, two such indexes) and in place
// of a dropped one (one), the imported table has the backup's definition,
// MATCH finds what it finds in the source, and a later full backup
// restores it so.
func TestRestoreTableWithFulltextIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sandboxtest.Start(t, sandbox.Options{})
	db := src.DB()
	usecasetest.ExecAll(t, db,
		"CREATE DATABASE shop",
		"CREATE TABLE shop.docs (id INT PRIMARY KEY, title VARCHAR(100), body TEXT, FULLTEXT KEY words (title, body), FULLTEXT KEY (body), KEY (title)) ENGINE=InnoDB",
		"INSERT INTO shop.docs SELECT seq, CONCAT('title', seq % 50), CONCAT('body word', seq % 300, ' other', seq) FROM shop.seq_1_to_3000",
		// Deleted rows are in the index's tables until it is optimized.
		"DELETE FROM shop.docs WHERE id > 2900",
		"CREATE TABLE shop.notes (id INT PRIMARY KEY, n TEXT, FULLTEXT KEY (n)) ENGINE=InnoDB",
		"INSERT INTO shop.notes SELECT seq, CONCAT('note', seq % 40) FROM shop.seq_1_to_2000",
	)
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
	// Right after the writes, InnoDB's full-text search once answered 0
	// rows for the first query on a loaded machine (a CI run) and the
	// right count a moment later: the source is asked again for up to
	// 10 seconds before its answer is taken as what the copy must give.
	want := matches(db, "docs")
	for deadline := time.Now().Add(10 * time.Second); want != "58 10 50" && time.Now().Before(deadline); want = matches(db, "docs") {
		time.Sleep(100 * time.Millisecond)
	}
	if want != "58 10 50" {
		t.Fatalf("MATCH on the source: %s rows, want 58 10 50", want)
	}
	notes := definition(db, "notes")
	r := usecasetest.NewLocalRepo(t)
	usecasetest.Backup(t, usecasetest.BackupOf(t, r, src))
	req := usecasetest.ImportOf(r, src, "shop.docs")
	req.As = "shop.docs_restored"
	usecasetest.Restore(t, req)
	usecasetest.ExecAll(t, db, "DROP TABLE shop.notes")
	usecasetest.Restore(t, usecasetest.ImportOf(r, src, "shop.notes"))
	if got, want := definition(db, "docs_restored"), definition(db, "docs"); !slices.Equal(got, want) {
		t.Errorf("the imported docs_restored's definition:\n%s\nthe source's docs:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := definition(db, "notes"); !slices.Equal(got, notes) {
		t.Errorf("the imported notes' definition:\n%s\nthe source's:\n%s", strings.Join(got, "\n"), strings.Join(notes, "\n"))
	}
	if got := matches(db, "docs_restored"); got != want {
		t.Errorf("MATCH on the imported tables: %s rows, on the source's %s", got, want)
	}
	usecasetest.Backup(t, usecasetest.BackupOf(t, r, src))
	sums := usecasetest.Checksums(t, src)
	target := filepath.Join(t.TempDir(), "datadir")
	restore := usecasetest.RestoreOf(r, "")
	restore.Restore.TargetDir, restore.Restore.Options.Prepare = target, true
	usecasetest.Restore(t, restore)
	on := usecasetest.ServerOn(t, target)
	usecasetest.CompareChecksums(t, usecasetest.Checksums(t, on), sums)
	if got := matches(on.DB(), "docs_restored"); got != want {
		t.Errorf("MATCH on the imported tables restored from a later backup: %s rows, on the source's %s", got, want)
	}
}
