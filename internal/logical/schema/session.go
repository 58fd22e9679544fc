package schema

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/go-sql-driver/mysql"
)

// setting is one session variable and the value to give it.
type setting struct{ name, value string }

// withSession runs fn with the session variables set, then gives them back
// their previous values, also when fn fails or ctx ends (a connection of the
// caller's must not keep an object's sql_mode or character set). Names are
// this package's constants, never user input; values travel as parameters.
func withSession(ctx context.Context, conn *sql.Conn, settings []setting, fn func() error) (err error) {
	if len(settings) == 0 {
		return fn()
	}
	names := make([]string, len(settings))
	assign := make([]string, len(settings))
	values := make([]any, len(settings))
	for i, s := range settings {
		names[i] = "@@SESSION." + s.name
		assign[i] = "SESSION " + s.name + " = ?"
		values[i] = s.value
	}
	saved := make([]sql.NullString, len(settings))
	dest := make([]any, len(settings))
	for i := range saved {
		dest[i] = &saved[i]
	}
	if err := conn.QueryRowContext(ctx, "SELECT "+strings.Join(names, ", ")).Scan(dest...); err != nil {
		return fmt.Errorf("read session variables %s: %w", strings.Join(names, ", "), err)
	}
	set := "SET " + strings.Join(assign, ", ")
	defer func() {
		old := make([]any, len(saved))
		for i, v := range saved {
			switch n, perr := strconv.ParseInt(v.String, 10, 64); {
			case !v.Valid:
				// nil: the variable was NULL (character_set_results can be).
			case perr == nil:
				// Booleans read back as 1 or 0 and refuse the string '1'.
				old[i] = n
			default:
				old[i] = v.String
			}
		}
		// Restore even after cancellation: the connection goes back to
		// its owner, who expects the settings it had.
		if rerr := execArgs(context.WithoutCancel(ctx), conn, set, old...); rerr != nil {
			err = errors.Join(err, fmt.Errorf("restore session variables: %w", rerr))
		}
	}()
	if err := execArgs(ctx, conn, set, values...); err != nil {
		return fmt.Errorf("set session %s: %w", describe(settings), err)
	}
	return fn()
}

func describe(settings []setting) string {
	parts := make([]string, len(settings))
	for i, s := range settings {
		parts[i] = s.name + "=" + s.value
	}
	return strings.Join(parts, ", ")
}

func execArgs(ctx context.Context, conn *sql.Conn, q string, args ...any) error {
	_, err := conn.ExecContext(ctx, q, args...)
	return err
}

// useDatabase makes db the session's database: unqualified names in the
// statements that follow (SHOW CREATE output) resolve to it.
func useDatabase(ctx context.Context, conn *sql.Conn, db string) error {
	if _, err := conn.ExecContext(ctx, "USE "+mariadb.QuoteIdent(db)); err != nil {
		return fmt.Errorf("database %s: %w", db, err)
	}
	return nil
}

// serverError returns the MariaDB error number of err, or 0.
func serverError(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// Server error numbers this package reacts to.
const (
	errTableExists = 1050 // ER_TABLE_EXISTS_ERROR
	errCannotUser  = 1396 // ER_CANNOT_USER: CREATE USER/ROLE of an existing account
	// ER_PASSWORD_NO_MATCH: an account of mysql.user the server ignored
	// when it loaded the grant tables (a host name under skip-name-resolve).
	errNoMatchingUser = 1133
)
