// Package schema reads the schema of a MariaDB server into a Catalog that a
// logical backup stores as JSON, and applies it to a target server in phases.
//
// SHOW CREATE output is the source of truth for every object: the server
// prints it so that running it again recreates the object, and comparing it
// between source and target is how the tests prove a restore faithful.
//
// A restore applies the phases in this order (the Catalog's objects are kept
// in the order each phase needs):
//
//  1. CreateDatabase for every database.
//  2. CreateTable for every sequence (they lead Database.Tables), then for
//     every table with the base statement of SplitCreateTable: tables may
//     take their defaults from a sequence (DEFAULT NEXTVAL(s)).
//  3. The data (not this package); RestoreSequence for every sequence.
//  4. AlterTable with the addIndexes statement of every table, then with the
//     addForeignKeys statement of every table: a foreign key needs the
//     indexes of both its tables.
//  5. CreateObject for routines (packages before their bodies): a view may
//     call a stored function, and the server checks that when it creates the
//     view.
//  6. CreateViewPlaceholder for every view of every database, then
//     CreateObject for Catalog.OrderedViews. Views are ordered so that a view
//     comes after the views it reads; the placeholders make a wrong order
//     (a view name mistaken for a dependency, see OrderedViews) harmless.
//  7. CreateObject for triggers, after the data so that loading does not
//     fire them, in the order of Database.Triggers (it is the firing order).
//  8. CreateObject for events.
//  9. Accounts: ApplyAccounts, or CreateAccount for roles then users,
//     GrantAccount for each created account, SetDefaultRole last. Grants
//     name tables and routines, so they come after those exist.
//
// To restore under other database names, pass a rename map to CreateObject
// and GrantAccount, and the statements of SplitCreateTable through
// RenameDatabases: SHOW CREATE qualifies names of other databases (foreign
// keys, DEFAULT NEXTVAL, views). The texts of trigger, routine and event
// bodies are not rewritten.
//
// The functions that apply take the caller's connection, set the session
// variables a statement needs and give them back, but leave the connection
// in the target database (USE).
package schema

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/backstream/backstream/internal/mariadb"
)

// ErrExists is wrapped by the error of CreateTable and CreateAccount when the
// object is already on the target. A restore reports such an account as
// kept; a table is the caller's decision (a resumed load, or a name clash).
var ErrExists = errors.New("already exists")

// systemDatabases are never dumped unless named in Filter.Databases: their
// contents belong to the server (accounts are dumped as Catalog.Users).
var systemDatabases = []string{"mysql", "information_schema", "performance_schema", "sys"}

// Filter selects databases and tables. Empty Databases means every database
// except the system ones (mysql, information_schema, performance_schema,
// sys). Names are compared exactly (MariaDB on Linux is case-sensitive).
type Filter struct {
	Databases, ExcludeDatabases []string
	// Tables and ExcludeTables name tables, sequences and views as
	// "db.table". Tables non-empty means only those tables: views and
	// triggers of other tables are left out, and, when Databases is empty,
	// databases without a listed table too.
	Tables, ExcludeTables []string
}

// CheckNames refuses a table of Tables or ExcludeTables not named as
// db.table.
func (f Filter) CheckNames() error {
	for _, t := range slices.Concat(f.Tables, f.ExcludeTables) {
		if db, name, ok := strings.Cut(t, "."); !ok || db == "" || name == "" {
			return fmt.Errorf("table %q: give it as database.table", t)
		}
	}
	return nil
}

// Database reports whether the filter selects database name.
func (f Filter) Database(name string) bool {
	if slices.Contains(f.ExcludeDatabases, name) {
		return false
	}
	if len(f.Databases) > 0 {
		return slices.Contains(f.Databases, name)
	}
	if len(f.Tables) > 0 {
		// "db.table" is split nowhere: a name may contain '.', so match the
		// prefix instead of guessing where the database name ends.
		return slices.ContainsFunc(f.Tables, func(t string) bool { return strings.HasPrefix(t, name+".") })
	}
	return !slices.Contains(systemDatabases, name)
}

// Table reports whether the filter selects table (or sequence, or view) name
// of database db.
func (f Filter) Table(db, name string) bool {
	if !f.Database(db) {
		return false
	}
	full := db + "." + name
	if slices.Contains(f.ExcludeTables, full) {
		return false
	}
	return len(f.Tables) == 0 || slices.Contains(f.Tables, full)
}

// Skip lists kinds of objects to leave out (each can be left out by a flag).
type Skip struct{ Views, Triggers, Routines, Events, Users bool }

// Catalog is the schema of a logical backup.
type Catalog struct {
	SQLMode   string // source @@GLOBAL.sql_mode
	Databases []*Database
	Users     []*Account `json:",omitempty"` // roles first, then users; only when the dump includes users
	// IgnoredAccounts lists (as `user`@`host`) the accounts of mysql.user
	// the server ignores, so that SHOW CREATE USER cannot show them: a
	// host name under skip-name-resolve. They are not dumped; report them.
	IgnoredAccounts []string `json:",omitempty"`
}

// Database is one database and the objects in it.
type Database struct {
	Name   string
	Create string // SHOW CREATE DATABASE text
	// Tables holds base tables and sequences, sequences first (tables may
	// use them as defaults), each group by name.
	Tables []*Table
	// Views are in dependency order within the database; across databases
	// use Catalog.OrderedViews.
	Views []*Object `json:",omitempty"`
	// Triggers are by table, timing and event, in firing order: creating
	// them in this order recreates the order.
	Triggers []*Object `json:",omitempty"`
	// Routines: packages, package bodies, functions, procedures; a package
	// body needs its package.
	Routines []*Object `json:",omitempty"`
	Events   []*Object `json:",omitempty"`
}

// Table is a base table or a sequence.
type Table struct {
	Name   string
	Create string // SHOW CREATE TABLE / SHOW CREATE SEQUENCE text
	Engine string
	// Sequence marks a sequence; SetVal is then the statement that
	// restores its state, e.g. SELECT SETVAL(`db`.`s`, 1234, 0, 0), with
	// the source's next_not_cached_value and cycle_count, so that SELECT *
	// from the sequence gives the same row on the target. RestoreSequence
	// builds it again for the target database.
	Sequence   bool   `json:",omitempty"`
	SetVal     string `json:",omitempty"`
	NextValue  int64  `json:",omitempty"` // next_not_cached_value
	CycleCount int64  `json:",omitempty"` // cycle_count
	// Versioned marks WITH SYSTEM VERSIONING. History rows share their
	// Key with the current row: over FOR SYSTEM_TIME ALL, Key plus the
	// RowEnd column is unique (a PRIMARY KEY of an explicit PERIOD holds
	// it already: the server adds it).
	Versioned bool `json:",omitempty"`
	// HistoryLeftOut marks a table versioned by transaction id (see
	// VersionedByTransaction) whose current rows only were dumped, without
	// the period columns (backup --versioned-current-only).
	HistoryLeftOut bool `json:",omitempty"`
	// Columns in ordinal order, every column including invisible ones and
	// the period columns of system versioning (the implicit row_start and
	// row_end last).
	Columns []Column
	// Key is the chunking key: the PRIMARY KEY's columns, else those of the
	// first UNIQUE key whose columns are all NOT NULL (long UNIQUE keys,
	// USING HASH, do not count: they are not ordered); nil if none.
	Key []string `json:",omitempty"`
	// IntKey: Key's first column is of an integer type (tinyint..bigint,
	// signed or not), so ranges of it cut the table into index range scans.
	IntKey    bool  `json:",omitempty"`
	Rows      int64 // estimate from information_schema.TABLES
	DataBytes int64 // estimate (DATA_LENGTH)
}

// VersionedByTransaction reports whether t is system-versioned by
// transaction id (its period columns are BIGINT UNSIGNED). Its history
// cannot be restored: the server ignores the period values a load gives
// such a table (system_versioning_insert_history takes timestamps only),
// so every history row would come back as a current row.
func (t *Table) VersionedByTransaction() bool {
	return t.Versioned && slices.ContainsFunc(t.Columns, func(c Column) bool { return c.RowStart && c.DataType == "bigint" })
}

// RowsElsewhere reports whether t holds no rows of its own: its engine
// shows the rows of other tables, on this server or another. Such a table
// is dumped and restored as its definition only, created after every other
// table (it names them and may need them to exist): reading it would dump
// another table's rows a second time (a restore would then write them into
// that table again) or another server's rows.
//
// The engines: MRG_MyISAM (MERGE, over MyISAM tables), FEDERATED (also
// FederatedX, over a table of a server it connects to), SPIDER (over
// tables of data nodes), and CONNECT unless its table is a file it keeps
// itself (see connectOwnsRows). The name is information_schema's, which
// is empty when the server cannot open the table: such a table fails the
// dump when its rows are read, loudly.
func (t *Table) RowsElsewhere() bool {
	switch strings.ToUpper(t.Engine) {
	case "MRG_MYISAM", "FEDERATED", "SPIDER":
		return true
	case "CONNECT":
		return !connectOwnsRows(t.Create)
	}
	return false
}

// connectFileTypes are the CONNECT table types whose rows are in a file.
var connectFileTypes = []string{"DOS", "FIX", "BIN", "CSV", "FMT", "DBF", "XML", "JSON", "BSON", "INI", "VEC", "ZIP"}

// connectOwnsRows reports whether a CONNECT table's CREATE TABLE makes it
// an "inward" table: a file type without FILE_NAME, whose file CONNECT
// creates in the database's directory and drops with the table, so the
// rows are the table's own. Without TABLE_TYPE, CONNECT takes MYSQL when
// SRCDEF is given, PROXY when TABNAME is, and DOS otherwise.
func connectOwnsRows(create string) bool {
	opts := tableOptions(create)
	typ := strings.ToUpper(opts["TABLE_TYPE"])
	if typ == "" {
		switch {
		case opts["SRCDEF"] != "":
			typ = "MYSQL"
		case opts["TABNAME"] != "":
			typ = "PROXY"
		default:
			typ = "DOS"
		}
	}
	_, named := opts["FILE_NAME"]
	return slices.Contains(connectFileTypes, typ) && !named
}

// tableOptions returns the NAME=value options after the column list of a
// SHOW CREATE TABLE text, by upper-case name, values unquoted (engine
// options print as `NAME`='value'). Nil if the text does not parse.
func tableOptions(create string) map[string]string {
	ct, err := parseCreateTable(create)
	if err != nil {
		return nil
	}
	s := ct.tail
	toks := significant(lex(s, lexMode{}))
	opts := map[string]string{}
	for i := 0; i+2 < len(toks); i++ {
		name, eq, val := toks[i], toks[i+1], toks[i+2]
		if (name.kind == tokWord || name.kind == tokIdent) && eq.punct(s, '=') && val.kind != tokPunct {
			opts[strings.ToUpper(name.name(s))] = val.name(s)
		}
	}
	return opts
}

// Column is one column of a table.
type Column struct {
	Name string
	// DataType is information_schema's DATA_TYPE, lower case: int, bit,
	// geometry, point, blob, longtext (JSON is longtext in 10.11), ...
	DataType string
	// Generated: a VIRTUAL or PERSISTENT (STORED) generated column, which
	// is neither dumped nor loaded. Period columns are not Generated.
	Generated bool `json:",omitempty"`
	Invisible bool `json:",omitempty"`
	// RowStart, RowEnd: the system-versioning period columns (ROW START /
	// ROW END), also when implicit (row_start, row_end, invisible).
	RowStart bool `json:",omitempty"`
	RowEnd   bool `json:",omitempty"`
}

// Object kinds.
const (
	KindView        = "view"
	KindTrigger     = "trigger"
	KindFunction    = "function"
	KindProcedure   = "procedure"
	KindPackage     = "package"
	KindPackageBody = "package body"
	KindEvent       = "event"
)

// Object is a view, trigger, routine or event.
type Object struct {
	Kind     string // one of the Kind constants
	Database string // the source database (rename maps it)
	Name     string
	Table    string `json:",omitempty"` // triggers: their table
	Create   string // the SHOW CREATE ... statement text
	// The creation context from the SHOW CREATE row, where it has them
	// (views have no sql_mode, database collation or time zone; only
	// events have a time zone).
	SQLMode             string `json:",omitempty"`
	TimeZone            string `json:",omitempty"`
	CharacterSetClient  string `json:",omitempty"`
	CollationConnection string `json:",omitempty"`
	DatabaseCollation   string `json:",omitempty"`
	// Columns: a view's column names, for CreateViewPlaceholder.
	Columns []string `json:",omitempty"`
}

// Account is a user or a role.
type Account struct {
	User, Host string // a role's Host is ""
	Role       bool   `json:",omitempty"`
	// Create is the SHOW CREATE USER text ("" for roles: CREATE ROLE).
	Create string `json:",omitempty"`
	// Grants are the account's own lines of SHOW GRANTS FOR, in order
	// (without SET DEFAULT ROLE, and for a role without the grants of the
	// roles granted to it, which SHOW GRANTS lists too).
	Grants []string
	// DefaultRole is the SET DEFAULT ROLE target, "" if none.
	DefaultRole string `json:",omitempty"`
}

// String returns the account as SQL names it: `user`@`host`, or `role`.
func (a *Account) String() string {
	if a.Role {
		return mariadb.QuoteIdent(a.User)
	}
	return mariadb.QuoteIdent(a.User) + "@" + mariadb.QuoteIdent(a.Host)
}

// DatabaseObject is an object with the database it belongs to.
type DatabaseObject struct {
	Database *Database
	Object   *Object
}

// OrderedViews returns the views of every database in creation order: a view
// after every view it reads, also across databases.
//
// MariaDB 10.11 has no information_schema.VIEW_TABLE_USAGE, so the
// dependencies come from the view text: SHOW CREATE VIEW prints every table
// as `name` (same database) or `db`.`name`, and every name that could be a
// view counts. That may add a dependency that is not real (an alias or a
// column spelled like a view); only a cycle of such mistakes can produce a
// wrong order, and CreateViewPlaceholder makes that harmless too, except
// for a WITH CHECK OPTION view over a view still a placeholder.
func (c *Catalog) OrderedViews() []DatabaseObject {
	return orderViews(c.Databases)
}
