package physical

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/backstream/backstream/internal/archive"
	"github.com/backstream/backstream/internal/mariadb"
)

// The table guard: a physical backup proves that it holds every table the
// server has. mariabackup decides for itself which tablespaces to copy,
// and when it takes one for dropped (its DDL tracking, "We assume the
// table was dropped during xtrabackup execution and ignore the
// tablespace") it leaves a live table out of a backup that still ends
// "completed OK!". So the server's catalog is read when the backup starts
// and when it ends, and every table listed both times, and not touched by
// DDL meanwhile (the server's DDL log), must have its files in the
// stream, or the backup is not committed.

// catalogTable is a table of the server's catalog and the files it needs.
type catalogTable struct {
	archive.Table
	key           string // db/table in the server's file name encoding
	schema, table string // as the server names them (either may hold a '.')
}

// excludedSchemas have no files in a datadir's backup.
const excludedSchemas = "'information_schema', 'performance_schema'"

// readCatalog lists the server's tables, views and sequences with the
// files each needs, keyed by db/table in the server's file name encoding.
// The server encodes the names itself (CONVERT ... USING filename), as it
// does for the files.
func readCatalog(ctx context.Context, conn mariadb.Config) (map[string]*catalogTable, error) {
	db, err := mariadb.Open(ctx, conn, "")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	tables := map[string]*catalogTable{}
	err = eachRow(ctx, db, `SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, COALESCE(ENGINE, ''),
		CAST(CONVERT(TABLE_SCHEMA USING filename) AS BINARY), CAST(CONVERT(TABLE_NAME USING filename) AS BINARY)
		FROM information_schema.TABLES
		WHERE TABLE_SCHEMA NOT IN (`+excludedSchemas+`) AND TABLE_TYPE <> 'TEMPORARY'`, func(f []string) {
		t := &catalogTable{key: f[4] + "/" + f[5], schema: f[0], table: f[1]}
		t.Name, t.Engine = f[0]+"."+f[1], f[3]
		switch f[2] {
		case "VIEW":
			t.Type = "view"
		case "SEQUENCE":
			t.Type = "sequence"
		}
		tables[t.key] = t
	})
	if err != nil {
		return nil, err
	}
	// InnoDB's own list names every InnoDB table and partition, which
	// the backup account (PROCESS) sees even where information_schema
	// shows it no table (it needs a privilege on a table to see it there).
	// A table in the system tablespace (space 0) has no file of its own:
	// ibdata1 holds it. A name whose table part starts with '#' (which
	// the encoding never writes) is InnoDB's own: an intermediate table of
	// a running ALTER. A partitioned InnoDB table's data files are its
	// partitions' (t#P#p0.ibd, t#P#p0#SP#s0.ibd), which this list names,
	// encoded as the files are; other engines' partitions are read from
	// information_schema (otherPartitions).
	shared := map[string]bool{}
	unseen := map[string]*catalogTable{}
	parts := map[string][]string{}
	err = eachRow(ctx, db, `SELECT NAME, SPACE,
		CONVERT(CONVERT(CAST(SUBSTRING_INDEX(NAME, '/', 1) AS BINARY) USING filename) USING utf8mb4),
		CONVERT(CONVERT(CAST(SUBSTRING_INDEX(SUBSTRING_INDEX(NAME, '/', -1), '#', 1) AS BINARY) USING filename) USING utf8mb4)
		FROM information_schema.INNODB_SYS_TABLES WHERE NAME LIKE '%/%'`, func(f []string) {
		unit, space := f[0], f[1]
		if space == "0" {
			shared[unit] = true
		}
		db, table, _ := strings.Cut(unit, "/")
		key, _, _ := strings.Cut(unit, "#")
		if strings.HasPrefix(table, "#") || strings.Contains(excludedSchemas, "'"+db+"'") {
			return
		}
		if t := tables[key]; t != nil {
			if strings.EqualFold(t.Engine, "InnoDB") && isPartition(unit[len(key):]) {
				parts[key] = append(parts[key], unit)
			}
			return
		}
		if space == "0" {
			return
		}
		t := unseen[key]
		if t == nil {
			t = &catalogTable{key: key}
			t.Name, t.Engine = f[2]+"."+f[3], "InnoDB"
			unseen[key] = t
		}
		t.Files = append(t.Files, unit+".ibd")
	})
	if err != nil {
		return nil, err
	}
	if err := otherPartitions(ctx, db, tables, parts); err != nil {
		return nil, err
	}
	for key, t := range tables {
		slices.Sort(parts[key])
		t.Files = tableFiles(key, t.Type, t.Engine, parts[key], shared)
	}
	// A table only InnoDB's list shows is known by its tablespaces
	// alone: an InnoDB table hidden from the account, or a full-text
	// index's auxiliary table (db/FTS_..._CONFIG).
	for key, t := range unseen {
		slices.Sort(t.Files)
		tables[key] = t
	}
	return tables, nil
}

// isPartition reports whether suffix, what follows a table's name in an
// InnoDB tablespace name, names one of its partitions or subpartitions:
// #P#p or #P#p#SP#s (InnoDB also knows the lower-case separators), the
// names encoded, so holding no '#'. An ALTER's intermediate partitions
// (#TMP#, #REN#) are not the table's.
func isPartition(suffix string) bool {
	f := strings.Split(suffix, "#")
	// "#P#p" splits into "", "P", "p"; "#P#p#SP#s" into "", "P", "p", "SP", "s".
	switch {
	case len(f) == 3:
		return f[0] == "" && (f[1] == "P" || f[1] == "p") && f[2] != ""
	case len(f) == 5:
		return f[0] == "" && (f[1] == "P" || f[1] == "p") && f[2] != "" && (f[3] == "SP" || f[3] == "sp") && f[4] != ""
	}
	return false
}

// partitionBatch is how many tables one query of otherPartitions names.
const partitionBatch = 500

// otherPartitions adds to parts (by key, see catalogTable) the partitions
// of each table of tables that InnoDB does not keep, read from
// information_schema.PARTITIONS: InnoDB's partitions come from its own
// list, which costs the server nothing, whereas PARTITIONS opens every
// table it shows (52 s a read at 100,000 tables). The query names the
// tables, which the server matches before it opens one (it opens only
// those), and a row is taken only for a table it asked for by exactly
// that name (the comparison is case-insensitive).
func otherPartitions(ctx context.Context, db *sql.DB, tables map[string]*catalogTable, parts map[string][]string) error {
	type name struct{ schema, table string }
	keys := map[name]string{}
	var batch []any
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		query := `SELECT TABLE_SCHEMA, TABLE_NAME, CAST(CONVERT(PARTITION_NAME USING filename) AS BINARY), COALESCE(CAST(CONVERT(SUBPARTITION_NAME USING filename) AS BINARY), '')
			FROM information_schema.PARTITIONS
			WHERE PARTITION_NAME IS NOT NULL AND (TABLE_SCHEMA, TABLE_NAME) IN (` + strings.Repeat("(?, ?), ", len(batch)/2-1) + `(?, ?))`
		err := eachRow(ctx, db, query, func(f []string) {
			key, ok := keys[name{f[0], f[1]}]
			if !ok {
				return
			}
			unit := key + "#P#" + f[2]
			if f[3] != "" {
				unit += "#SP#" + f[3]
			}
			parts[key] = append(parts[key], unit)
		}, batch...)
		batch = batch[:0]
		return err
	}
	for key, t := range tables {
		if t.Type == "view" || strings.EqualFold(t.Engine, "InnoDB") {
			continue
		}
		keys[name{t.schema, t.table}] = key
		if batch = append(batch, t.schema, t.table); len(batch) == 2*partitionBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// eachRow runs query with args and calls row with each row's columns as
// strings.
func eachRow(ctx context.Context, db *sql.DB, query string, row func([]string), args ...any) error {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("the server's catalog: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return fmt.Errorf("the server's catalog: %w", err)
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("the server's catalog: %w", err)
		}
		f := make([]string, len(vals))
		for i, v := range vals {
			f[i] = string(v)
		}
		row(f)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("the server's catalog: %w", err)
	}
	return nil
}

// dataSuffixes are the data files of each engine that keeps its tables
// in files of their own, beside the .frm every table, view and sequence
// has. Other engines (MEMORY, BLACKHOLE, FEDERATED, ...) keep only the
// .frm.
var dataSuffixes = map[string][]string{
	"innodb":     {".ibd"},
	"aria":       {".MAD", ".MAI"},
	"myisam":     {".MYD", ".MYI"},
	"csv":        {".CSV"},
	"archive":    {".ARZ"},
	"mrg_myisam": {".MRG"},
}

// tableFiles lists the files table key (db/table, encoded) needs: its
// .frm, and unless it is a view its engine's data files, one set for each
// of units (its partitions, if any), none for an InnoDB tablespace that
// shared (the system tablespace's tables, by encoded name) holds.
func tableFiles(key, typ, engine string, units []string, shared map[string]bool) []string {
	files := []string{key + ".frm"}
	if typ == "view" {
		return files
	}
	if len(units) == 0 {
		units = []string{key}
	}
	lower := strings.ToLower(engine)
	for _, u := range units {
		if lower == "innodb" && shared[u] {
			continue
		}
		for _, s := range dataSuffixes[lower] {
			files = append(files, u+s)
		}
	}
	return files
}

// streamNames are the names under which mariabackup may stream a datadir
// file p: an InnoDB tablespace is also db/t.new (created since the redo
// log's checkpoint: prepare renames it) and, in an incremental,
// db/t.ibd.delta (with its .meta; an incremental carries every
// tablespace, unchanged ones as a delta of no pages).
func streamNames(p string) []string {
	if t, ok := strings.CutSuffix(p, ".ibd"); ok {
		return []string{p, t + ".new", p + ".delta", t + ".new.delta"}
	}
	return []string{p}
}

// MissingTableFiles returns, for each table of tables that lacks a file
// among files (a backup's paths, see streamNames), the table and its
// missing files, as "db.table (db/table.ibd)".
func MissingTableFiles(tables []archive.Table, files []archive.File) []string {
	have := make(map[string]bool, len(files))
	for _, f := range files {
		have[strings.TrimPrefix(f.Path, "./")] = true
	}
	var out []string
	for _, t := range tables {
		var missing []string
		for _, p := range t.Files {
			if !slices.ContainsFunc(streamNames(p), func(n string) bool { return have[n] }) {
				missing = append(missing, p)
			}
		}
		if len(missing) > 0 {
			out = append(out, fmt.Sprintf("%s (%s)", t.Name, strings.Join(missing, ", ")))
		}
	}
	return out
}

// MissingTablesError is a backup that lacks tables the server has.
type MissingTablesError struct {
	Tables []string // "db.table (its missing files)", see MissingTableFiles
	// Ignored are the tablespaces mariabackup said it took for dropped
	// although the server still has their tables.
	Ignored []string
}

func (e *MissingTablesError) Error() string {
	msg := "the backup lacks tables the server has"
	if len(e.Tables) > 0 {
		msg += ": " + strings.Join(e.Tables, ", ")
	}
	if len(e.Ignored) > 0 {
		msg += "; mariabackup ignored the tablespaces of live tables as dropped: " + strings.Join(e.Ignored, ", ")
	}
	return msg
}

// reIgnoredTablespace is mariabackup's warning for a tablespace it skips,
// taking its table for dropped during the copy.
var reIgnoredTablespace = regexp.MustCompile(`We assume the\s+table was dropped during xtrabackup execution and ignore the tablespace\s+(\S+)`)

// ignoredTablespaces are the tablespaces (db/t.ibd) mariabackup's log
// says it ignored as dropped.
func ignoredTablespaces(log []byte) []string {
	var out []string
	for _, m := range reIgnoredTablespace.FindAllSubmatch(log, -1) {
		p := strings.TrimPrefix(string(m[1]), "./")
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// checkTables is the guard, run once mariabackup has ended: it reads the
// catalog again and the server's DDL log of the copy that began at
// launched, and compares them with the files of the stream (see
// compareTables).
func checkTables(ctx context.Context, conn mariadb.Config, before map[string]*catalogTable, files []archive.File, datadir string, launched time.Time, log []byte) ([]archive.Table, error) {
	after, err := readCatalog(ctx, conn)
	if err != nil {
		return nil, err
	}
	data, err := ddlLog(datadir, launched)
	if err != nil {
		return nil, err
	}
	var touched map[string]bool
	if data != nil {
		touched = ddlTables(data)
	}
	return compareTables(before, after, touched, files, log)
}

// compareTables compares the catalog's tables before and after the copy
// with the stream's files. A table listed both times with the same files,
// and not touched by DDL during the copy, must have every file in files,
// and a tablespace the log (mariabackup's stderr) says it ignored as
// dropped must not be of a table the server still has, untouched; either
// fails the backup. touched is nil when the server keeps no DDL log
// (before 10.6): then a table rebuilt during the copy, whose old
// tablespace mariabackup rightly ignores, cannot be told from a live one
// it wrongly ignored, and only a missing file counts. It returns the tables the backup holds, for its
// manifest, sorted by name.
func compareTables(before, after map[string]*catalogTable, touched map[string]bool, files []archive.File, log []byte) ([]archive.Table, error) {
	var required, others []archive.Table
	for key, t := range after {
		b := before[key]
		if b != nil && !touched[key] && slices.Equal(b.Files, t.Files) {
			required = append(required, t.Table)
		} else {
			others = append(others, t.Table)
		}
	}
	missing := MissingTableFiles(required, files)
	var ignored []string
	for _, p := range ignoredTablespaces(log) {
		if touched == nil {
			break
		}
		key, _, _ := strings.Cut(strings.TrimSuffix(p, ".ibd"), "#")
		if t := after[key]; t != nil && !touched[key] {
			ignored = append(ignored, fmt.Sprintf("%s (%s)", t.Name, p))
		}
	}
	if len(missing) > 0 || len(ignored) > 0 {
		return nil, &MissingTablesError{Tables: missing, Ignored: ignored}
	}
	// A table created or changed by DDL during the copy is listed when
	// its files are there: its state is mariabackup's DDL handling's (and
	// the DDL race check's) to answer for.
	held := required
	for _, t := range others {
		if len(MissingTableFiles([]archive.Table{t}, files)) == 0 {
			held = append(held, t)
		}
	}
	slices.SortFunc(held, func(a, b archive.Table) int { return strings.Compare(a.Name, b.Name) })
	return held, nil
}

// ddlTables names every table of a DDL log (see parseDDLLog), whatever
// its engine, as db/table in the server's file name encoding: both names
// of a rename.
func ddlTables(data []byte) map[string]bool {
	out := map[string]bool{}
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.Split(line, "\t")
		if len(f) >= 6 {
			out[f[4]+"/"+f[5]] = true
		}
		if len(f) >= 11 && f[10] != "" {
			out[f[9]+"/"+f[10]] = true
		}
	}
	return out
}

// hiddenFromStream, when a test sets it, names files of the stream that
// never reach the archive writer: a tablespace mariabackup left out.
var hiddenFromStream func(path string) bool

// hidden reports whether a test hides path from the backup.
func hidden(path string) bool {
	return hiddenFromStream != nil && hiddenFromStream(strings.TrimPrefix(path, "./"))
}
