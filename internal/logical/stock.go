package logical

import (
	"fmt"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/mariadb"
)

// The stock-tool way out (docs/format.md, "Restoring with stock tools"):
// besides its data files and the catalog, a logical backup holds scripts
// that restore it with the mariadb client alone, in the order and with the
// session settings of a restore through backstream, and plain text that
// says how. They are made from the catalog at the end of the dump (the
// data files and the sequences' state are known only then) and go into
// the streams like every file, so the manifest's digests and the
// encryption cover them. backstream's own restore never reads them.

// Names of the files at the top of the extracted tree. A database's
// directory is its encoded name, which holds no dot, so none of them can
// be one; the scripts in a database's directory hold a '-', which no
// encoded table name holds, so none can be a table's file.
const (
	stockReadme   = "README.txt"
	stockOrder    = "restore.list"
	stockAccounts = "accounts.sql"
	stockLoadData = "load-data.txt"
)

// stockFile is one file of the way out.
type stockFile struct {
	path string
	data string
}

// stockFiles writes the way out of the backup m (its header: id, times,
// server; pos, where its data stand) with catalog c. encode puts an
// object's text into its own character set (schema.EncodeFor).
func stockFiles(c *Catalog, m *archive.Manifest, pos archive.Positions, encode schema.Encoder) ([]stockFile, error) {
	var files []stockFile
	var order []string
	add := func(path, data string) {
		files = append(files, stockFile{path, data})
		order = append(order, path)
	}
	dbs := c.Schema.Databases
	dir := func(d *schema.Database, name string) string { return pathName(d.Name) + "/" + name }

	for _, d := range dbs {
		add(dir(d, "create-database.sql"), schema.DatabaseScript(d))
	}
	// Sequences first: a table of any database may take its default from
	// one; tables whose rows are other tables' last: they may need those
	// to exist (see loader.createTables).
	groups := []struct {
		file string
		pick func(*schema.Table) bool
	}{
		{"create-sequences.sql", func(t *schema.Table) bool { return t.Sequence }},
		{"create-tables.sql", func(t *schema.Table) bool { return !t.Sequence && !t.RowsElsewhere() }},
		{"create-tables-last.sql", func(t *schema.Table) bool { return !t.Sequence && t.RowsElsewhere() }},
	}
	for _, g := range groups {
		for _, d := range dbs {
			var tables []*schema.Table
			for _, t := range d.Tables {
				if g.pick(t) {
					tables = append(tables, t)
				}
			}
			if len(tables) > 0 {
				add(dir(d, g.file), schema.TablesScript(d, tables, stockCreateTable))
			}
		}
	}
	for _, d := range dbs {
		if s := loadDataScript(c, d); s != "" {
			add(dir(d, "load-data.sql"), s)
		}
	}
	objects := func(d *schema.Database, file, what string, objs []*schema.Object) error {
		if len(objs) == 0 {
			return nil
		}
		s, err := schema.ObjectsScript(d, what, objs, encode)
		if err != nil {
			return err
		}
		add(dir(d, file), s)
		return nil
	}
	for _, d := range dbs {
		if err := objects(d, "create-routines.sql", "routines", d.Routines); err != nil {
			return nil, err
		}
	}
	for _, d := range dbs {
		if len(d.Views) > 0 {
			add(dir(d, "create-view-placeholders.sql"), schema.ViewPlaceholdersScript(d))
		}
	}
	// The views in the order of OrderedViews, which may go from one
	// database to another and back: each run of one database's views is
	// a script of its own.
	runs := map[*schema.Database]int{}
	ordered := c.Schema.OrderedViews()
	for i := 0; i < len(ordered); {
		d := ordered[i].Database
		var run []*schema.Object
		for ; i < len(ordered) && ordered[i].Database == d; i++ {
			run = append(run, ordered[i].Object)
		}
		runs[d]++
		file := "create-views.sql"
		if runs[d] > 1 {
			file = fmt.Sprintf("create-views-%d.sql", runs[d])
		}
		if err := objects(d, file, "views", run); err != nil {
			return nil, err
		}
	}
	for _, d := range dbs {
		if err := objects(d, "create-triggers.sql", "triggers", d.Triggers); err != nil {
			return nil, err
		}
	}
	for _, d := range dbs {
		if err := objects(d, "create-events.sql", "events", d.Events); err != nil {
			return nil, err
		}
	}
	list := strings.Join(order, "\n")
	if list != "" {
		list += "\n"
	}
	files = append(files, stockFile{stockOrder, list})
	if len(c.Schema.Users) > 0 {
		files = append(files, stockFile{stockAccounts, schema.AccountsScript(c.Schema)})
	}
	files = append(files, stockFile{stockLoadData, loadDataText(c)}, stockFile{stockReadme, readme(c, m, pos)})
	return files, nil
}

// stockCreateTable is the statement a script creates t with: SHOW
// CREATE's text whole, but for ARCHIVE without its AUTO_INCREMENT counter
// (see loader.plan).
func stockCreateTable(t *schema.Table) string {
	if !t.Sequence && strings.EqualFold(t.Engine, "ARCHIVE") {
		return autoIncrement.ReplaceAllString(t.Create, "")
	}
	return t.Create
}

// tableData returns the data of the tables of database db, as the catalog
// lists them, with each table's definition.
func tableData(c *Catalog, d *schema.Database) (out []*TableData, defs []*schema.Table) {
	byName := map[string]*schema.Table{}
	for _, t := range d.Tables {
		byName[t.Name] = t
	}
	for i := range c.Tables {
		td := &c.Tables[i]
		if td.Database == d.Name && byName[td.Table] != nil {
			out = append(out, td)
			defs = append(defs, byName[td.Table])
		}
	}
	return out, defs
}

// loadsHistory reports whether a table's data files hold history rows,
// which only system_versioning_insert_history lets a load insert.
func loadsHistory(t *schema.Table) bool { return t.Versioned && !t.HistoryLeftOut }

// loadDataScript loads the data files of database d as a load through
// backstream does (the same session settings and LOAD DATA statements,
// one per file, read by the client from the extracted tree), then sets
// its sequences' state; "" if d has neither.
func loadDataScript(c *Catalog, d *schema.Database) string {
	data, defs := tableData(c, d)
	var seqs []*schema.Table
	for _, t := range d.Tables {
		if t.Sequence {
			seqs = append(seqs, t)
		}
	}
	if len(data) == 0 && len(seqs) == 0 {
		return ""
	}
	history := false
	for i := range data {
		history = history || (loadsHistory(defs[i]) && len(data[i].Chunks) > 0)
	}
	var b strings.Builder
	b.WriteString(schema.ScriptHeader("data of database " + mariadb.QuoteIdent(d.Name) + " (LOAD DATA LOCAL: run the client with --local-infile=1 in the directory the backup was extracted into), then the state of its sequences"))
	b.WriteString("SET SESSION " + strings.Join(loadSettings(c.Schema.SQLMode, history), ", ") + ";\n")
	for i, td := range data {
		var rows int64
		for _, ch := range td.Chunks {
			rows += ch.Rows
		}
		fmt.Fprintf(&b, "\n-- table %s: %d data files, %d rows\n", oneLine(qualified(d.Name, td.Table)), len(td.Chunks), rows)
		load := loadStatement(qualified(d.Name, td.Table), defs[i], td.Columns, c.DataFormat)
		for _, ch := range td.Chunks {
			// Paths hold letters, digits, _ @ . / only: no quoting needed.
			b.WriteString("LOAD DATA LOCAL INFILE '" + ch.Path + load + ";\n")
		}
	}
	if len(seqs) > 0 {
		b.WriteString("\n-- sequences: the state they had when the data were read\n")
		for _, t := range seqs {
			b.WriteString(schema.SetValStatement(d.Name, t) + ";\n")
		}
	}
	return b.String()
}

// loadDataText says in plain text how the data files load, for other
// tools than the mariadb client: the session, the statement, and each
// table's column list, SET clause and files.
func loadDataText(c *Catalog) string {
	history := false
	for _, d := range c.Schema.Databases {
		data, defs := tableData(c, d)
		for i := range data {
			history = history || (loadsHistory(defs[i]) && len(data[i].Chunks) > 0)
		}
	}
	var b strings.Builder
	b.WriteString(`How the data files of this backup load. The load-data.sql script of each
database's directory runs exactly this; this file is for other tools.

Format: what LOAD DATA reads by default. Fields end at a tab (X'09'), lines
at a newline (X'0A'), a backslash (X'5C') escapes: \t \n \\ \0 and \N for
NULL. No field is enclosed. The bytes are the values' own: CHARACTER SET
binary. BIT columns, and ENUM and SET columns in this backup's format ` + fmt.Sprint(c.DataFormat) + `,
hold numbers, and UUID, INET4 and INET6 columns their text, each loaded
through a variable (the SET clause of their table below). Generated columns
are not in the files. Names are quoted as SQL quotes them, but for a line
break in one, shown here as \n (load-data.sql has it as it is).

Session settings to load under (before any data file):
`)
	for _, s := range loadSettings(c.Schema.SQLMode, history) {
		b.WriteString("  " + s + "\n")
	}
	b.WriteString(`
Statement for each data file (the file name relative to the directory the
backup was extracted into, the client reading it: LOCAL):
  LOAD DATA LOCAL INFILE '<file>' INTO TABLE <table> CHARACTER SET binary
    FIELDS TERMINATED BY X'09' ESCAPED BY X'5C' LINES TERMINATED BY X'0A'
    (<columns>) [SET <set>]

mariadb-import cannot give CHARACTER SET binary or a SET clause, and takes a
table's name from its file's: use the mariadb client and load-data.sql.
`)
	for _, d := range c.Schema.Databases {
		data, defs := tableData(c, d)
		for i, td := range data {
			cols, set := loadColumns(defs[i], td.Columns, c.DataFormat)
			fmt.Fprintf(&b, "\ntable %s\n  columns: (%s)\n", oneLine(qualified(d.Name, td.Table)), oneLine(strings.Join(cols, ", ")))
			if len(set) > 0 {
				fmt.Fprintf(&b, "  set: %s\n", oneLine(strings.Join(set, ", ")))
			}
			if len(td.Chunks) == 0 {
				b.WriteString("  files: none (the table was empty)\n")
			}
			for _, ch := range td.Chunks {
				fmt.Fprintf(&b, "  file: %s (%d rows, %d bytes)\n", ch.Path, ch.Rows, ch.Bytes)
			}
		}
	}
	return b.String()
}

// oneLine shows the line breaks of names as \n and \r, so that a name
// never ends a comment or a line of text.
func oneLine(s string) string { return strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(s) }

// readme is README.txt: what the backup is and how to restore it with the
// stock tools.
func readme(c *Catalog, m *archive.Manifest, pos archive.Positions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "backstream logical backup %s\ntaken %s from MariaDB %s", m.ID, m.Started.UTC().Format(time.RFC3339), m.Server.Version)
	if m.Server.Hostname != "" {
		fmt.Fprintf(&b, " on %s", m.Server.Hostname)
	}
	fmt.Fprintf(&b, " by backstream %s\n", m.Tools.Backstream)
	if pos.BinlogFile != "" || pos.GTID != "" {
		fmt.Fprintf(&b, "its data stand at binary log %s position %d, GTID position %q\n", pos.BinlogFile, pos.BinlogPosition, pos.GTID)
	}
	b.WriteString(`
RESTORING WITHOUT BACKSTREAM

These files restore the backup with the MariaDB client alone. Extract every
stream object of the backup into one directory, as you did to read this:

  age -d -i KEY_FILE 00000.xbs.zst.age | zstd -dc | mbstream -x -C DIR   (encrypted)
  zstd -dc 00000.xbs.zst | mbstream -x -C DIR                            (not)

(lz4 -dc, gzip -dc or cat for the other codecs), then, in DIR, with the
connection options of the target server (an option file, not a password on
the command line):

  set -o pipefail
  xargs cat < restore.list | mariadb --binary-mode --comments --local-infile=1 [OPTIONS]

The client stops at the first error: a database the target already has
stops it at that database's CREATE DATABASE, before anything of it changes.
To create the backup's users and roles too, with their grants (an account
the target has is kept as it is, and said so):

  mariadb --binary-mode --comments [OPTIONS] < accounts.sql

restore.list names the scripts in the order they must run, every database's
in each step: create-database.sql; create-sequences.sql (tables may take
defaults from them); create-tables.sql (with their indexes and foreign keys);
create-tables-last.sql (tables whose rows are other tables', e.g. MERGE);
load-data.sql (the data files, then the sequences' state); create-routines.sql;
create-view-placeholders.sql, then create-views.sql (a view after the views it
reads; create-views-2.sql and so on where that order goes from one database
to another and back); create-triggers.sql (after the data, so that loading
does not fire them); create-events.sql. Each script sets the session it needs
(sql_mode, character set, collation, time zone; the delimiter for bodies),
so that SHOW CREATE on the target gives what it gave on the source.

--binary-mode keeps the client from turning \r\n into \n and from running
backslash commands found in a body (it also disables SOURCE, hence the list);
--comments keeps the comments in bodies; --local-infile=1 lets load-data.sql
send the data files, which it names relative to DIR. The load-data.sql
scripts of different databases may run at once, each in its own client,
after every create-tables script and before the rest. Add
"SET SESSION sql_log_bin = 0;" in front to keep the load out of the target's
binary log. load-data.txt says how the data files load, for other tools.
Each table's statement is also in <database>/<table>.sql, as SHOW CREATE
TABLE gave it. Directory and file names encode database and table names:
letters, digits and _ stay, any other character is @ and its code point in
four hex digits (@@ and six beyond U+FFFF).
`)
	if !c.Whole {
		b.WriteString("\nThis backup took some databases, tables or kinds of objects only: it restores those.\n")
	}
	return b.String()
}
