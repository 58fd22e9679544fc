package logical

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/backstream/backstream/internal/logical/schema"
	"github.com/backstream/backstream/internal/mariadb"
)

// FilterError is a dump's filter that selects nothing: a name the server
// does not have (or does not show the account), or filters that together
// leave nothing to dump. A dump of nothing would say complete and become
// the newest backup, so it is refused before anything is written.
type FilterError struct{ msg string }

func (e *FilterError) Error() string { return e.msg }

// Refused marks the error as a refusal of what was asked: the command
// reports it as a mistake in how it was called.
func (e *FilterError) Refused() bool { return true }

// checkSelection refuses a dump whose filters name what the account does
// not see, or select nothing at all. The server shows an account only the
// databases and tables it holds a privilege on, so a name missing here is
// either misspelt or not readable: the message says both.
func (s *session) checkSelection(ctx context.Context, f schema.Filter) error {
	visible, err := queryColumn(ctx, s.coord, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA")
	if err != nil {
		return fmt.Errorf("list databases: %w", err)
	}
	var problems []string
	for _, flag := range []struct {
		name  string
		names []string
	}{{"--database", f.Databases}, {"--exclude-database", f.ExcludeDatabases}} {
		for _, db := range flag.names {
			if !slices.Contains(visible, db) {
				problems = append(problems, fmt.Sprintf("%s %s: the server has no such database, or the account cannot see it (it needs SELECT ON %s.*)", flag.name, db, mariadb.QuoteIdent(db)))
			}
		}
	}
	for _, flag := range []struct {
		name  string
		names []string
	}{{"--table", f.Tables}, {"--exclude-table", f.ExcludeTables}} {
		for _, t := range flag.names {
			found, err := s.tableExists(ctx, t)
			if err != nil {
				return err
			}
			if !found {
				problems = append(problems, fmt.Sprintf("%s %s: the server has no such table, or the account cannot see it (it needs SELECT on it)", flag.name, t))
			}
		}
	}
	if len(problems) > 0 {
		return &FilterError{strings.Join(problems, "; ") + " (nothing was written)"}
	}
	if len(s.catalog.Databases) == 0 {
		if len(f.Databases)+len(f.ExcludeDatabases)+len(f.Tables)+len(f.ExcludeTables) > 0 {
			return &FilterError{"the filters select nothing to dump: check --database, --table and their exclusions (nothing was written)"}
		}
		if len(s.catalog.Users) == 0 {
			return fmt.Errorf("the account sees no database to dump: a logical backup needs SELECT, SHOW VIEW, TRIGGER and EVENT on the databases it dumps (see the guide's grants for a logical backup; nothing was written)")
		}
	}
	return nil
}

// tableExists reports whether "db.table" names a table, sequence or view
// the account sees. A name may hold dots: every split is tried.
func (s *session) tableExists(ctx context.Context, full string) (bool, error) {
	for i := strings.IndexByte(full, '.'); i >= 0; i = nextDot(full, i) {
		var n int
		err := s.coord.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", full[:i], full[i+1:]).Scan(&n)
		if err != nil {
			return false, fmt.Errorf("look up table %s: %w", full, err)
		}
		if n > 0 {
			return true, nil
		}
	}
	return false, nil
}

func nextDot(s string, i int) int {
	j := strings.IndexByte(s[i+1:], '.')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

// checkReadable reads no row but every dumped column of every table, so
// that a table (or column) the account may not SELECT fails the dump
// before any lock is taken, naming the table and the grant it needs.
func (s *session) checkReadable(ctx context.Context) error {
	var account string
	if err := s.coord.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&account); err != nil {
		return fmt.Errorf("current user: %w", err)
	}
	for _, w := range s.tables {
		cols := make([]string, len(w.cols))
		for i, c := range w.cols {
			cols[i] = mariadb.QuoteIdent(c.Name)
		}
		list := "1"
		if len(cols) > 0 {
			list = strings.Join(cols, ", ")
		}
		_, err := s.coord.ExecContext(ctx, "SELECT "+list+" FROM "+w.from+" LIMIT 0")
		var me *mysql.MySQLError
		if errors.As(err, &me) && (me.Number == 1142 || me.Number == 1143) {
			return fmt.Errorf("table %s: the account %s may not read it (%s); grant it with: GRANT SELECT ON %s TO %s (nothing was written)",
				w.name(), account, me.Message, w.from, accountName(account))
		}
		if err != nil {
			return fmt.Errorf("table %s: %w", w.name(), err)
		}
	}
	return nil
}

// checkEventsVisible refuses a dump of a database whose events the
// account may not see: the server leaves them out of what it lists
// without an error, so the dump would say complete without them. SHOW
// EVENTS FROM a database checks the EVENT privilege there, through the
// account's roles too, and fails when it is missing.
func (s *session) checkEventsVisible(ctx context.Context) error {
	var account string
	if err := s.coord.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&account); err != nil {
		return fmt.Errorf("current user: %w", err)
	}
	var refused []string
	for _, d := range s.catalog.Databases {
		rows, err := s.coord.QueryContext(ctx, "SHOW EVENTS FROM "+mariadb.QuoteIdent(d.Name))
		var me *mysql.MySQLError
		if errors.As(err, &me) && (me.Number == 1044 || me.Number == 1142) {
			refused = append(refused, d.Name)
			continue
		}
		if err != nil {
			return fmt.Errorf("database %s: list its events: %w", d.Name, err)
		}
		rows.Close()
	}
	if len(refused) == 0 {
		return nil
	}
	grants := make([]string, len(refused))
	for i, d := range refused {
		grants[i] = "GRANT EVENT ON " + mariadb.QuoteIdent(d) + ".* TO " + accountName(account)
	}
	return fmt.Errorf("database %s: the account %s may not see its events, which the backup would leave out; grant it with: %s, or leave events out with --skip-events (nothing was written)",
		strings.Join(refused, ", "), account, strings.Join(grants, "; "))
}

// sessionGrants are the grants in effect for the dump's session, as the
// lines of SHOW GRANTS without FOR: the account's own, those of its
// enabled role and every role that role holds, and (10.11+) those of
// PUBLIC. information_schema's *_PRIVILEGES views leave roles out, and
// SHOW GRANTS FOR an account shows only that account's lines, so they are
// no ground for what the session may see.
type sessionGrants struct {
	account string // CURRENT_USER(): user@host
	grants  []grantLine
}

// grantLine is one line of SHOW GRANTS read: on what, which privileges.
type grantLine struct {
	on    schema.GrantObject
	privs []string
}

func (s *session) readGrants(ctx context.Context) (*sessionGrants, error) {
	g := &sessionGrants{}
	if err := s.coord.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&g.account); err != nil {
		return nil, fmt.Errorf("current user: %w", err)
	}
	lines, err := queryColumn(ctx, s.coord, "SHOW GRANTS")
	if err != nil {
		return nil, fmt.Errorf("read the account's grants (SHOW GRANTS): %w", err)
	}
	for _, l := range lines {
		// A line it cannot read proves nothing: leaving it out can only
		// refuse a backup, never let one through.
		if on, ok := schema.ParseGrant(l); ok {
			g.grants = append(g.grants, grantLine{on, schema.GrantPrivileges(l)})
		}
	}
	return g, nil
}

// holds reports whether a grant gives one of privs (or ALL PRIVILEGES) on
// database db, or on its table table when table is not "": globally, on a
// database pattern that matches db, or on that table.
func (g *sessionGrants) holds(db, table string, privs ...string) bool {
	for _, l := range g.grants {
		switch l.on.Level {
		case schema.GrantGlobal:
		case schema.GrantDatabase:
			if !likeName(l.on.Database, db) {
				continue
			}
		case schema.GrantTable:
			if table == "" || l.on.Database != db || l.on.Name != table {
				continue
			}
		default:
			continue
		}
		for _, p := range l.privs {
			if p == "ALL PRIVILEGES" || p == "ALL" || slices.Contains(privs, p) {
				return true
			}
		}
	}
	return false
}

// likeName reports whether name matches a database grant's name, which the
// server reads as a LIKE pattern: % any run of characters, _ any one, \
// escapes the next.
func likeName(pattern, name string) bool {
	p, n := []rune(pattern), []rune(name)
	for len(p) > 0 {
		switch p[0] {
		case '%':
			for i := 0; i <= len(n); i++ {
				if likeName(string(p[1:]), string(n[i:])) {
					return true
				}
			}
			return false
		case '_':
			if len(n) == 0 {
				return false
			}
		case '\\':
			if len(p) > 1 {
				p = p[1:]
			}
			fallthrough
		default:
			if len(n) == 0 || n[0] != p[0] {
				return false
			}
		}
		p, n = p[1:], n[1:]
	}
	return len(n) == 0
}

// maxNamed bounds the names one refusal lists.
const maxNamed = 10

func listNames(names []string) string {
	if len(names) <= maxNamed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxNamed], ", "), len(names)-maxNamed)
}

// checkTriggersVisible refuses a dump of a table whose triggers the
// account may not see: the server lists a table's triggers (in
// information_schema.TRIGGERS and SHOW TRIGGERS) only to an account
// holding TRIGGER on that table, or (without their statement, which SHOW
// CREATE TRIGGER then refuses loudly) some privilege beyond SELECT on it;
// to an account holding SELECT alone it lists none, without an error, so
// the dump would say complete without them (10.11 and 11.8 alike).
//
// No statement without side effects fails for want of TRIGGER (as SHOW
// EVENTS FROM does for EVENT): every read of triggers filters silently,
// only CREATE and DROP TRIGGER check it, and there is no count to compare
// against (triggers live in .TRG files, not in a table the account could
// read). So the check reads the grants in effect, SHOW GRANTS without FOR,
// which is the one statement that includes the enabled role, the roles it
// holds and PUBLIC, and wants TRIGGER (or ALL PRIVILEGES) globally, on a
// database pattern that matches, or on the table. It may refuse an
// account that could see the triggers through a grant it cannot read, never
// pass one that cannot: --skip-triggers is the escape.
func (s *session) checkTriggersVisible(ctx context.Context, g *sessionGrants) error {
	var hidden, dbs []string
	for _, d := range s.catalog.Databases {
		missing := false
		for _, t := range d.Tables {
			// A sequence has no triggers.
			if !t.Sequence && !g.holds(d.Name, t.Name, "TRIGGER") {
				hidden = append(hidden, d.Name+"."+t.Name)
				missing = true
			}
		}
		if missing {
			dbs = append(dbs, d.Name)
		}
	}
	if len(hidden) == 0 {
		return nil
	}
	grants := make([]string, len(dbs))
	for i, d := range dbs {
		grants[i] = "GRANT TRIGGER ON " + mariadb.QuoteIdent(d) + ".* TO " + accountName(g.account)
	}
	return fmt.Errorf("table %s: the account %s may not see its triggers, which the backup would leave out; grant it with: %s, or leave triggers out with --skip-triggers (nothing was written)",
		listNames(hidden), g.account, strings.Join(grants, "; "))
}

// routinePrivileges are those that make the server list every routine of
// a database (check_some_routine_access): CREATE ROUTINE, ALTER ROUTINE,
// EXECUTE and, from 11.3, SHOW CREATE ROUTINE, globally or on the database.
var routinePrivileges = []string{"CREATE ROUTINE", "ALTER ROUTINE", "EXECUTE", "SHOW CREATE ROUTINE"}

// checkRoutinesVisible refuses a dump of a database whose stored routines
// (procedures, functions, packages) the account may not all see: the
// server lists a routine only to an account that reads mysql.proc, defined
// it, or holds a privilege on it or its database, and leaves the others
// out without an error.
//
// SELECT on mysql.proc is the proof that holds on every version: it is
// the server's own test for full access to routines, and being a real
// SELECT it goes through the account's roles. Its count per database must
// not exceed what the dump listed, in case the SELECT passes where the
// server's test does not (a grant on some columns of mysql.proc). An
// account that may not read
// mysql.proc still sees every routine of a database where it holds one of
// routinePrivileges (SHOW GRANTS, role-aware as for triggers): routines
// another account defined then show without their body, which fails the
// dump loudly when it reads them. Otherwise a routine may be hidden, and
// --skip-routines is the escape.
func (s *session) checkRoutinesVisible(ctx context.Context, g *sessionGrants) error {
	counts := map[string]int{}
	err := queryRows(ctx, s.coord, "SELECT db, COUNT(*) FROM mysql.proc GROUP BY db", func(rows *sql.Rows) error {
		var db string
		var n int
		if err := rows.Scan(&db, &n); err != nil {
			return err
		}
		counts[db] = n
		return nil
	})
	var me *mysql.MySQLError
	readable := err == nil
	if err != nil && !(errors.As(err, &me) && (me.Number == 1142 || me.Number == 1143)) {
		return fmt.Errorf("count the routines in mysql.proc: %w", err)
	}
	var hidden []string
	for _, d := range s.catalog.Databases {
		switch {
		case readable && counts[d.Name] <= len(d.Routines):
		case !readable && g.holds(d.Name, "", routinePrivileges...):
		default:
			hidden = append(hidden, d.Name)
		}
	}
	if len(hidden) == 0 {
		return nil
	}
	return fmt.Errorf("database %s: the account %s may not see all its stored routines, which the backup would leave out; grant it with: GRANT SELECT ON `mysql`.`proc` TO %s, or leave routines out with --skip-routines (nothing was written)",
		listNames(hidden), g.account, accountName(g.account))
}

// queryRows calls scan for every row of q.
func queryRows(ctx context.Context, c *sql.Conn, q string, scan func(*sql.Rows) error) error {
	rows, err := c.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// accountName turns CURRENT_USER()'s user@host into 'user'@'host'.
func accountName(a string) string {
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	i := strings.LastIndexByte(a, '@')
	if i < 0 {
		return q(a)
	}
	return q(a[:i]) + "@" + q(a[i+1:])
}

// queryColumn returns the first column of q's rows.
func queryColumn(ctx context.Context, c *sql.Conn, q string) ([]string, error) {
	rows, err := c.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
