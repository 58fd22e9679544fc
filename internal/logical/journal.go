package logical

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/mask"
)

// earlierTable is what the journal says of a table an earlier run of a
// load from a dump made.
type earlierTable struct {
	db, name string
	// definition is the source's definition it was made from (see
	// definitionOf); complete says all its rows were loaded, rows and
	// sum what they were.
	definition string
	complete   bool
	rows       int64
	sum        RowSum
}

// definitionOf identifies a table's definition on the source, its
// AUTO_INCREMENT counter left out (it moves with every insert).
func definitionOf(t *schema.Table) string {
	h := sha256.Sum256([]byte(autoIncrement.ReplaceAllString(t.Create, "")))
	return hex.EncodeToString(h[:])
}

// readJournal reads what the target's journal holds of this load, if the
// target has one: the data files loaded and started and, for a load from
// a dump, the tables an earlier run made. It changes nothing.
func (l *loader) readJournal(ctx context.Context) error {
	have, err := l.journalTablesPresent(ctx)
	if err != nil {
		return fmt.Errorf("load journal: %w", err)
	}
	for table, into := range map[string]map[int]bool{"journal": l.done, "started": l.started} {
		if have[table] {
			if err := l.readChunks(ctx, table, into); err != nil {
				return fmt.Errorf("load journal: %w", err)
			}
		}
	}
	if !have["tables"] {
		return nil
	}
	rows, err := l.ddl.QueryContext(ctx, "SELECT db, tbl, definition, complete, loaded_rows, row_sum FROM "+qualified(journalDB, "tables")+" WHERE backup = ?", l.job.ID)
	if err != nil {
		return fmt.Errorf("load journal: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var e earlierTable
		var sum string
		if err := rows.Scan(&e.db, &e.name, &e.definition, &e.complete, &e.rows, &sum); err != nil {
			return fmt.Errorf("load journal: %w", err)
		}
		if e.complete {
			if err := e.sum.UnmarshalText([]byte(sum)); err != nil {
				return fmt.Errorf("load journal: table %s.%s: %w", e.db, e.name, err)
			}
		}
		l.earlier[e.db+"\x00"+e.name] = &e
	}
	return rows.Err()
}

// journalTablesPresent lists the tables the journal database has.
func (l *loader) journalTablesPresent(ctx context.Context) (map[string]bool, error) {
	rows, err := l.ddl.QueryContext(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?", journalDB)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	have := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		have[name] = true
	}
	return have, rows.Err()
}

// readChunks adds the chunks one journal table holds for this load.
func (l *loader) readChunks(ctx context.Context, table string, into map[int]bool) error {
	rows, err := l.ddl.QueryContext(ctx, "SELECT chunk FROM "+qualified(journalDB, table)+" WHERE backup = ?", l.job.ID)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var n int
		if err := rows.Scan(&n); err != nil {
			return err
		}
		into[n] = true
	}
	return rows.Err()
}

// openJournal creates the journal where the target has none, forgets an
// earlier run of this load that is started over (DropExisting), and marks
// the load as started (chunk 0). A resumed load from a dump forgets the
// earlier run's data files: its dump cuts other ones, and only its tables
// resume.
func (l *loader) openJournal(ctx context.Context) error {
	name := "VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL"
	for _, q := range []string{
		"CREATE DATABASE IF NOT EXISTS " + mariadb.QuoteIdent(journalDB),
		"CREATE TABLE IF NOT EXISTS " + qualified(journalDB, "journal") +
			" (backup VARCHAR(64) NOT NULL, chunk INT NOT NULL, loaded TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, PRIMARY KEY (backup, chunk)) ENGINE=InnoDB",
		// Data files of non-transactional tables whose LOAD DATA began.
		"CREATE TABLE IF NOT EXISTS " + qualified(journalDB, "started") +
			" (backup VARCHAR(64) NOT NULL, chunk INT NOT NULL, PRIMARY KEY (backup, chunk)) ENGINE=InnoDB",
		// Accounts the load created, so that a resumed load grants to
		// them again rather than keeping them as if they were the target's.
		"CREATE TABLE IF NOT EXISTS " + qualified(journalDB, "accounts") +
			" (backup VARCHAR(64) NOT NULL, account VARCHAR(400) NOT NULL, PRIMARY KEY (backup, account)) ENGINE=InnoDB",
		// The tables a load from a dump made, and the rows of each one
		// whose rows are all in.
		"CREATE TABLE IF NOT EXISTS " + qualified(journalDB, "tables") +
			" (backup VARCHAR(64) NOT NULL, db " + name + ", tbl " + name + ", definition CHAR(64) NOT NULL," +
			" complete BOOLEAN NOT NULL DEFAULT FALSE, loaded_rows BIGINT NOT NULL DEFAULT 0, row_sum CHAR(16) NOT NULL DEFAULT ''," +
			" PRIMARY KEY (backup, db, tbl)) ENGINE=InnoDB",
		// The mask rules the load began with (mask.Rules.Describe), so that
		// a resumed load masks its files as the first run did.
		"CREATE TABLE IF NOT EXISTS " + qualified(journalDB, "masks") +
			" (backup VARCHAR(64) NOT NULL, rules TEXT NOT NULL, PRIMARY KEY (backup)) ENGINE=InnoDB",
	} {
		if _, err := l.ddl.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("load journal: %w", err)
		}
	}
	switch started := l.done[0]; {
	case started && !l.job.Resume:
		if err := l.forget(ctx, journalTables, ""); err != nil {
			return err
		}
		l.done, l.started, l.earlier = map[int]bool{}, map[int]bool{}, map[string]*earlierTable{}
	case started && !l.fromBackup():
		if err := l.forget(ctx, []string{"journal", "started"}, " AND chunk > 0"); err != nil {
			return err
		}
		l.done, l.started = map[int]bool{0: true}, map[int]bool{}
	}
	if l.done[0] {
		return l.checkResumedMasks(ctx)
	}
	if rules := l.job.Mask.Describe(); rules != "" {
		if _, err := l.ddl.ExecContext(ctx, "REPLACE INTO "+qualified(journalDB, "masks")+" (backup, rules) VALUES (?, ?)", l.job.ID, rules); err != nil {
			return fmt.Errorf("load journal: %w", err)
		}
	}
	if err := l.journal(ctx, l.ddl, "journal", 0); err != nil {
		return fmt.Errorf("load journal: %w", err)
	}
	l.done[0] = true
	return nil
}

// forget deletes this load's rows, those where also holds, from the
// journal's tables.
func (l *loader) forget(ctx context.Context, tables []string, where string) error {
	for _, table := range tables {
		if _, err := l.ddl.ExecContext(ctx, "DELETE FROM "+qualified(journalDB, table)+" WHERE backup = ?"+where, l.job.ID); err != nil {
			return fmt.Errorf("load journal: %w", err)
		}
	}
	return nil
}

// journal records chunk in a journal table ("journal" or "started").
func (l *loader) journal(ctx context.Context, c interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, table string, chunk int) error {
	_, err := c.ExecContext(ctx, "INSERT INTO "+qualified(journalDB, table)+" (backup, chunk) VALUES (?, ?)", l.job.ID, chunk)
	return err
}

// journalTable records, on c, that the load from a dump makes table t,
// not (yet) complete.
func (l *loader) journalTable(ctx context.Context, c execQuerier, t *target) error {
	_, err := c.ExecContext(ctx, "REPLACE INTO "+qualified(journalDB, "tables")+" (backup, db, tbl, definition) VALUES (?, ?, ?, ?)",
		l.job.ID, t.db, t.name, definitionOf(t.src))
	if err != nil {
		return fmt.Errorf("table %s: load journal: %w", t, err)
	}
	return nil
}

// journalComplete records, on c, that every row of table t is in.
func (l *loader) journalComplete(ctx context.Context, c execQuerier, t *target) error {
	_, err := c.ExecContext(ctx, "UPDATE "+qualified(journalDB, "tables")+" SET complete = TRUE, loaded_rows = ?, row_sum = ? WHERE backup = ? AND db = ? AND tbl = ?",
		t.rows, t.sum.String(), l.job.ID, t.db, t.name)
	if err != nil {
		return fmt.Errorf("table %s: load journal: %w", t, err)
	}
	return nil
}

// journaledAccounts returns the accounts earlier runs of this load created.
func (l *loader) journaledAccounts(ctx context.Context) (map[string]bool, error) {
	rows, err := l.ddl.QueryContext(ctx, "SELECT account FROM "+qualified(journalDB, "accounts")+" WHERE backup = ?", l.job.ID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			return nil, err
		}
		out[a] = true
	}
	return out, rows.Err()
}

// closeJournal forgets a finished load, and drops the journal database
// once none of its tables holds a row (a caller may keep records there,
// see JournalDatabase).
func (l *loader) closeJournal(ctx context.Context) error {
	if err := l.forget(ctx, journalTables, ""); err != nil {
		return err
	}
	have, err := l.journalTablesPresent(ctx)
	if err != nil {
		return fmt.Errorf("load journal: %w", err)
	}
	for _, table := range slices.Sorted(maps.Keys(have)) {
		var any bool
		if err := l.ddl.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM "+qualified(journalDB, table)+")").Scan(&any); err != nil {
			return fmt.Errorf("load journal: %w", err)
		}
		if any {
			return nil
		}
	}
	if _, err := l.ddl.ExecContext(ctx, "DROP DATABASE "+mariadb.QuoteIdent(journalDB)); err != nil {
		return fmt.Errorf("load journal: %w", err)
	}
	return nil
}

// ours reports whether table t, which the target has, is one an earlier
// run of this load made: resuming a backup's load, any (the journal does
// not name them, and the load continues over its own tables); resuming a
// load from a dump, those its journal names.
func (l *loader) ours(t *target) bool {
	if !l.job.Resume {
		return false
	}
	if l.fromBackup() {
		return true
	}
	return l.earlier[t.db+"\x00"+t.name] != nil
}

// replaceTables drops the tables the load makes anew: those the target
// had that are not the load's (DropExisting); resuming a load from a
// dump, those an earlier run made that cannot be kept as they are (not
// complete, or made from another definition), and those it made that this
// run does not load (the source dropped them, or the filters no longer
// pick them). A complete table of the earlier run stays until the dump
// reaches it (see keep).
func (l *loader) replaceTables(ctx context.Context) error {
	drop := func(t *target) error {
		if _, err := l.ddl.ExecContext(ctx, "DROP TABLE "+t.qname()); err != nil {
			return fmt.Errorf("drop %s: %w", t, err)
		}
		t.existed = false
		return nil
	}
	for _, t := range l.clash {
		if err := drop(t); err != nil {
			return err
		}
	}
	if l.fromBackup() {
		return nil
	}
	planned := map[string]bool{}
	for _, t := range l.tables {
		key := t.db + "\x00" + t.name
		planned[key] = true
		e := l.earlier[key]
		if e == nil || !t.existed {
			continue
		}
		if e.complete && t.data != nil && e.definition == definitionOf(t.src) {
			t.earlier, t.candidate = e, true
			continue
		}
		if err := drop(t); err != nil {
			return err
		}
		switch {
		case t.data == nil: // a sequence, or rows elsewhere: made anew each time
		case e.definition != definitionOf(t.src):
			l.res.Reloaded = append(l.res.Reloaded, fmt.Sprintf("table %s reloaded from scratch: its definition on the source changed since an earlier run made it", t))
		default:
			l.res.Reloaded = append(l.res.Reloaded, fmt.Sprintf("table %s reloaded from scratch: an earlier run did not finish it", t))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(l.earlier)) {
		if planned[key] {
			continue
		}
		e := l.earlier[key]
		if _, err := l.ddl.ExecContext(ctx, "DROP TABLE IF EXISTS "+qualified(e.db, e.name)); err != nil {
			return fmt.Errorf("drop %s.%s: %w", e.db, e.name, err)
		}
		if _, err := l.ddl.ExecContext(ctx, "DELETE FROM "+qualified(journalDB, "tables")+" WHERE backup = ? AND db = ? AND tbl = ?", l.job.ID, e.db, e.name); err != nil {
			return fmt.Errorf("drop %s.%s: load journal: %w", e.db, e.name, err)
		}
		l.res.Dropped = append(l.res.Dropped, fmt.Sprintf("table %s.%s dropped: an earlier run made it, and the source no longer has it (or the filters no longer pick it)", e.db, e.name))
	}
	return nil
}

// checkResumedMasks refuses to resume a load with other mask rules than
// it began with (none counts as rules): the rows of one table would be
// masked two ways, or not at all. A random key cannot be given again.
func (l *loader) checkResumedMasks(ctx context.Context) error {
	var began string
	err := l.ddl.QueryRowContext(ctx, "SELECT rules FROM "+qualified(journalDB, "masks")+" WHERE backup = ?", l.job.ID).Scan(&began)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("load journal: %w", err)
	}
	id := l.job.ID
	switch now := l.job.Mask.Describe(); {
	case strings.HasSuffix(began, "\nkey "+mask.RandomKey):
		return fmt.Errorf("--resume: the interrupted load of backup %s masked with a random key, which cannot be given again: the rest of its rows would not match those loaded; start over with --drop-existing (with --mask-key-file, a load can be resumed)", id)
	case began != now:
		return fmt.Errorf("--resume: the interrupted load of backup %s masked %s, this one %s: resume it with the same --mask rules and --mask-key-file (or start over with --drop-existing)", id, rulesSaid(began), rulesSaid(now))
	}
	return nil
}

// rulesSaid puts a mask.Rules.Describe in a sentence.
func rulesSaid(describe string) string {
	if describe == "" {
		return "nothing"
	}
	return "by " + strings.ReplaceAll(describe, "\n", ", ")
}
