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
