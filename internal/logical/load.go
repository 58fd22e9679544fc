package logical

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-sql-driver/mysql"
	"golang.org/x/sync/errgroup"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/mask"
	"github.com/backstream/backstream/internal/progress"
	"github.com/backstream/backstream/internal/xbstream"
)

// journalDB holds the load journal on the target: which data files of
// which load (a backup's id, or a copy's) are loaded. A data file's rows
// and its journal row commit in one transaction, so a resumed load neither
// skips nor repeats one. That holds only where the target table is
// transactional: a MyISAM or Aria table keeps the rows of a LOAD DATA
// whose transaction (and journal row) a crash or a lost connection rolled
// back. So for those tables the journal also records each data file as
// started, committed before its LOAD DATA runs, and a resumed load reloads
// from scratch every such table that may hold rows of a data file it
// cannot tell apart (see reloadUnproven).
//
// A load from a dump (LoadFrom) cannot resume by data file: the next run
// dumps another snapshot, cut into other files. Its journal records the
// tables instead (table "tables"): each one it made, with the source's
// definition, and, once all its rows are in, their count and row sum. A
// resumed load from a dump keeps a complete table only if the new dump
// finds the same rows on the source and on the target (see keep).
const journalDB = "backstream_load"

// JournalDatabase is the database on a target that holds the load
// journal; a caller may keep its own records of loads there: the journal
// database goes only once no table in it holds a row.
const JournalDatabase = journalDB

// journalTables are the journal's tables, each keyed by the load's id
// (column backup) first.
var journalTables = []string{"journal", "started", "accounts", "tables", "masks"}

// LoadJob is one load into a running server: of a logical backup (Load),
// or of a dump of another server as it is made (OpenLoad, LoadFrom).
type LoadJob struct {
	Conn mariadb.Config
	// Input and Manifest are the backup's; a load from a dump has none.
	Input    archive.Input
	Manifest *archive.Manifest
	// ID names a load from a dump in the journal and in messages (a
	// backup's load is named by the backup's id).
	ID       string
	Catalog  *Catalog
	Parallel int             // loading connections; index builds run as many at once
	Memory   *archive.Memory // the budget of what reading the backup holds at once (nil: archive.DefaultMemory)
	Filter   schema.Filter
	Rename   map[string]string // source database -> target database
	Skip     schema.Skip
	Definer  string // rewrite DEFINER clauses to this account ("" keeps them)
	// DropExisting drops tables the target already has; without it (and
	// without Resume) they make the load refuse before it changes anything.
	DropExisting bool
	// Resume continues an interrupted load of the same backup, or with
	// the same ID.
	Resume bool
	// NoBinlog loads with sql_log_bin=0.
	NoBinlog bool
	// Users creates the backup's accounts (users, roles and their grants)
	// on the target. Without it no account is created or changed.
	Users bool
	// ReplaceUsers, with Users, replaces the accounts the target already
	// has (their grants too) instead of keeping them as they are. The
	// account the load connects as is always kept.
	ReplaceUsers bool
	// OnTarget hears which server the load reached, before it changes
	// anything there.
	OnTarget func(Target)
	Progress *progress.Tracker
	// Mask masks the columns its rules name (by their names in the
	// backup) in every data file before LOAD DATA reads it, after the
	// file was checked against the manifest; nil masks nothing. A rule
	// that names no column loaded, or one that cannot hold what it
	// makes, fails the load before it changes anything (a *mask.Error).
	Mask *mask.Rules
}

// Target names the server a load reached.
type Target struct {
	Host     string `json:"host,omitempty"`   // TCP connections
	Socket   string `json:"socket,omitempty"` // Unix socket connections
	Port     int    `json:"port"`             // the server's @@port
	Version  string `json:"version"`          // @@version
	Hostname string `json:"hostname"`         // @@hostname
}

func (t Target) String() string {
	where := "socket " + t.Socket
	if t.Socket == "" {
		where = "host " + t.Host
	}
	return fmt.Sprintf("%s, port %d, MariaDB %s, @@hostname %s", where, t.Port, t.Version, t.Hostname)
}

// LoadResult says what a load did.
type LoadResult struct {
	Target                  Target
	Tables, Chunks, Skipped int   // Skipped: chunks a resumed load found done
	Rows, Bytes             int64 // loaded by this run
	// Accounts (as `user`@`host`, or `role`): created, replaced, and kept
	// as the target had them. Passwordless lists the created or replaced
	// ones that log in without any password or other credential.
	CreatedAccounts, ReplacedAccounts, KeptAccounts, Passwordless []string
	// LeftOut lists, one sentence each, the views, triggers, routines,
	// events and grants of the restored databases that were not restored
	// because they refer to objects the load does not restore.
	LeftOut []string
	// Reloaded says, one sentence each, which tables a resumed load
	// emptied and loaded again, and why: non-transactional ones of a
	// backup, any table of a dump.
	Reloaded []string
	// Kept says, one sentence each, which tables a resumed load from a
	// dump kept as an earlier run loaded them, their rows being the
	// source's; Dropped, which tables an earlier run made that the source
	// no longer has (or the filters no longer pick) it dropped.
	Kept, Dropped []string
	// DefinitionOnly says, one sentence each, which tables were created
	// without rows because their rows are other tables' (see
	// schema.Table.RowsElsewhere); HistoryLeftOut, which versioned tables
	// got their current rows only because the backup has no more.
	DefinitionOnly, HistoryLeftOut []string
	// Masked lists the columns LoadJob.Mask masked, as
	// db.table.column=function under their target names.
	Masked []string
}

// target is one table to load, with its statements.
type target struct {
	db, name   string // in the target server
	srcDB      string // in the backup
	src        *schema.Table
	data       *TableData
	base       string // CREATE TABLE without foreign keys, and without secondary keys unless inlineIndexes
	addIndexes string
	addForeign string
	// inlineIndexes says that base holds the secondary keys (a small
	// table, see smallTable).
	inlineIndexes bool
	load          string // the LOAD DATA statement after its file name (see loadTx)
	existed       bool   // the target has it, and keeps it
	serial        bool   // one load at a time (an AUTO_INCREMENT column)
	// engine is the target table's storage engine; transactional says
	// whether the target rolls back its rows with the journal row.
	engine        string
	transactional bool
	// masks masks the data files' columns LoadJob.Mask names (nil: none).
	masks *tableMasks
	// earlier is what the journal says of the table from an earlier run
	// of a load from a dump; candidate, that it may be kept (see keep).
	earlier   *earlierTable
	candidate bool

	mu sync.Mutex
	// left counts the data files known and not loaded yet; all says
	// every data file is known (listed in a backup's catalog, or a dump
	// said it made them all); done that the table was reported loaded.
	left      int
	all, done bool
	// rows and sum are the table's as dumped (a load from a dump).
	rows int64
	sum  RowSum
}

func (t *target) qname() string  { return qualified(t.db, t.name) }
func (t *target) String() string { return t.db + "." + t.name }

// settle reports, once, that every data file of t is known and loaded;
// t.mu is held.
func (t *target) settle() bool {
	if t.all && t.left == 0 && !t.done {
		t.done = true
		return true
	}
	return false
}

type loader struct {
	job    LoadJob
	name   string // in messages: "backup <id>", or a load from a dump's ID
	db     *sql.DB
	ddl    *sql.Conn
	tables []*target
	byPath map[string]*loadFile
	// bySource finds a table by its source database and name.
	bySource map[string]*target
	dbs      []*schema.Database
	done     map[int]bool // journaled chunks
	res      LoadResult
	resMu    sync.Mutex
	// started holds the chunks of non-transactional tables whose LOAD
	// DATA an earlier run began.
	started map[int]bool
	// earlier holds the journal's tables of this load (a load from a
	// dump), by target database and name.
	earlier map[string]*earlierTable
	// clash holds the tables the target has that are not this load's.
	clash []*target
	// insertHistory: the target has system_versioning_insert_history
	// (MariaDB 10.11 and newer), which loading a versioned table's
	// history needs.
	insertHistory bool
}

// fromBackup tells a load of a backup's streams from one of a dump.
func (l *loader) fromBackup() bool { return l.job.Manifest != nil }

// loadFile is a data file the load wants, and the manifest's word on it.
type loadFile struct {
	t      *target
	chunk  Chunk
	digest string
	buf    []byte
}

// Loading is a load under way into one server. OpenLoad connects, plans
// and checks the target without changing it; Prepare creates the tables
// without their secondary keys; the data comes through LoadFrom (a dump)
// or, in Load, a backup's streams; Finish adds the keys and the other
// objects.
type Loading struct{ l *loader }

// Load loads a logical backup: tables without secondary indexes first,
// their data files in parallel through LOAD DATA LOCAL INFILE fed from
// memory, each checked against the manifest before it commits, then the
// indexes, foreign keys, sequences, views, triggers, routines, events and
// accounts.
func Load(ctx context.Context, job LoadJob) (*LoadResult, error) {
	ld, err := OpenLoad(ctx, job)
	if err != nil {
		return nil, err
	}
	defer ld.Close()
	if err := ld.Prepare(ctx); err != nil {
		return nil, err
	}
	if err := ld.l.loadBackup(ctx); err != nil {
		return nil, err
	}
	return ld.Finish(ctx)
}

// OpenLoad connects to the target, names it (OnTarget), picks the tables
// and checks the target: it refuses tables the target has (unless
// DropExisting), an unfinished load of the same backup or ID (unless
// Resume or DropExisting), and Resume without one. It changes nothing.
func OpenLoad(ctx context.Context, job LoadJob) (_ *Loading, err error) {
	if job.Parallel < 1 {
		job.Parallel = 1
	}
	l := &loader{job: job, byPath: map[string]*loadFile{}, bySource: map[string]*target{}, done: map[int]bool{},
		started: map[int]bool{}, earlier: map[string]*earlierTable{}}
	switch {
	case job.Manifest != nil:
		l.job.ID, l.name = job.Manifest.ID, "backup "+job.Manifest.ID
	case job.ID == "":
		return nil, errors.New("a load without a backup needs an ID")
	default:
		l.name = job.ID
	}
	if l.db, err = mariadb.Open(ctx, job.Conn, ""); err != nil {
		return nil, err
	}
	ld := &Loading{l}
	defer func() {
		if err != nil {
			ld.Close()
		}
	}()
	// The loaders, the DDL connection, and as many again for reading
	// tables back (a resumed load from a dump compares them, see keep).
	l.db.SetMaxOpenConns(2*job.Parallel + 1)
	l.db.SetMaxIdleConns(job.Parallel + 1)
	var n int
	if err := l.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SYSTEM_VARIABLES WHERE VARIABLE_NAME = 'SYSTEM_VERSIONING_INSERT_HISTORY'").Scan(&n); err != nil {
		return nil, fmt.Errorf("target server: %w", err)
	}
	l.insertHistory = n > 0
	if l.ddl, err = l.conn(ctx); err != nil {
		return nil, err
	}
	if err := l.describeTarget(ctx); err != nil {
		return nil, err
	}
	if err := l.checkVersions(); err != nil {
		return nil, err
	}
	if err := l.plan(); err != nil {
		return nil, err
	}
	if names := historyToLoad(l.tables); len(names) > 0 && !l.insertHistory {
		return nil, fmt.Errorf("the target (MariaDB %s) has no system_versioning_insert_history (10.11 and newer have it), without which the history of system-versioned tables cannot be loaded: %s; restore into MariaDB 10.11 or newer, leave them out (--exclude-table), or take the backup with --versioned-current-only",
			l.res.Target.Version, strings.Join(names, ", "))
	}
	if err := l.phases(ctx, []phase{
		{"checking the target", l.readJournal},
		{"checking the target", l.checkTarget},
	}); err != nil {
		return nil, err
	}
	return ld, nil
}

// Prepare opens the journal and creates the databases and tables, without
// their secondary keys and foreign keys; tables of an earlier run it
// keeps, empties or drops as the journal says.
func (ld *Loading) Prepare(ctx context.Context) error {
	l := ld.l
	return l.phases(ctx, []phase{
		{"checking the target", l.openJournal},
		{"creating tables", l.replaceTables},
		{"creating tables", l.createTables},
		{"checking the target", l.findEngines},
		{"checking the target", l.reloadUnproven},
	})
}

// Finish adds the secondary keys and foreign keys, sets the sequences,
// creates the views, triggers, routines, events (and with Users the
// accounts), and closes the journal.
func (ld *Loading) Finish(ctx context.Context) (*LoadResult, error) {
	l := ld.l
	if err := l.phases(ctx, []phase{
		{"building indexes", l.addKeys},
		{"creating views, triggers, routines, events and accounts", l.createObjects},
		{"finishing", l.closeJournal},
	}); err != nil {
		return nil, err
	}
	l.res.Tables = len(l.tables)
	return &l.res, nil
}

// Close ends the load's connections.
func (ld *Loading) Close() {
	if ld.l.ddl != nil {
		ld.l.ddl.Close()
	}
	ld.l.db.Close()
}

// phase is a step of a load, and the stage the progress display shows.
type phase struct {
	stage string
	run   func(context.Context) error
}

func (l *loader) phases(ctx context.Context, phases []phase) error {
	for _, p := range phases {
		if l.job.Progress != nil {
			l.job.Progress.Stage(p.stage)
		}
		if err := p.run(ctx); err != nil {
			return err
		}
	}
	return nil
}

// checkVersions refuses a backup's load into a server older than the
// backup's source (by major.minor), before anything changes: MariaDB
// supports no downgrade, and an older server may not know the source's
// types, syntax and defaults, so such a load would fail midway, having
// created and filled part of the target. The same or a newer version
// takes it, as copy (servercopy) does.
func (l *loader) checkVersions() error {
	if l.job.Manifest == nil || l.job.Manifest.Server.Version == "" {
		return nil
	}
	src := l.job.Manifest.Server.Version
	sMajor, sMinor, _, err := mariadb.ParseVersion(src)
	if err != nil {
		return fmt.Errorf("the backup's source: %w", err)
	}
	dMajor, dMinor, _, err := mariadb.ParseVersion(l.res.Target.Version)
	if err != nil {
		return fmt.Errorf("target server: %w", err)
	}
	if dMajor < sMajor || dMajor == sMajor && dMinor < sMinor {
		return fmt.Errorf("the target runs MariaDB %d.%d (%s), older than the backup's source, MariaDB %d.%d (%s): MariaDB does not support moving data to an older major version, whose server may not know the source's types, syntax and defaults; restore into %d.%d or newer",
			dMajor, dMinor, l.res.Target.Version, sMajor, sMinor, src, sMajor, sMinor)
	}
	return nil
}

// describeTarget finds out which server the load reached and tells
// OnTarget.
func (l *loader) describeTarget(ctx context.Context) error {
	t := &l.res.Target
	if err := l.ddl.QueryRowContext(ctx, "SELECT @@version, @@hostname, @@port").Scan(&t.Version, &t.Hostname, &t.Port); err != nil {
		return fmt.Errorf("target server: %w", err)
	}
	if l.job.Conn.UsesSocket() {
		t.Socket = l.job.Conn.SocketPath()
	} else {
		t.Host = l.job.Conn.Host
	}
	if l.job.OnTarget != nil {
		l.job.OnTarget(*t)
	}
	return nil
}

// conn takes a connection from the pool, prepared for bulk loading.
func (l *loader) conn(ctx context.Context) (*sql.Conn, error) {
	c, err := l.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if err := l.session(ctx, c); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// session prepares a connection for bulk loading.
func (l *loader) session(ctx context.Context, c *sql.Conn) error {
	settings := loadSettings(l.job.Catalog.Schema.SQLMode, l.insertHistory)
	if l.job.NoBinlog {
		settings = append(settings, "sql_log_bin = 0")
	}
	for _, s := range settings {
		q := "SET SESSION " + s
		if _, err := c.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// loadSettings are the session settings data files load under, as
// "name = value": the sql_mode of loadSQLMode, no foreign key or CHECK
// constraint checks (the source checked the rows), times in UTC as the
// data files hold them, no statement time limit; with insertHistory the
// history rows of system-versioned tables go in as they are. The scripts
// of the way out (stock.go) load under the same.
//
// Unique checks stay on. With both them and the foreign key checks off,
// InnoDB (10.6 and later) takes a LOAD DATA into an empty table through
// its bulk insert, which buffers and sorts the rows before it builds the
// table, and that made loads slower on 10.11 and 11.8: a 118 MB sysbench
// table loaded whole in 5.6 to 6.2 s against 4.0 s, and in four data
// files 5% slower (the first file, into the empty table, bulk). Checked,
// a unique index created with its table (a small one's) also refuses a
// duplicate row instead of taking it.
func loadSettings(sourceMode string, insertHistory bool) []string {
	s := []string{
		"sql_mode = '" + strings.ReplaceAll(loadSQLMode(sourceMode), "'", "''") + "'",
		"foreign_key_checks = 0",
		"check_constraint_checks = 0",
		"time_zone = '+00:00'",
		"max_statement_time = 0",
	}
	if insertHistory {
		s = append(s, "system_versioning_insert_history = 1")
	}
	return s
}

// loadSQLMode is the sql_mode data files load under: the source's global
// one, less what would change a value the source holds, plus what keeps
// values as they are.
//
//   - NO_ZERO_DATE, NO_ZERO_IN_DATE and TRADITIONAL (which sets both) go:
//     a permissive session on the source may have stored 0000-00-00 or
//     2020-00-15 whatever the global mode, and LOAD DATA LOCAL would turn
//     such a value into 0000-00-00 with a warning, not an error (LOCAL
//     loads as if IGNORE were given). The rest of TRADITIONAL stays.
//   - ALLOW_INVALID_DATES comes: a source session with it may have stored
//     2020-02-31 in a DATE or DATETIME.
//   - NO_AUTO_VALUE_ON_ZERO comes: a 0 in an AUTO_INCREMENT column is a
//     row's value, not a request for the next one.
//
// The target's global sql_mode plays no part.
func loadSQLMode(source string) string {
	var out []string
	has := map[string]bool{}
	add := func(m string) {
		if !has[m] {
			has[m] = true
			out = append(out, m)
		}
	}
	for _, m := range strings.Split(source, ",") {
		m = strings.ToUpper(strings.TrimSpace(m))
		switch m {
		case "", "NO_ZERO_DATE", "NO_ZERO_IN_DATE":
		case "TRADITIONAL":
			for _, t := range []string{"STRICT_TRANS_TABLES", "STRICT_ALL_TABLES", "ERROR_FOR_DIVISION_BY_ZERO", "NO_AUTO_CREATE_USER", "NO_ENGINE_SUBSTITUTION"} {
				add(t)
			}
		default:
			add(m)
		}
	}
	add("NO_AUTO_VALUE_ON_ZERO")
	add("ALLOW_INVALID_DATES")
	return strings.Join(out, ",")
}

// plan picks the tables the filters select, under their target names.
func (l *loader) plan() error {
	data := map[string]*TableData{}
	for i := range l.job.Catalog.Tables {
		td := &l.job.Catalog.Tables[i]
		data[td.Database+"\x00"+td.Table] = td
	}
	digests := map[string]string{}
	if l.fromBackup() {
		for _, f := range l.job.Manifest.Files {
			digests[f.Path] = f.Digest
		}
	}
	for _, d := range l.job.Catalog.Schema.Databases {
		if !l.job.Filter.Database(d.Name) {
			continue
		}
		l.dbs = append(l.dbs, d)
		for _, st := range d.Tables {
			if !l.job.Filter.Table(d.Name, st.Name) {
				continue
			}
			t := &target{db: l.targetDB(d.Name), srcDB: d.Name, name: st.Name, src: st, data: data[d.Name+"\x00"+st.Name]}
			switch {
			case st.Sequence:
				t.base = st.Create
			case st.RowsElsewhere():
				// Whole: there are no rows to load before its keys (and a
				// MERGE table's keys must match its tables' from the
				// start). Data files that backups made before this rule
				// hold for it are other tables' rows: never loaded.
				t.base, t.data = st.Create, nil
				l.res.DefinitionOnly = append(l.res.DefinitionOnly, fmt.Sprintf("table %s: definition only (%s: its rows are those of the tables it names)", t, st.Engine))
			default:
				var err error
				if t.base, t.addIndexes, t.addForeign, err = schema.SplitCreateTable(st.Create); err != nil {
					return fmt.Errorf("table %s.%s: %w", d.Name, st.Name, err)
				}
				if smallTable(st, t.data) {
					// Created with its indexes; addIndexes stays for a
					// table an earlier run created (see addKeys).
					if t.base, _, err = schema.SplitForeignKeys(st.Create); err != nil {
						return fmt.Errorf("table %s.%s: %w", d.Name, st.Name, err)
					}
					t.inlineIndexes = true
				}
				if strings.EqualFold(st.Engine, "ARCHIVE") {
					// ARCHIVE refuses a key value below its AUTO_INCREMENT
					// counter as a duplicate: created with the source's
					// counter, it would refuse every row. Loaded without
					// it, the rows set it to their largest key + 1, the
					// source's unless inserts failed there.
					t.base = autoIncrement.ReplaceAllString(t.base, "")
				}
			}
			if len(l.job.Rename) > 0 {
				// Foreign keys and defaults may name other databases.
				t.base = schema.RenameDatabases(t.base, l.job.Rename)
				t.addForeign = schema.RenameDatabases(t.addForeign, l.job.Rename)
			}
			if st.HistoryLeftOut {
				l.res.HistoryLeftOut = append(l.res.HistoryLeftOut, fmt.Sprintf("table %s: history not in the backup (--versioned-current-only)", t))
			}
			t.serial = autoIncColumn.MatchString(st.Create)
			if t.data != nil {
				t.load = loadStatement(t.qname(), st, t.data.Columns, l.job.Catalog.DataFormat)
				for _, ch := range t.data.Chunks {
					l.byPath[ch.Path] = &loadFile{t: t, chunk: ch, digest: digests[ch.Path]}
				}
			}
			l.tables = append(l.tables, t)
			l.bySource[d.Name+"\x00"+st.Name] = t
		}
	}
	if len(l.tables) == 0 && len(l.dbs) == 0 {
		return fmt.Errorf("%s: the filters select nothing", l.name)
	}
	if l.job.Mask == nil {
		return nil
	}
	plan := l.job.Mask.Plan()
	for _, t := range l.tables {
		if t.data == nil {
			continue
		}
		var err error
		if t.masks, err = planMasks(plan, t.srcDB, t.src, t.data.Columns); err != nil {
			return err
		}
		l.res.Masked = append(l.res.Masked, maskedColumns(t.db, t.name, t.masks)...)
	}
	warnMasks(plan, l.job.Progress)
	return plan.Check()
}

// inlineIndexesBelow is the size under which a table is created with its
// indexes rather than given them after its rows: building an index after
// the load pays for a large table (one sorted build instead of an insert
// per row), but for a small one it is an ALTER TABLE more, and on a server
// of many small tables that doubled the statements of the load.
const inlineIndexesBelow = 8 << 20

// smallTable says whether table t, whose data files are data (nil when it
// has none), is under inlineIndexesBelow: by the larger of the source's
// estimate and the bytes of its data files where they are known.
func smallTable(t *schema.Table, data *TableData) bool {
	size := t.DataBytes
	if data != nil {
		var files int64
		for _, c := range data.Chunks {
			files += c.Bytes
		}
		size = max(size, files)
	}
	return size < inlineIndexesBelow
}

// autoIncColumn finds a column definition with AUTO_INCREMENT in SHOW
// CREATE TABLE output (the table option is AUTO_INCREMENT=N).
var autoIncColumn = regexp.MustCompile("(?m)^  `.* AUTO_INCREMENT(,| COMMENT|$)")

func (l *loader) targetDB(src string) string {
	if d, ok := l.job.Rename[src]; ok {
		return d
	}
	return src
}

// loadStatement is the LOAD DATA of one data file of the table, from the
// end of its file name on (loadTx puts the name in front): the
// defaults spelled out, the exact bytes (CHARACTER SET binary), the
// dumped columns by name; BIT values, the text forms of UUID and INET
// values, and in DataFormatNumeric the numbers of ENUM and SET values,
// through a variable.
func loadStatement(qname string, t *schema.Table, cols []string, format int) string {
	list, set := loadColumns(t, cols, format)
	// The separators in hex: their escaped forms would be read literally
	// under the source's sql_mode if it has NO_BACKSLASH_ESCAPES.
	q := "' INTO TABLE " + qname +
		" CHARACTER SET binary FIELDS TERMINATED BY X'09' ESCAPED BY X'5C' LINES TERMINATED BY X'0A' (" + strings.Join(list, ", ") + ")"
	if len(set) > 0 {
		q += " SET " + strings.Join(set, ", ")
	}
	return q
}

// loadColumns returns the column list of loadStatement, names and
// variables, and the assignments of its SET clause.
func loadColumns(t *schema.Table, cols []string, format int) (list, set []string) {
	types := map[string]string{}
	for _, c := range t.Columns {
		types[c.Name] = c.DataType
	}
	for i, c := range cols {
		v := fmt.Sprintf("@v%d", i)
		switch typ := types[c]; {
		case typ == "bit", (typ == "enum" || typ == "set") && format >= DataFormatNumeric:
			// A string is taken as a member's name first (an ENUM('0','1')
			// would read '1' as its member '1', index 2); a number is the
			// index or bitmask, and an ENUM's 0 its error value (with a
			// warning, as LOAD DATA LOCAL gives for every bad value).
			// CAST keeps \N as NULL.
			list = append(list, v)
			set = append(set, fmt.Sprintf("%s = CAST(%s AS UNSIGNED)", mariadb.QuoteIdent(c), v))
		case typ == "uuid", typ == "inet4", typ == "inet6":
			// These types read a binary string as their packed form; the
			// dump holds their text form.
			list = append(list, v)
			set = append(set, fmt.Sprintf("%s = CONVERT(%s USING utf8mb4)", mariadb.QuoteIdent(c), v))
		default:
			list = append(list, mariadb.QuoteIdent(c))
		}
	}
	return list, set
}

// checkTarget refuses a load over an unfinished one of the same backup or
// ID (unless resumed or started over), a resumed load without one, and a
// load over tables the target has that are not the load's own (unless
// DropExisting, for replaceTables).
func (l *loader) checkTarget(ctx context.Context) error {
	switch started := l.done[0]; {
	case started && !l.job.Resume && !l.job.DropExisting:
		return fmt.Errorf("an earlier load of %s into this server did not finish; --resume continues it, --drop-existing starts over", l.name)
	case !started && l.job.Resume:
		return fmt.Errorf("--resume: this server has no unfinished load of %s", l.name)
	}
	var clash []*target
	if err := l.eachTargetTable(ctx, nil, func(t *target, _ sql.NullString, _ bool) { t.existed = true }); err != nil {
		return err
	}
	for _, t := range l.tables {
		if t.existed && !l.ours(t) {
			clash = append(clash, t)
		}
	}
	if len(clash) > 0 && !l.job.DropExisting {
		names := make([]string, 0, 3)
		for _, t := range clash[:min(3, len(clash))] {
			names = append(names, t.String())
		}
		more := ""
		if len(clash) > 3 {
			more = fmt.Sprintf(" and %d more", len(clash)-3)
		}
		return fmt.Errorf("the target already has %s%s; refusing to load over them (--drop-existing drops them first)", strings.Join(names, ", "), more)
	}
	l.clash = clash
	return nil
}

// createTables creates the databases, then sequences (tables may default
// to their next value), then tables without their secondary keys, then
// the tables whose rows are other tables' (a MERGE table's UNION, a
// FEDERATED table's remote table must exist first). A load from a dump
// journals each table before it makes it.
func (l *loader) createTables(ctx context.Context) error {
	for _, d := range l.dbs {
		if err := schema.CreateDatabase(ctx, l.ddl, d, l.targetDB(d.Name)); err != nil {
			return err
		}
	}
	pass := func(t *schema.Table) int {
		switch {
		case t.Sequence:
			return 0
		case t.RowsElsewhere():
			return 2
		}
		return 1
	}
	// A pass at a time (sequences, tables, tables of other tables' rows),
	// its tables shared out among the load's connections.
	for p := range 3 {
		var todo []*target
		for _, t := range l.tables {
			if pass(t.src) == p && !t.existed {
				todo = append(todo, t)
			}
		}
		err := l.shareOut(ctx, len(todo), func(ctx context.Context, c *sql.Conn, next func() (int, bool)) error {
			return schema.CreateTables(ctx, c, func(create schema.CreateFunc) error {
				for i, ok := next(); ok; i, ok = next() {
					t := todo[i]
					if !l.fromBackup() {
						if err := l.journalTable(ctx, c, t); err != nil {
							return err
						}
					}
					if err := create(t.db, t.src, t.base); err != nil {
						return err
					}
				}
				return nil
			})
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// shareOut runs work on up to --parallel connections of their own, as many
// as there are items for, each taking the index of the next of n items from
// next until it says none is left: a connection per worker, not one per
// item (on a server of many tables, a connect and a session's settings
// each). The first error cancels the others.
func (l *loader) shareOut(ctx context.Context, n int, work func(ctx context.Context, c *sql.Conn, next func() (int, bool)) error) error {
	var at atomic.Int64
	next := func() (int, bool) {
		i := int(at.Add(1)) - 1
		return i, i < n
	}
	g, gctx := errgroup.WithContext(ctx)
	for range min(l.job.Parallel, n) {
		g.Go(func() error {
			c, err := l.conn(gctx)
			if err != nil {
				return err
			}
			defer c.Close()
			return work(gctx, c, next)
		})
	}
	return g.Wait()
}

// findEngines reads which engine each table has on the target (not in the
// backup: a target may substitute its default engine) and whether that
// engine is transactional. An engine the server does not list counts as
// non-transactional, the safe side.
func (l *loader) findEngines(ctx context.Context) error {
	found := map[*target]bool{}
	err := l.eachTargetTable(ctx, func(t *target) bool { return t.data != nil }, func(t *target, engine sql.NullString, transactional bool) {
		t.engine, t.transactional = engine.String, transactional
		if !engine.Valid {
			t.engine = t.src.Engine // the server could not open the table
		}
		found[t] = true
	})
	if err != nil {
		return err
	}
	for _, t := range l.tables {
		if t.data != nil && !found[t] {
			return fmt.Errorf("table %s: engine: the target does not list the table", t)
		}
	}
	return nil
}

// eachTargetTable reads the target's information_schema.TABLES once per
// database of the load rather than once per table (on a server of many
// tables, a query each was much of the load's time), and calls fn for each
// table of the load that want takes (nil: every one) and the target has,
// with its engine and whether that engine is transactional. A table is the
// one the target lists under its name, else the only one it lists under a
// name that differs in case alone (a target with lower_case_table_names
// keeps names in lower case); never another table's, whatever the order
// the target lists them in.
func (l *loader) eachTargetTable(ctx context.Context, want func(*target) bool, fn func(t *target, engine sql.NullString, transactional bool)) error {
	byDB := map[string][]*target{}
	var dbs []string
	for _, t := range l.tables {
		if want != nil && !want(t) {
			continue
		}
		if byDB[t.db] == nil {
			dbs = append(dbs, t.db)
		}
		byDB[t.db] = append(byDB[t.db], t)
	}
	type listed struct {
		engine        sql.NullString
		transactional bool
	}
	for _, db := range dbs {
		exact := map[string]listed{}
		fold := map[string][]listed{}
		err := func() error {
			rows, err := l.ddl.QueryContext(ctx, `SELECT t.TABLE_NAME, t.ENGINE, COALESCE(e.TRANSACTIONS = 'YES', FALSE)
				FROM information_schema.TABLES t LEFT JOIN information_schema.ENGINES e ON e.ENGINE = t.ENGINE
				WHERE t.TABLE_SCHEMA = ?`, db)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var name string
				var r listed
				if err := rows.Scan(&name, &r.engine, &r.transactional); err != nil {
					return err
				}
				exact[name] = r
				fold[strings.ToLower(name)] = append(fold[strings.ToLower(name)], r)
			}
			return rows.Err()
		}()
		if err != nil {
			return fmt.Errorf("database %s: the target's tables: %w", db, err)
		}
		for _, t := range byDB[db] {
			r, ok := exact[t.name]
			if c := fold[strings.ToLower(t.name)]; !ok && len(c) == 1 {
				r, ok = c[0], true
			}
			if ok {
				fn(t, r.engine, r.transactional)
			}
		}
	}
	return nil
}

// reloadUnproven, on a resumed load, empties and loads again from scratch
// every non-transactional table whose rows cannot be proven to be exactly
// those of its journaled data files: one of its data files was started
// and not journaled (its rows, all or some, may be in), or its row count
// differs from its journaled files' (a MEMORY table a restart emptied).
// Without a started data file the count is proof: no LOAD DATA into the
// table was under way, so every row came from a journaled file, and
// journaled files never repeat. With one, the count is not: a server
// killed mid-statement may keep a MyISAM table's older count until it is
// repaired, and counts cannot say which rows came from where anyway.
func (l *loader) reloadUnproven(ctx context.Context) error {
	if !l.job.Resume || !l.fromBackup() {
		return nil // a load from a dump resumes by table (replaceTables, keep)
	}
	for _, t := range l.tables {
		if t.data == nil || t.transactional {
			continue
		}
		why, err := l.unproven(ctx, t)
		if err != nil {
			return err
		}
		if why == "" {
			continue
		}
		// Dropped and created again rather than truncated: that works on a
		// table the crash left marked as crashed, and on a system-versioned
		// one. Its keys, triggers and grants come back in later phases, which
		// a resumed load runs again.
		if _, err := l.ddl.ExecContext(ctx, "DROP TABLE "+t.qname()); err != nil {
			return fmt.Errorf("reload %s: %w", t, err)
		}
		if err := schema.CreateTable(ctx, l.ddl, t.db, t.src, t.base); err != nil {
			return fmt.Errorf("reload %s: %w", t, err)
		}
		// After the table is emptied: a crash in between leaves journaled
		// files whose rows are gone, which the count check finds next time.
		ids := make([]any, 0, len(t.data.Chunks)+1)
		ids = append(ids, l.job.ID)
		for _, ch := range t.data.Chunks {
			ids = append(ids, ch.ID)
			delete(l.done, ch.ID)
			delete(l.started, ch.ID)
		}
		for _, table := range []string{"journal", "started"} {
			if len(t.data.Chunks) == 0 {
				break // an empty table: no data file, no journal row
			}
			q := "DELETE FROM " + qualified(journalDB, table) + " WHERE backup = ? AND chunk IN (?" + strings.Repeat(", ?", len(t.data.Chunks)-1) + ")"
			if _, err := l.ddl.ExecContext(ctx, q, ids...); err != nil {
				return fmt.Errorf("reload %s: load journal: %w", t, err)
			}
		}
		l.res.Reloaded = append(l.res.Reloaded, fmt.Sprintf("table %s (%s) reloaded from scratch: %s", t, t.engine, why))
	}
	return nil
}

// unproven says why the rows of non-transactional table t cannot be
// proven to be exactly those of its journaled data files, or "".
func (l *loader) unproven(ctx context.Context, t *target) (string, error) {
	var want int64
	for _, ch := range t.data.Chunks {
		if l.started[ch.ID] && !l.done[ch.ID] {
			return "rows of an interrupted data file cannot be told apart", nil
		}
		if l.done[ch.ID] {
			want += ch.Rows
		}
	}
	from := t.qname()
	if t.src.Versioned {
		from += " FOR SYSTEM_TIME ALL" // the data files hold history rows too
	}
	var n int64
	err := l.ddl.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+from).Scan(&n)
	var me *mysql.MySQLError
	switch {
	case errors.As(err, &me) && crashedTable[me.Number]:
		return "the server says it is crashed (" + me.Message + ")", nil
	case err != nil:
		return "", fmt.Errorf("table %s: count rows: %w", t, err)
	case n != want:
		return fmt.Sprintf("it holds %d rows where its loaded data files have %d", n, want), nil
	}
	return "", nil
}

// crashedTable holds the errors for a table that needs a repair: the
// storage engine's own (HA_ERR_CRASHED, HA_ERR_WRONG_IN_RECORD,
// HA_ERR_CRASHED_ON_REPAIR, HA_ERR_CRASHED_ON_USAGE), which the server
// passes on as they are, and the server's (ER_NOT_KEYFILE,
// ER_CRASHED_ON_USAGE, ER_CRASHED_ON_REPAIR).
var crashedTable = map[uint16]bool{126: true, 127: true, 144: true, 145: true, 1034: true, 1194: true, 1195: true}

// loadBackup reads every stream of the backup (checking all of it) and
// loads the data files the load wants.
func (l *loader) loadBackup(ctx context.Context) error {
	if l.job.Progress != nil {
		l.job.Progress.Stage("loading")
	}
	for _, f := range l.byPath {
		if l.done[f.chunk.ID] {
			l.res.Skipped++
		} else {
			f.t.left++
		}
	}
	if tr := l.job.Progress; tr != nil {
		// Every stream is read (and checked) whatever the filters pick.
		tr.SetTotal(l.job.Manifest.Stats.StoredBytes)
		tr.SetTables(int64(len(l.tables)))
	}
	for _, t := range l.tables {
		t.all = true // the catalog lists every data file
		if t.settle() {
			if err := l.tableLoaded(ctx, l.ddl, t); err != nil {
				return err
			}
		}
	}
	return l.loadData(ctx, 2*l.job.Parallel+len(l.job.Manifest.Streams), func(ctx context.Context, files *fileQueue) error {
		return archive.Read(ctx, archive.ReadOptions{
			Input: l.job.Input, Manifest: l.job.Manifest, Counter: counterOf(l.job.Progress),
			Sink: &loadSink{l: l, files: files}, Memory: l.job.Memory,
		})
	})
}

// loadData loads the data files feed puts into a queue of at most queue
// files through Parallel connections, until feed returns.
func (l *loader) loadData(ctx context.Context, queue int, feed func(context.Context, *fileQueue) error) error {
	g, gctx := errgroup.WithContext(ctx)
	files := newFileQueue(gctx, queue)
	for range l.job.Parallel {
		g.Go(func() error {
			c, err := l.conn(gctx)
			if err != nil {
				return err
			}
			defer c.Close()
			for f := files.take(); f != nil; f = files.take() {
				err := l.loadFile(gctx, c, f)
				files.done(f.t, err == nil)
				if err != nil {
					return err
				}
			}
			return context.Cause(gctx)
		})
	}
	g.Go(func() error {
		defer files.close()
		return feed(gctx, files)
	})
	return g.Wait()
}

// tableLoaded says table t is loaded: to the progress display, and for a
// load from a dump in the journal, on c. The caller holds c, or passes
// the pool (l.db) when it holds no connection of it: taking a second one
// while holding the first could wait for ever on a full pool.
func (l *loader) tableLoaded(ctx context.Context, c execQuerier, t *target) error {
	if tr := l.job.Progress; tr != nil {
		tr.TableDone()
	}
	if l.fromBackup() || t.data == nil {
		return nil
	}
	return l.journalComplete(ctx, c, t)
}

// loadSink gathers each wanted data file from its stream and hands it to
// the loaders once complete.
type loadSink struct {
	l     *loader
	files *fileQueue
}

func (s *loadSink) Chunk(c *xbstream.Chunk) error {
	f := s.l.byPath[c.Path]
	if f == nil || s.l.done[f.chunk.ID] {
		return nil
	}
	switch c.Type {
	case xbstream.TypePayload:
		if f.buf == nil {
			f.buf = make([]byte, 0, f.chunk.Bytes)
		}
		f.buf = append(f.buf, c.Payload...)
	case xbstream.TypeEOF:
		return s.files.put(f)
	default:
		return fmt.Errorf("unexpected %s chunk in a logical backup", c.Type)
	}
	return nil
}

// loadFile loads one data file in one transaction with its journal row,
// after checking it against the manifest's digest (and then masking it,
// when asked) and its row count against the catalog's.
func (l *loader) loadFile(ctx context.Context, c *sql.Conn, f *loadFile) error {
	data := f.buf
	f.buf = nil
	where := fmt.Sprintf("%s: table %s: data file %s", l.name, f.t, f.chunk.Path)
	if int64(len(data)) != f.chunk.Bytes {
		return archive.Corruptf("%s: %d bytes, the catalog says %d", where, len(data), f.chunk.Bytes)
	}
	// A file of a dump comes straight from the source; one of a backup
	// is checked against what the manifest says.
	if l.fromBackup() {
		if err := archive.CheckDigest(data, f.digest); err != nil {
			return archive.Corruptf("%s: %v", where, err)
		}
	}
	load := data
	if f.t.masks != nil {
		var err error
		if load, err = maskData(data, f.t.masks); err != nil {
			return fmt.Errorf("%s: mask: %w", where, err)
		}
	}
	// The driver's reader names are global to the process, which may run
	// two loads of one backup at once (into two servers).
	name := fmt.Sprintf("backstream-%s-%d-%d", l.job.ID, f.chunk.ID, readerSeq.Add(1))
	mysql.RegisterReaderHandler(name, func() io.Reader { return bytes.NewReader(load) })
	defer mysql.DeregisterReaderHandler(name)
	if !f.t.transactional {
		// Autocommitted, so a deadlock rolled back this row alone.
		if err := withRetries(func() error { return l.journal(ctx, c, "started", f.chunk.ID) }); err != nil {
			return fmt.Errorf("%s: journal: %w", where, err)
		}
	}
	var n int64
	var err error
	if f.t.transactional {
		// InnoDB may pick the transaction as a deadlock victim; it rolled
		// back whole, journal row included, so it can run again.
		err = withRetries(func() error {
			var err error
			n, err = l.loadTx(ctx, c, f, name, where)
			return err
		})
	} else {
		n, err = l.loadAlone(ctx, c, f, name, where)
	}
	if err != nil {
		return err
	}
	l.resMu.Lock()
	l.res.Chunks++
	l.res.Rows += n
	l.res.Bytes += int64(len(data))
	l.resMu.Unlock()
	if tr := l.job.Progress; tr != nil {
		tr.AddRows(n)
		if !l.fromBackup() {
			tr.Out(int64(len(data))) // the dump counts them in
		}
	}
	f.t.mu.Lock()
	f.t.left--
	loaded := f.t.settle()
	f.t.mu.Unlock()
	if loaded {
		return l.tableLoaded(ctx, c, f.t)
	}
	return nil
}

// readerSeq makes LOAD DATA reader names unique in the process.
var readerSeq atomic.Int64

// loadTx runs the LOAD DATA of one file and its journal row in one
// transaction and returns the rows loaded.
func (l *loader) loadTx(ctx context.Context, c *sql.Conn, f *loadFile, name, where string) (int64, error) {
	tx, err := c.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	n, err := l.loadRows(ctx, tx, f, name, where)
	if err != nil {
		return 0, err
	}
	if err := l.journal(ctx, tx, "journal", f.chunk.ID); err != nil {
		return 0, fmt.Errorf("%s: journal: %w", where, err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("%s: commit: %w", where, err)
	}
	return n, nil
}

// loadAlone loads one file of a non-transactional table, whose rows stay
// whatever happens: the LOAD DATA once (run again it would repeat them; a
// resumed load reloads such a table instead, see reloadUnproven), then
// its journal row on its own, retried if InnoDB picks it as a deadlock
// victim among the loaders' journal rows.
func (l *loader) loadAlone(ctx context.Context, c *sql.Conn, f *loadFile, name, where string) (int64, error) {
	n, err := l.loadRows(ctx, c, f, name, where)
	if err != nil {
		return 0, err
	}
	if err := withRetries(func() error { return l.journal(ctx, c, "journal", f.chunk.ID) }); err != nil {
		return 0, fmt.Errorf("%s: journal: %w", where, err)
	}
	return n, nil
}

// execQuerier is a connection or a transaction.
type execQuerier interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

// loadRows runs the LOAD DATA of one file on q and checks the rows it
// took against the catalog's count.
func (l *loader) loadRows(ctx context.Context, q execQuerier, f *loadFile, name, where string) (int64, error) {
	// Concatenated, not formatted: names in f.t.load may hold a %.
	res, err := q.ExecContext(ctx, "LOAD DATA LOCAL INFILE 'Reader::"+name+f.t.load)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", where, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	if n != f.chunk.Rows {
		return 0, fmt.Errorf("%s: loaded %d rows, the data file has %d%s", where, n, f.chunk.Rows, loadWarnings(ctx, q))
	}
	return n, nil
}

// withRetries runs fn up to 4 times while InnoDB rolls it back as a
// deadlock victim or after a lock wait timeout: the rolled-back statement
// or transaction can simply run again.
func withRetries(fn func() error) error {
	for attempt := 1; ; attempt++ {
		err := fn()
		var me *mysql.MySQLError
		if err == nil || attempt == 4 || !errors.As(err, &me) || (me.Number != 1213 && me.Number != 1205) {
			return err
		}
	}
}

// addKeys adds every table's secondary indexes (one ALTER per table, up to
// Parallel at once), then the foreign keys, which may need other tables'
// indexes.
func (l *loader) addKeys(ctx context.Context) error {
	for _, pick := range []func(*target) string{
		func(t *target) string {
			// A table this run created with its indexes has them; one an
			// earlier run created (a resumed load, perhaps by a version
			// that created every table without them) gets any it lacks:
			// ADD KEY IF NOT EXISTS adds nothing twice.
			if t.inlineIndexes && !t.existed {
				return ""
			}
			return t.addIndexes
		},
		func(t *target) string { return t.addForeign },
	} {
		var alter []*target
		for _, t := range l.tables {
			if pick(t) != "" {
				alter = append(alter, t)
			}
		}
		err := l.shareOut(ctx, len(alter), func(ctx context.Context, c *sql.Conn, next func() (int, bool)) error {
			for i, ok := next(); ok; i, ok = next() {
				if err := schema.AlterTable(ctx, c, alter[i].db, alter[i].src, pick(alter[i])); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// createObjects restores sequence values and creates the objects that
// read tables: routines first (a view may call a function; a routine's body
// is not resolved when it is created), then views in dependency order,
// triggers and events, then accounts when asked for. An object that refers
// to something the load does not restore is left out and reported; so is
// every routine and event when tables are picked one by one (what their
// bodies read is not known).
func (l *loader) createObjects(ctx context.Context) error {
	for _, t := range l.tables {
		if t.src.Sequence {
			if err := schema.RestoreSequence(ctx, l.ddl, t.db, t.src); err != nil {
				return err
			}
		}
	}
	tableFiltered := len(l.job.Filter.Tables) > 0
	r := restored{dbs: map[string]bool{}, objects: map[string]bool{}, catalogDBs: map[string]bool{}}
	for _, d := range l.job.Catalog.Schema.Databases {
		r.catalogDBs[d.Name] = true
	}
	for _, d := range l.dbs {
		r.dbs[d.Name] = true
	}
	for _, t := range l.tables {
		r.objects[objectKey("table", t.src.Name, t.srcDB)] = true
	}
	create := func(db string, o *schema.Object) error {
		if err := schema.CreateObject(ctx, l.ddl, l.targetDB(db), o, l.job.Rename, l.job.Definer); err != nil {
			return err
		}
		kind := o.Kind
		if kind == schema.KindView {
			kind = "table" // grants name views as tables
		}
		r.objects[objectKey(kind, o.Name, db)] = true
		return nil
	}
	leave := func(db string, o *schema.Object, why string) {
		l.res.LeftOut = append(l.res.LeftOut, fmt.Sprintf("%s %s.%s: %s", o.Kind, db, o.Name, why))
	}
	if !l.job.Skip.Routines {
		for _, d := range l.dbs {
			for _, o := range d.Routines {
				if tableFiltered {
					leave(d.Name, o, "tables are picked one by one (--table), and what a routine reads is not known")
					continue
				}
				if err := create(d.Name, o); err != nil {
					return err
				}
			}
		}
	}
	if !l.job.Skip.Views {
		for _, v := range l.job.Catalog.Schema.OrderedViews() {
			db, o := v.Database.Name, v.Object
			if !r.dbs[db] {
				continue
			}
			if !l.job.Filter.Table(db, o.Name) {
				leave(db, o, "not picked by the filters")
				continue
			}
			var missing []string
			for _, ref := range l.job.Catalog.Schema.ViewReads(db, o) {
				if !r.objects[objectKey("table", ref[1], ref[0])] {
					missing = append(missing, ref[0]+"."+ref[1])
				}
			}
			if len(missing) > 0 {
				leave(db, o, "reads "+strings.Join(missing, ", ")+", which this restore leaves out")
				continue
			}
			if err := create(db, o); err != nil {
				return err
			}
		}
	}
	for _, d := range l.dbs {
		if !l.job.Skip.Triggers {
			for _, o := range d.Triggers {
				if !r.objects[objectKey("table", o.Table, d.Name)] {
					leave(d.Name, o, "its table "+d.Name+"."+o.Table+" is left out")
					continue
				}
				if err := create(d.Name, o); err != nil {
					return err
				}
			}
		}
		if !l.job.Skip.Events {
			for _, o := range d.Events {
				if tableFiltered {
					leave(d.Name, o, "tables are picked one by one (--table), and what an event runs is not known")
					continue
				}
				if err := create(d.Name, o); err != nil {
					return err
				}
			}
		}
	}
	if !l.job.Users || l.job.Skip.Users {
		return nil
	}
	return l.createAccounts(ctx, &r)
}

// restored is what a load restores, under source names, for deciding
// which grants and objects refer only to restored things.
type restored struct {
	dbs, catalogDBs map[string]bool
	objects         map[string]bool // objectKey: tables, sequences and views as "table"; routines by kind
}

func objectKey(kind, name, db string) string { return kind + "\x00" + db + "\x00" + name }

// grantRestorable reports whether a grant refers only to restored
// objects: a table, view or routine grant to one this load creates, a
// database grant to a database the backup holds only if the load restores
// it (other names, patterns included, are kept). Global grants, role grants
// and proxies name no object.
func (r *restored) grantRestorable(g string) (string, bool) {
	o, ok := schema.ParseGrant(g)
	if !ok {
		return "", true // the server will say what is wrong with it
	}
	switch o.Level {
	case schema.GrantDatabase:
		return o.String(), !r.catalogDBs[o.Database] || r.dbs[o.Database]
	case schema.GrantTable:
		return o.String(), r.objects[objectKey("table", o.Name, o.Database)]
	case schema.GrantRoutine:
		return o.String(), r.objects[objectKey(o.Kind, o.Name, o.Database)]
	}
	return "", true
}

// createAccounts creates the backup's accounts and the grants that refer
// only to restored objects.
func (l *loader) createAccounts(ctx context.Context, r *restored) error {
	ours, err := l.journaledAccounts(ctx)
	if err != nil {
		return err
	}
	res, err := schema.ApplyAccounts(ctx, l.ddl, l.job.Catalog.Schema.Users, schema.AccountOptions{
		Rename:  l.job.Rename,
		Replace: l.job.ReplaceUsers,
		Ours:    func(a *schema.Account) bool { return ours[a.String()] },
		Created: func(a *schema.Account) error {
			_, err := l.ddl.ExecContext(ctx, "INSERT IGNORE INTO "+qualified(journalDB, "accounts")+" (backup, account) VALUES (?, ?)", l.job.ID, a.String())
			return err
		},
		Grant: func(a *schema.Account, g string) bool {
			what, ok := r.grantRestorable(g)
			if !ok {
				l.res.LeftOut = append(l.res.LeftOut, fmt.Sprintf("grant on %s to %s: %s is left out", what, a, what))
			}
			return ok
		},
	})
	names := func(as []*schema.Account) []string {
		var out []string
		for _, a := range as {
			out = append(out, a.String())
		}
		return out
	}
	l.res.CreatedAccounts, l.res.ReplacedAccounts, l.res.KeptAccounts = names(res.Created), names(res.Replaced), names(res.Kept)
	for _, a := range append(append([]*schema.Account{}, res.Created...), res.Replaced...) {
		if a.Passwordless() {
			l.res.Passwordless = append(l.res.Passwordless, a.String())
		}
	}
	return err
}

// loadWarnings is what the server said about the LOAD DATA just run on q
// (LOCAL turns its errors into warnings), for an error message: the first
// few of SHOW WARNINGS, or nothing.
func loadWarnings(ctx context.Context, q execQuerier) string {
	rows, err := q.QueryContext(ctx, "SHOW WARNINGS LIMIT 3")
	if err != nil {
		return ""
	}
	defer rows.Close()
	var said []string
	for rows.Next() {
		var level, msg string
		var code int
		if rows.Scan(&level, &code, &msg) == nil {
			said = append(said, fmt.Sprintf("%s %d: %s", level, code, msg))
		}
	}
	if len(said) == 0 {
		return ""
	}
	return " (the server said: " + strings.Join(said, "; ") + ")"
}

// historyToLoad names the tables whose history the load must insert:
// system-versioned ones dumped with it.
func historyToLoad(tables []*target) []string {
	var out []string
	for _, t := range tables {
		if t.src.Versioned && !t.src.HistoryLeftOut {
			out = append(out, t.db+"."+t.name)
		}
	}
	return out
}
