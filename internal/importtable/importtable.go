// Package importtable restores single InnoDB tables from a physical
// backup into a running server on this host, beside or instead of nothing
// (a dropped table), without touching its other tables: the backup (or
// its chain) is restored and prepared in a work directory, a throwaway
// server there gives each table's definition and exports its tablespace
// (FLUSH TABLES ... FOR EXPORT), and the target creates the table, discards
// its empty tablespace, takes the exported files into its datadir and
// imports them (ALTER TABLE ... IMPORT TABLESPACE), then rebuilds the
// table (ALTER TABLE ... FORCE) so that later physical backups hold it
// (see importOne). Each imported table's CHECKSUM TABLE must equal the
// backup's, or the command fails. ParseTables reads the tables as they are
// named.
package importtable

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/mariadb"
	"github.com/backstream/backstream/internal/repo"
	"github.com/backstream/backstream/internal/restore"
	"github.com/backstream/backstream/internal/restoredserver"
	"github.com/backstream/backstream/internal/sandbox"
	"github.com/backstream/backstream/internal/scratch"
)

// Table names a table to restore and the name it takes on the target.
type Table struct {
	DB, Name     string // in the backup
	AsDB, AsName string // on the target
}

func (t Table) String() string { return t.DB + "." + t.Name }

// As is the name on the target, db.table.
func (t Table) As() string { return t.AsDB + "." + t.AsName }

// ParseTables reads the tables to import as restore is asked for them:
// names (db.table, one or more) and as (db.table, the new name of the one
// table named; "" keeps the names). What cannot be read is a
// *restore.RefusedError.
func ParseTables(names []string, as string) ([]Table, error) {
	if as != "" && len(names) != 1 {
		return nil, refusedf("--as names one table: give one --table with it")
	}
	var out []Table
	for _, n := range names {
		db, name, ok := strings.Cut(n, ".")
		if !ok || db == "" || name == "" {
			return nil, refusedf("table %q: give it as database.table", n)
		}
		t := Table{DB: db, Name: name, AsDB: db, AsName: name}
		if as != "" {
			if t.AsDB, t.AsName, ok = strings.Cut(as, "."); !ok || t.AsDB == "" || t.AsName == "" {
				return nil, refusedf("--as %q: give it as database.table", as)
			}
		}
		for _, o := range out {
			if o.As() == t.As() {
				return nil, refusedf("table %s is named twice", t.As())
			}
		}
		out = append(out, t)
	}
	return out, nil
}

func refusedf(format string, a ...any) error {
	return &restore.RefusedError{Err: fmt.Errorf(format, a...)}
}

// Job is one import of Tables, and of every table of Databases, from
// Backup into the server Conn reaches.
type Job struct {
	Repo      *repo.Repo
	Backup    *archive.Manifest
	Tables    []Table
	Databases []string
	Conn      mariadb.Config
	WorkDir   string // where the backup is restored, in a subdirectory removed at the end; "" for the process's scratch directory
	// ServerDefaults and Restore are as for a restore test's server: the
	// option file read after backup-my.cnf, and how the chain is prepared.
	ServerDefaults string
	Restore        restore.Options
	// NoBinlog imports with sql_log_bin=0, on a target that writes a
	// binary log: the table then exists on that server only. Without it
	// such a target is refused, since its replicas would replay the
	// DISCARD and IMPORT without the tablespace files.
	NoBinlog bool
}

// Imported is one table imported, with its checksum (equal on both sides)
// and its triggers: created with it, or, for a table imported under
// another name (whose triggers would clash with the original's), named
// in Skipped, not created; so are its foreign keys under another name
// (ForeignKeys), whose constraint names would clash too.
type Imported struct {
	Table       Table
	Checksum    int64
	Triggers    []string
	Skipped     []string
	ForeignKeys []string
}

// Run imports job's tables. Nothing changes on the target before the
// backup is restored and every table found in it as an InnoDB table the
// target can take; a failure after that names the table it hit.
func Run(ctx context.Context, job Job) ([]Imported, error) {
	if err := checkJob(job); err != nil {
		return nil, err
	}
	target, err := mariadb.Open(ctx, job.Conn, "")
	if err != nil {
		return nil, err
	}
	defer target.Close()
	datadir, err := checkTarget(ctx, target, job.Conn, job.Backup, job.NoBinlog)
	if err != nil {
		return nil, err
	}
	for _, t := range job.Tables {
		if err := checkAbsent(ctx, target, t); err != nil {
			return nil, err
		}
	}
	for _, d := range job.Databases {
		if err := checkAbsent(ctx, target, Table{AsDB: d}); err != nil {
			return nil, err
		}
	}
	srv, restored, done, err := startRestored(ctx, job)
	if err != nil {
		return nil, err
	}
	defer done()
	src := srv.DB()
	tables, defs, err := definitions(ctx, src, target, job)
	if err != nil {
		return nil, err
	}
	var out []Imported
	for i, t := range tables {
		def, fks := defs[i], []string(nil)
		if t.AsDB != t.DB || t.AsName != t.Name {
			// Beside the original, a constraint's name would clash (it is
			// unique in a database), and elsewhere the copy would hold
			// live constraints on the original's parent tables.
			def, fks = withoutForeignKeys(def)
		}
		imp, err := importOne(ctx, src, target, t, def, restored, datadir, job.NoBinlog)
		if err != nil {
			return out, fmt.Errorf("table %s (as %s): %w", t, t.As(), err)
		}
		imp.ForeignKeys = fks
		out = append(out, imp)
	}
	return out, nil
}

// checkJob refuses, before anything is opened, what no import can do.
func checkJob(job Job) error {
	m := job.Backup
	if err := CheckNames(job.Tables); err != nil {
		return err
	}
	for _, d := range job.Databases {
		if !plainName.MatchString(d) {
			return &restore.RefusedError{Err: fmt.Errorf("database %q has characters other than letters, digits and _, which the server encodes in file names; importing its tables is not supported: restore the backup with --target-dir and copy them from there", d)}
		}
	}
	if m.Kind != archive.KindPhysical {
		return &restore.RefusedError{Err: fmt.Errorf("backup %s is a %s backup; --table with --apply-to imports tables from a physical backup (a logical one loads with --table alone)", m.ID, m.Kind)}
	}
	return nil
}

// startRestored restores what the import needs of job.Backup (its chain)
// into a work directory, prepared, and starts a throwaway server there;
// done stops it and removes the work directory.
func startRestored(ctx context.Context, job Job) (srv *sandbox.Server, restored string, done func(), err error) {
	links, err := restore.Links(ctx, job.Repo, job.Backup)
	if err != nil {
		return nil, "", nil, err
	}
	opts, err := restoredserver.ServerOptions(ctx, job.Repo, links, job.ServerDefaults, job.Restore.FileKey)
	if err != nil {
		return nil, "", nil, err
	}
	mariadbd, err := restoredserver.FindServer(ctx, job.Restore.MariadbPath, job.Backup.Server.Version)
	if err != nil {
		return nil, "", nil, err
	}
	if job.WorkDir == "" {
		if job.WorkDir, err = scratch.Dir(); err != nil {
			return nil, "", nil, err
		}
	}
	work, err := os.MkdirTemp(job.WorkDir, "backstream-import-*")
	if err != nil {
		return nil, "", nil, err
	}
	restored = filepath.Join(work, "datadir")
	opt := job.Restore
	// The work directory is scratch: what the target imports, it makes
	// durable itself.
	opt.Prepare, opt.DataDirs, opt.Placed, opt.KeepLinkFiles, opt.NoSync = true, nil, nil, false, true
	opt.Files = Needed(job.Tables, job.Databases)
	if renamesDuringBackup(links) {
		// Which table a rename file (<old>.ren, naming the new) makes is
		// known only once prepare applied it: everything is restored.
		opt.Files = nil
	}
	if err = restore.Datadir(ctx, restore.Job{Links: links, TargetDir: restored, Options: opt}); err == nil {
		srv, err = restoredserver.Start(ctx, restoredserver.Options{Dir: filepath.Join(work, "server"), Datadir: restored, UseMemory: opt.UseMemory, Server: mariadbd, Options: opts})
	}
	if err != nil {
		os.RemoveAll(work)
		return nil, "", nil, err
	}
	return srv, restored, func() { srv.Close(); os.RemoveAll(work) }, nil
}

// definitions lists the tables to import, job's and those of its
// databases, with each one's CREATE TABLE in the backup.
func definitions(ctx context.Context, src, target *sql.DB, job Job) ([]Table, []string, error) {
	tables := job.Tables
	for _, d := range job.Databases {
		more, err := databaseTables(ctx, src, target, d, job.Backup)
		if err != nil {
			return nil, nil, err
		}
		tables = append(tables, more...)
	}
	defs := make([]string, len(tables))
	for i, t := range tables {
		var err error
		if defs[i], err = definition(ctx, src, t, job.Backup); err != nil {
			return nil, nil, err
		}
	}
	return tables, defs, nil
}

// databaseTables lists the base tables of database d in the restored
// backup, each to be imported under its name: the target must have none
// of them, and all must be InnoDB (a table of another engine is refused,
// naming it, before anything changes).
func databaseTables(ctx context.Context, src, target *sql.DB, d string, m *archive.Manifest) ([]Table, error) {
	rows, err := src.QueryContext(ctx, "SELECT table_name, COALESCE(engine, '') FROM information_schema.tables WHERE table_schema = ? AND table_type = 'BASE TABLE' ORDER BY table_name", d)
	if err != nil {
		return nil, fmt.Errorf("the restored backup: %w", err)
	}
	defer rows.Close()
	var out []Table
	var other []string
	for rows.Next() {
		var name, engine string
		if err := rows.Scan(&name, &engine); err != nil {
			return nil, fmt.Errorf("the restored backup: %w", err)
		}
		if !strings.EqualFold(engine, "InnoDB") {
			other = append(other, name+" ("+engine+")")
		}
		out = append(out, Table{DB: d, Name: name, AsDB: d, AsName: name})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("the restored backup: %w", err)
	}
	switch {
	case len(other) > 0:
		return nil, &restore.RefusedError{Err: fmt.Errorf("database %s of backup %s holds tables that are not InnoDB: %s; only InnoDB tablespaces import into a running server: import the InnoDB ones with --table, or restore the backup with --target-dir", d, m.ID, strings.Join(other, ", "))}
	case len(out) == 0:
		return nil, &restore.RefusedError{Err: fmt.Errorf("backup %s has no tables in database %s", m.ID, d)}
	}
	if err := CheckNames(out); err != nil {
		return nil, err
	}
	for _, t := range out {
		if err := checkAbsent(ctx, target, t); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Needed reports whether a file of a physical backup (a path as the
// manifest lists it) is needed to import tables: the files at the top of
// the datadir (the system tablespace, undo and redo logs, Aria's logs,
// mariabackup's metadata), the mysql schema the throwaway server starts
// on, and each table's own files: <name>.frm, .ibd, .cfg, .par, those of
// its partitions (<name>#P#<p>.ibd), an increment's .delta and .meta of
// each, what mariabackup made of it when DDL ran during the backup
// (<name>.new, .del), its database's db.opt, and the triggers' name files
// there (<trigger>.TRN; the table's .TRG lists its triggers). The other tables'
// tablespaces are left out: prepare and the server take them as absent.
func Needed(tables []Table, databases []string) func(path string) bool {
	return func(p string) bool {
		db, name, ok := strings.Cut(p, "/")
		if !ok || db == "mysql" || slices.Contains(databases, db) {
			return true
		}
		if strings.Contains(name, "/") {
			return false
		}
		stem, rest := name, ""
		if i := strings.IndexAny(name, ".#"); i >= 0 {
			stem, rest = name[:i], name[i:]
		}
		for _, t := range tables {
			switch {
			case db != t.DB:
			case name == "db.opt" || strings.HasSuffix(name, ".TRN"):
				// A trigger's name file: which table's it is, the
				// table's .TRG says.
				return true
			case stem == t.Name && (strings.HasPrefix(rest, ".") || strings.HasPrefix(rest, "#P#") || strings.HasPrefix(rest, "#p#")):
				return true
			}
		}
		return false
	}
}

// renamesDuringBackup reports whether a link of the chain holds a
// mariabackup rename file: a table renamed while the backup ran.
func renamesDuringBackup(links []restore.Link) bool {
	for _, l := range links {
		for _, f := range l.Manifest.Files {
			if strings.HasSuffix(f.Path, ".ren") {
				return true
			}
		}
	}
	return false
}

// checkTarget refuses a target that cannot import the backup's
// tablespaces, and returns its datadir: it must run on this host (the
// files are placed in its datadir) and be of the backup's major.minor.
func checkTarget(ctx context.Context, db *sql.DB, conn mariadb.Config, m *archive.Manifest, noBinlog bool) (string, error) {
	if !conn.UsesSocket() && !isLoopback(conn.Host) {
		return "", &restore.RefusedError{Err: fmt.Errorf("the target %s is reached over the network: importing a tablespace places its files in the server's datadir, so the server must run on this host (connect through --socket, or to 127.0.0.1)", conn)}
	}
	var version, datadir, wsrep string
	var logBin bool
	if err := db.QueryRowContext(ctx, `SELECT @@version, @@datadir, @@log_bin,
		COALESCE((SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES WHERE VARIABLE_NAME = 'WSREP_ON'), 'OFF')`).Scan(&version, &datadir, &logBin, &wsrep); err != nil {
		return "", fmt.Errorf("the target server: %w", err)
	}
	switch {
	case strings.EqualFold(wsrep, "ON"):
		return "", &restore.RefusedError{Err: errors.New("the target is a Galera node (wsrep_on): the cluster would replicate the DISCARD and IMPORT to nodes that lack the tablespace files; restore the backup with --target-dir and load the table from there")}
	case logBin && !noBinlog:
		return "", &restore.RefusedError{Err: errors.New("the target writes a binary log: its replicas would replay the DISCARD and IMPORT without the tablespace files and stop; give --no-binlog to import on this server only (then bring the table to the replicas yourself)")}
	}
	bMajor, bMinor, _, err := mariadb.ParseVersion(m.Server.Version)
	if err != nil {
		return "", fmt.Errorf("backup %s: server version %q: %w", m.ID, m.Server.Version, err)
	}
	tMajor, tMinor, _, err := mariadb.ParseVersion(version)
	if err != nil {
		return "", fmt.Errorf("the target's version %q: %w", version, err)
	}
	if bMajor != tMajor || bMinor != tMinor {
		return "", &restore.RefusedError{Err: fmt.Errorf("backup %s is of MariaDB %s, the target runs %s: a tablespace imports only into the same major.minor", m.ID, m.Server.Version, version)}
	}
	if _, err := os.Stat(filepath.Join(datadir, "mysql")); err != nil {
		return "", &restore.RefusedError{Err: fmt.Errorf("the target's datadir %s is not on this host (%v): the server must run here", datadir, err)}
	}
	return datadir, nil
}

func isLoopback(host string) bool {
	return host == "127.0.0.1" || host == "::1" || host == "localhost"
}

// checkAbsent refuses a table the target has, and a database it lacks
// (t.AsName empty: the database alone).
func checkAbsent(ctx context.Context, db *sql.DB, t Table) error {
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = ?", t.AsDB).Scan(&n); err != nil {
		return fmt.Errorf("the target server: %w", err)
	}
	if n == 0 {
		what := ""
		if t.AsName != "" {
			what = " for table " + t.As()
		}
		return &restore.RefusedError{Err: fmt.Errorf("the target has no database %s%s: create it first (a restore of a table creates nothing else)", t.AsDB, what)}
	}
	if t.AsName == "" {
		return nil // a database whose tables are not known yet
	}
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = ? AND table_name = ?", t.AsDB, t.AsName).Scan(&n); err != nil {
		return fmt.Errorf("the target server: %w", err)
	}
	if n > 0 {
		return &restore.RefusedError{Err: fmt.Errorf("the target already has table %s: restore beside it with --as %s.%s_restored, or drop it first; a restore never replaces a table", t.As(), t.AsDB, t.AsName)}
	}
	return nil
}

// definition is the table's CREATE TABLE in the backup, for the target's
// name; tables it cannot import are refused, naming why.
func definition(ctx context.Context, src *sql.DB, t Table, m *archive.Manifest) (string, error) {
	var engine sql.NullString
	err := src.QueryRowContext(ctx, "SELECT engine FROM information_schema.tables WHERE table_schema = ? AND table_name = ? AND table_type = 'BASE TABLE'", t.DB, t.Name).Scan(&engine)
	if errors.Is(err, sql.ErrNoRows) {
		return "", &restore.RefusedError{Err: fmt.Errorf("backup %s has no table %s", m.ID, t)}
	}
	if err != nil {
		return "", fmt.Errorf("the restored backup: %w", err)
	}
	if !strings.EqualFold(engine.String, "InnoDB") {
		return "", &restore.RefusedError{Err: fmt.Errorf("table %s is %s in backup %s: only InnoDB tablespaces import into a running server; restore the backup with --target-dir and copy the table from there", t, engine.String, m.ID)}
	}
	var name, create string
	if err := src.QueryRowContext(ctx, "SHOW CREATE TABLE "+quoteTable(t.DB, t.Name)).Scan(&name, &create); err != nil {
		return "", fmt.Errorf("the restored backup: SHOW CREATE TABLE %s: %w", t, err)
	}
	if dataDirectory.MatchString(create) {
		return "", &restore.RefusedError{Err: fmt.Errorf("table %s was created with DATA DIRECTORY: its import would need its files outside the target's datadir; restore the backup with --target-dir instead", t)}
	}
	prefix := "CREATE TABLE " + mariadb.QuoteIdent(t.Name) + " "
	if !strings.HasPrefix(create, prefix) {
		return "", fmt.Errorf("the restored backup: SHOW CREATE TABLE %s does not start as expected: %.60q", t, create)
	}
	return "CREATE TABLE " + quoteTable(t.AsDB, t.AsName) + " " + create[len(prefix):], nil
}

// foreignKeyLine is a FOREIGN KEY constraint of SHOW CREATE TABLE, one a
// line; its name is the submatch.
var foreignKeyLine = regexp.MustCompile("^\\s*CONSTRAINT (`(?:[^`]|``)*`) FOREIGN KEY .*$")

// withoutForeignKeys removes the FOREIGN KEY constraints from a CREATE
// TABLE of SHOW CREATE TABLE (their indexes stay) and names them.
func withoutForeignKeys(def string) (string, []string) {
	lines := strings.Split(def, "\n")
	var kept, fks []string
	for _, l := range lines {
		if m := foreignKeyLine.FindStringSubmatch(l); m != nil {
			fks = append(fks, strings.ReplaceAll(m[1][1:len(m[1])-1], "``", "`"))
			continue
		}
		kept = append(kept, l)
	}
	if len(fks) == 0 {
		return def, nil
	}
	// The line before the closing parenthesis ends without a comma.
	for i := 1; i < len(kept); i++ {
		if strings.HasPrefix(kept[i], ")") {
			kept[i-1] = strings.TrimSuffix(kept[i-1], ",")
		}
	}
	return strings.Join(kept, "\n"), fks
}

// fulltextLine is a FULLTEXT index of SHOW CREATE TABLE, one a line; its
// quoted name is the submatch.
var fulltextLine = regexp.MustCompile("^\\s*FULLTEXT KEY (`(?:[^`]|``)*`) ")

// fulltextIndexes names the FULLTEXT indexes of a CREATE TABLE of SHOW
// CREATE TABLE (quoted), and gives each one's definition as ALTER TABLE
// ... ADD takes it.
func fulltextIndexes(def string) (names, adds []string) {
	for _, l := range strings.Split(def, "\n") {
		if m := fulltextLine.FindStringSubmatch(l); m != nil {
			names = append(names, m[1])
			adds = append(adds, strings.TrimSuffix(strings.TrimSpace(l), ","))
		}
	}
	return names, adds
}

var dataDirectory = regexp.MustCompile(`(?i)\bDATA DIRECTORY\s*=`)

// importOne creates the table on the target, exports it from the restored
// server, imports the files and compares the checksums. A table's files
// in the restored datadir are <name>.ibd and <name>.cfg; a partitioned
// table has those of each partition, <name>#P#<p>, and the server
// discards and imports only whole non-partitioned tables: each partition
// is imported into a table of its own and exchanged into its place
// (ALTER TABLE ... EXCHANGE PARTITION), as MariaDB documents. The table is
// then rebuilt, and its checksum compared after that.
func importOne(ctx context.Context, src, target *sql.DB, t Table, def, restored, datadir string, noBinlog bool) (imp Imported, err error) {
	imp.Table = t
	want, err := checksum(ctx, src, t.DB, t.Name)
	if err != nil {
		return imp, fmt.Errorf("the restored backup: %w", err)
	}
	parts, err := partitions(ctx, src, t)
	if err != nil {
		return imp, err
	}
	triggers, err := triggersOf(ctx, src, t)
	if err != nil {
		return imp, err
	}
	tc, err := target.Conn(ctx)
	if err != nil {
		return imp, err
	}
	defer tc.Close()
	ti := &tableImport{t: t, tc: tc, asTable: quoteTable(t.AsDB, t.AsName)}
	if err := ti.create(ctx, def, noBinlog); err != nil {
		return imp, err
	}
	defer func() { err = ti.cleanup(ctx, err) }()
	if err = ti.importFiles(ctx, src, parts, restored, datadir); err != nil {
		return imp, err
	}
	if err = ti.rebuild(ctx, def); err != nil {
		return imp, err
	}
	got, err := checksum(ctx, target, t.AsDB, t.AsName)
	if err != nil {
		return imp, fmt.Errorf("the target: %w", err)
	}
	if got != want {
		return imp, archive.Corruptf("CHECKSUM TABLE on the target gives %d after the import, the backup's table %d: the import is dropped", got, want)
	}
	imp.Checksum = got
	if t.AsDB != t.DB || t.AsName != t.Name {
		// Beside the original, its triggers' names would clash, and they
		// would name the original table.
		imp.Skipped = triggers
		return imp, nil
	}
	for _, tr := range triggers {
		if err = createTrigger(ctx, src, tc, t.DB, tr); err != nil {
			return imp, err
		}
		imp.Triggers = append(imp.Triggers, tr)
	}
	return imp, nil
}

// tableImport is one table's import under way: the connection to the
// target and what the import made there, the table and the partitions'
// own tables (made) with their files (copied).
type tableImport struct {
	t       Table
	tc      *sql.Conn
	asTable string // quoted
	made    []string
	copied  []string
}

// move takes the files of one stem of the backup's table (from) into one
// table of the target (to): the table itself, or, for a partition, a
// table of its own.
type move struct{ from, to, partition string }

func (ti *tableImport) exec(ctx context.Context, what, q string) error {
	if _, err := ti.tc.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("%s on the target: %w", what, err)
	}
	return nil
}

// create creates the table on the target, from def.
func (ti *tableImport) create(ctx context.Context, def string, noBinlog bool) error {
	// Foreign keys: the imported rows are the backup's, checked there.
	// Nothing reaches a binary log (checkTarget refused one unless asked).
	session := "SET SESSION foreign_key_checks = 0"
	if noBinlog {
		session += ", sql_log_bin = 0"
	}
	if err := ti.exec(ctx, "session settings", session); err != nil {
		return err
	}
	if err := ti.exec(ctx, "creating the table", def); err != nil {
		return err
	}
	// What was made on the target goes again on failure.
	ti.made = []string{ti.asTable}
	return nil
}

// cleanup removes, when the import failed with err, what it made on the
// target, and in any case the copied .cfg files; it returns err, with
// what it could not clean up.
func (ti *tableImport) cleanup(ctx context.Context, err error) error {
	// The tables go first: a file is never unlinked under a table
	// that uses it. What a DROP leaves (a tablespace copied for a
	// table not yet imported) goes after it.
	var left []string
	if err != nil {
		for _, tbl := range ti.made {
			if _, derr := ti.tc.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+tbl); derr != nil {
				left = append(left, fmt.Sprintf("dropping %s: %v", tbl, derr))
			}
		}
	}
	for _, p := range ti.copied {
		if strings.HasSuffix(p, ".cfg") || err != nil {
			if rerr := os.Remove(p); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				left = append(left, rerr.Error())
			}
		}
	}
	if len(left) > 0 {
		err = fmt.Errorf("%w (cleaning up the target failed, check it by hand: %s)", err, strings.Join(left, "; "))
	}
	return err
}

// importFiles discards the new table's tablespace (or, partitioned, makes
// a table of its own for each partition and discards that), copies the
// files the restored server exports into the target's datadir, imports
// them and exchanges each partition into place.
func (ti *tableImport) importFiles(ctx context.Context, src *sql.DB, parts []string, restored, datadir string) error {
	t := ti.t
	moves, err := ti.discard(ctx, parts)
	if err != nil {
		return err
	}
	sc, err := src.Conn(ctx)
	if err != nil {
		return err
	}
	defer sc.Close()
	if _, err = sc.ExecContext(ctx, "FLUSH TABLES "+quoteTable(t.DB, t.Name)+" FOR EXPORT"); err != nil {
		return fmt.Errorf("exporting it from the restored backup: %w", err)
	}
	for _, mv := range moves {
		var files []string
		files, err = copyTablespace(filepath.Join(restored, t.DB), mv.from, filepath.Join(datadir, t.AsDB), mv.to)
		ti.copied = append(ti.copied, files...)
		if err != nil {
			break
		}
	}
	sc.ExecContext(ctx, "UNLOCK TABLES")
	if err != nil {
		return err
	}
	for _, mv := range moves {
		qto := quoteTable(t.AsDB, mv.to)
		if err := ti.exec(ctx, "importing the tablespace", "ALTER TABLE "+qto+" IMPORT TABLESPACE"); err != nil {
			return err
		}
		if mv.partition == "" {
			continue
		}
		if err := ti.exec(ctx, "exchanging partition "+mv.partition, "ALTER TABLE "+ti.asTable+" EXCHANGE PARTITION "+mariadb.QuoteIdent(mv.partition)+" WITH TABLE "+qto); err != nil {
			return err
		}
		if err := ti.exec(ctx, "dropping partition "+mv.partition+"'s own table", "DROP TABLE "+qto); err != nil {
			return err
		}
	}
	return nil
}

// discard makes the tables that take the backup's files, their
// tablespaces discarded, and says which files go into which.
func (ti *tableImport) discard(ctx context.Context, parts []string) ([]move, error) {
	t := ti.t
	if len(parts) == 0 {
		return []move{{from: t.Name, to: t.AsName}}, ti.exec(ctx, "discarding the empty tablespace", "ALTER TABLE "+ti.asTable+" DISCARD TABLESPACE")
	}
	var moves []move
	for i, p := range parts {
		tmp := fmt.Sprintf("%s_backstream_p%d", t.AsName, i)
		qtmp := quoteTable(t.AsDB, tmp)
		// Dropped on failure only once made here: a table of that name
		// the target already had stops the import and stays.
		if err := ti.exec(ctx, "a table for partition "+p, "CREATE TABLE "+qtmp+" LIKE "+ti.asTable); err != nil {
			return nil, err
		}
		ti.made = append(ti.made, qtmp)
		for _, q := range []string{"ALTER TABLE " + qtmp + " REMOVE PARTITIONING", "ALTER TABLE " + qtmp + " DISCARD TABLESPACE"} {
			if err := ti.exec(ctx, "a table for partition "+p, q); err != nil {
				return nil, err
			}
		}
		moves = append(moves, move{from: t.Name + "#P#" + p, to: tmp, partition: p})
	}
	return moves, nil
}

// rebuild rebuilds the imported table. Why: IMPORT TABLESPACE takes the
// file back under the id its DISCARD logged as deleted (FILE_DELETE), and
// keeps its pages' LSNs from the backup. mariabackup takes an id it finds
// deleted in the redo log it reads (from the checkpoint on; the server
// moves it lazily) for a table dropped during the backup and leaves the
// live table out ("We assume the table was dropped during xtrabackup
// execution and ignore the tablespace"), and an incremental copies only
// pages newer than its base, so one on a backup from before the import
// has a tablespace without its first page. The rebuild writes every page
// anew, through the redo log, into a tablespace of a new id; every later
// backup, full or incremental, holds it.
//
// A FULLTEXT index is not in the exported files (its words are in tables
// of their own, FTS_*.ibd): IMPORT leaves it unusable (MATCH finds no
// index), and a rebuild that keeps it is refused ("Fulltext index ... is
// corrupt"). The rebuild drops it, and it is built again from the
// imported rows, one at a time as InnoDB builds them.
func (ti *tableImport) rebuild(ctx context.Context, def string) error {
	names, adds := fulltextIndexes(def)
	rebuild := "ALTER TABLE " + ti.asTable
	for _, n := range names {
		rebuild += " DROP INDEX " + n + ","
	}
	if err := ti.exec(ctx, "rebuilding the imported table", rebuild+" FORCE"); err != nil {
		return err
	}
	for i, add := range adds {
		if err := ti.exec(ctx, "building its FULLTEXT index "+names[i], "ALTER TABLE "+ti.asTable+" ADD "+add); err != nil {
			return err
		}
	}
	return nil
}

// triggersOf names the table's triggers in the backup, in their order.
func triggersOf(ctx context.Context, src *sql.DB, t Table) ([]string, error) {
	rows, err := src.QueryContext(ctx, "SELECT trigger_name FROM information_schema.triggers WHERE event_object_schema = ? AND event_object_table = ? ORDER BY action_timing, event_manipulation, action_order", t.DB, t.Name)
	if err != nil {
		return nil, fmt.Errorf("the restored backup: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// createTrigger creates trigger name of database db on the target as the
// backup has it: its statement, definer and sql_mode, in that database.
func createTrigger(ctx context.Context, src *sql.DB, tc *sql.Conn, db, name string) error {
	var trig, mode, stmt, cs, coll, dbColl string
	var created sql.NullString
	if err := src.QueryRowContext(ctx, "SHOW CREATE TRIGGER "+quoteTable(db, name)).Scan(&trig, &mode, &stmt, &cs, &coll, &dbColl, &created); err != nil {
		return fmt.Errorf("the restored backup: SHOW CREATE TRIGGER %s.%s: %w", db, name, err)
	}
	for _, v := range []string{mode, cs, coll} {
		if !settingValue.MatchString(v) {
			return fmt.Errorf("the restored backup: trigger %s.%s: unexpected setting %q", db, name, v)
		}
	}
	for _, q := range []struct{ what, sql string }{
		{"choosing its database", "USE " + mariadb.QuoteIdent(db)},
		{"its sql_mode", "SET SESSION sql_mode = '" + mode + "'"},
		{"its character set", "SET NAMES '" + cs + "' COLLATE '" + coll + "'"},
		{"creating it", stmt},
	} {
		if _, err := tc.ExecContext(ctx, q.sql); err != nil {
			return fmt.Errorf("trigger %s: %s on the target: %w", name, q.what, err)
		}
	}
	return nil
}

// settingValue matches the sql_mode, character set and collation names
// a trigger records, which go into SET statements unquoted by anything
// but the quotes around them.
var settingValue = regexp.MustCompile(`^[A-Za-z0-9_,]*$`)

// partitions lists the partitions of the table in the backup, none if it
// has none; a subpartitioned table is refused.
func partitions(ctx context.Context, src *sql.DB, t Table) ([]string, error) {
	rows, err := src.QueryContext(ctx, "SELECT partition_name, subpartition_name FROM information_schema.partitions WHERE table_schema = ? AND table_name = ? AND partition_name IS NOT NULL ORDER BY partition_ordinal_position, subpartition_ordinal_position", t.DB, t.Name)
	if err != nil {
		return nil, fmt.Errorf("the restored backup: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p string
		var sub sql.NullString
		if err := rows.Scan(&p, &sub); err != nil {
			return nil, err
		}
		if sub.Valid {
			return nil, &restore.RefusedError{Err: fmt.Errorf("table %s is subpartitioned: its import is not supported; restore the backup with --target-dir and copy the table from there", t)}
		}
		if !plainName.MatchString(p) {
			return nil, &restore.RefusedError{Err: fmt.Errorf("table %s: partition %q has characters other than letters, digits and _, which the server encodes in file names; importing it is not supported", t, p)}
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

func quoteTable(db, table string) string {
	return mariadb.QuoteIdent(db) + "." + mariadb.QuoteIdent(table)
}

func checksum(ctx context.Context, db *sql.DB, schema, table string) (int64, error) {
	var name string
	var sum sql.NullInt64
	if err := db.QueryRowContext(ctx, "CHECKSUM TABLE "+quoteTable(schema, table)).Scan(&name, &sum); err != nil {
		return 0, fmt.Errorf("CHECKSUM TABLE %s.%s: %w", schema, table, err)
	}
	if !sum.Valid {
		return 0, fmt.Errorf("CHECKSUM TABLE %s.%s: the table is missing or unreadable", schema, table)
	}
	return sum.Int64, nil
}

// copyTablespace copies the exported files of stem in from (stem.ibd and
// stem.cfg) into to as as.ibd and as.cfg, owned as to is and never over
// an existing file; it returns what it wrote, also on failure.
func copyTablespace(from, stem, to, as string) ([]string, error) {
	st, err := os.Stat(to)
	if err != nil {
		return nil, fmt.Errorf("the target's database directory: %w", err)
	}
	owner := st.Sys().(*syscall.Stat_t)
	var written []string
	for _, ext := range []string{".ibd", ".cfg"} {
		dst := filepath.Join(to, as+ext)
		if err := copyFile(filepath.Join(from, stem+ext), dst, int(owner.Uid), int(owner.Gid)); err != nil {
			return written, err
		}
		written = append(written, dst)
	}
	return written, nil
}

// plainName matches the names whose files the server names as they are;
// others it encodes (@0024 for $, ...), which an import does not follow yet.
var plainName = regexp.MustCompile(`^[0-9A-Za-z_]+$`)

// CheckNames refuses tables whose names the server encodes in file names.
func CheckNames(tables []Table) error {
	for _, t := range tables {
		for _, n := range []string{t.DB, t.Name, t.AsDB, t.AsName} {
			if !plainName.MatchString(n) {
				return &restore.RefusedError{Err: fmt.Errorf("table %s (as %s): %q has characters other than letters, digits and _, which the server encodes in file names; importing such a table is not supported: restore the backup with --target-dir and copy the table from there", t, t.As(), n)}
			}
		}
	}
	return nil
}

func copyFile(src, dst string, uid, gid int) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("the restored backup: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o660)
	if errors.Is(err, fs.ErrExist) {
		return &restore.RefusedError{Err: fmt.Errorf("%s already exists in the target's datadir: a file of another table, or left by an earlier import; a restore never writes over it", dst)}
	}
	if err != nil {
		return fmt.Errorf("the target's datadir: %w", err)
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && os.Geteuid() == 0 {
		err = os.Chown(dst, uid, gid)
	}
	if err != nil {
		os.Remove(dst)
		return fmt.Errorf("the target's datadir: %s: %w", dst, err)
	}
	return nil
}
