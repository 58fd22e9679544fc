package physical

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// ddlLogName is the file a server (MariaDB 10.6 and later) writes in its
// datadir from BACKUP STAGE START until BLOCK_DDL: one line for each DDL
// statement that ran meanwhile. It is truncated at the next BACKUP STAGE
// START, so after a backup it holds exactly the DDL that ran during the
// copy.
const ddlLogName = "ddl.log"

// DDLRaceError is a backup that DDL on tables mariabackup copies as files
// (every engine but InnoDB: Aria, MyISAM, ...) ran during, and whose
// tables backstream could not take again under BLOCK_COMMIT (see
// retake): their copy may hold a state of theirs other than the one at
// the recorded position, or none (a table copied under a name it had for
// a moment). mariabackup means to handle that DDL, but does not always,
// so such a backup is never committed.
type DDLRaceError struct {
	Tables []string // each table, with its engine and the statements, e.g. "r.a (Aria: RENAME, ALTER)", "r.b (InnoDB to Aria: ALTER)"
	// Failed is mariabackup's failure, when the race made it fail (a
	// table's file gone between its listing and its copy).
	Failed error
}

func (e *DDLRaceError) Error() string {
	if e.Failed != nil {
		return fmt.Sprintf("DDL ran while mariabackup copied these tables, and mariabackup failed: %s: %v",
			strings.Join(e.Tables, ", "), e.Failed)
	}
	return fmt.Sprintf("DDL ran while mariabackup copied these tables, so the copy may not match the backup's position: %s",
		strings.Join(e.Tables, ", "))
}

func (e *DDLRaceError) Unwrap() error { return e.Failed }

// racedDDL reads the server's DDL log of the backup that started at
// started and returns what it names of other engines than InnoDB (see
// parseDDLLog).
func racedDDL(datadir string, started time.Time) ([]ddlEntry, error) {
	data, err := ddlLog(datadir, started)
	if err != nil || data == nil {
		return nil, err
	}
	return parseDDLLog(data), nil
}

// ddlLog reads the server's DDL log of the backup that started at
// started. A log older than started belongs to an earlier backup: the
// server keeps none (before 10.6), and nothing is known (nil).
func ddlLog(datadir string, started time.Time) ([]byte, error) {
	name := filepath.Join(datadir, ddlLogName)
	st, err := os.Stat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the server's DDL log: %w", err)
	}
	// The file's times have the file system's resolution; a second of
	// slack only ever counts an older log as this backup's, which errs
	// towards refusing.
	if st.ModTime().Before(started.Add(-time.Second)) {
		return nil, nil
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("the server's DDL log: %w", err)
	}
	return data, nil
}

// ddlEntry is a table, or a database, that DDL of the server's DDL log
// touched, in the server's file name encoding (@0020 for a space, ...).
type ddlEntry struct {
	DB, Table string   // Table is "" for a database's own DDL
	Engine    string   // e.g. "Aria", "InnoDB to Aria", "DATABASE"
	Stmts     []string // e.g. RENAME, ALTER
}

// String is the entry as a refusal names it: "r.b (InnoDB to Aria: ALTER)",
// "pe_db1. (DATABASE: CREATE, DROP)".
func (e ddlEntry) String() string {
	return fmt.Sprintf("%s.%s (%s: %s)", e.DB, e.Table, e.Engine, strings.Join(e.Stmts, ", "))
}

// entryNames are the entries as a refusal names them.
func entryNames(es []ddlEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.String())
	}
	return out
}

// parseDDLLog lists the tables of a DDL log that are not InnoDB, before
// or after the statement, with their engine ("<old engine> to <new
// engine>" for one whose engine the statement changed) and statements, in
// the order the log first names them; a rename names both the old and the
// new name.
//
// A database's own DDL (CREATE, ALTER and DROP DATABASE; engine
// "DATABASE") is listed too, with Table "". mariabackup alone restores
// such DDL, and DDL on Aria, MyISAM, ... tables and changes of engine to
// or from InnoDB, wrongly at times (docs/architecture.md, "DDL during a
// physical backup"), so everything listed is taken again under
// BLOCK_COMMIT, or the backup is retried, then refused. A line's
// fields, tab-separated: time, statement, engine, partitioned, database,
// table, table id, then for a rename the new engine, partitioned,
// database, table and id. Names are in the server's file name encoding
// (@0020 for a space, ...).
func parseDDLLog(data []byte) []ddlEntry {
	var out []ddlEntry
	index := map[[2]string]int{}
	note := func(db, table, engine, stmt string) {
		k := [2]string{db, table}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, ddlEntry{DB: db, Table: table, Engine: engine})
		}
		if !slices.Contains(out[i].Stmts, stmt) {
			out[i].Stmts = append(out[i].Stmts, stmt)
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) < 6 {
			continue
		}
		field := func(i int) string {
			if i < len(f) {
				return f[i]
			}
			return ""
		}
		stmt, engine, newEngine := field(1), field(2), field(7)
		if strings.EqualFold(engine, "InnoDB") && (newEngine == "" || strings.EqualFold(newEngine, "InnoDB")) {
			continue
		}
		// An ALTER that changes the engine names the one the table had and
		// the one it got: "InnoDB to Aria" is a table copied as files now.
		label := engine
		if newEngine != "" && !strings.EqualFold(newEngine, engine) {
			label = engine + " to " + newEngine
		}
		note(field(4), field(5), label, stmt)
		if field(10) != "" && field(9)+"."+field(10) != field(4)+"."+field(5) {
			note(field(9), field(10), newEngine, stmt)
		}
	}
	return out
}

// tableOfFile names the table a datadir file belongs to, as db.table
// ("r/t1.MYD" is r.t1), in the server's file name encoding; a file
// outside a database directory keeps its path.
func tableOfFile(p string) string {
	db, file, ok := strings.Cut(strings.TrimPrefix(p, "./"), "/")
	if !ok || strings.Contains(file, "/") {
		return p
	}
	return db + "." + strings.TrimSuffix(file, filepath.Ext(file))
}
