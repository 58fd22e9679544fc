package schema

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/backstream/backstream/internal/mariadb"
)

// ddlSQLMode is the sql_mode tables, sequences and views are created under.
// Their SHOW CREATE text (read under sql_mode ”) spells out everything, so
// no mode is needed to interpret it; NO_ENGINE_SUBSTITUTION makes a missing
// engine an error instead of a silent InnoDB table, and leaving out the
// strict modes lets a zero-date DEFAULT through as it did on the source;
// IGNORE_BAD_TABLE_OPTIONS takes the options the source's engine kept
// without knowing them (read under the same mode).
const ddlSQLMode = "NO_AUTO_VALUE_ON_ZERO,NO_ENGINE_SUBSTITUTION,IGNORE_BAD_TABLE_OPTIONS"

// tableSettings: explicit_defaults_for_timestamp=ON takes a TIMESTAMP
// column exactly as SHOW CREATE TABLE prints it (which spells out the
// implicit defaults of OFF), whatever the target's global setting.
var tableSettings = []setting{{"sql_mode", ddlSQLMode}, {"explicit_defaults_for_timestamp", "ON"}}

// CreateDatabase creates database db on the target as target (its name, or
// the name rename gives it), with the source's options (character set,
// collation, comment). IF NOT EXISTS: an existing database is kept as it is,
// options included, so that a resumed load can run the phase again.
func CreateDatabase(ctx context.Context, conn *sql.Conn, db *Database, target string) error {
	stmt, err := renameCreateDatabase(db.Create, target)
	if err != nil {
		return fmt.Errorf("database %s: %w", db.Name, err)
	}
	if _, err := conn.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("create database %s: %w", target, err)
	}
	return nil
}

// CreateTable creates table or sequence t in database targetDB with
// createStmt: the base of SplitCreateTable, or t.Create. A table already
// there gives an error wrapping ErrExists. The statement names the table
// unqualified (SHOW CREATE does), so the session's database becomes
// targetDB. Cross-database references in it (foreign keys, DEFAULT
// NEXTVAL(`db`.`s`)) name source databases: pass the statement through
// RenameDatabases when databases are renamed.
func CreateTable(ctx context.Context, conn *sql.Conn, targetDB string, t *Table, createStmt string) error {
	return CreateTables(ctx, conn, func(create CreateFunc) error { return create(targetDB, t, createStmt) })
}

// A CreateFunc creates a table as CreateTable does, in the session
// CreateTables set up.
type CreateFunc func(targetDB string, t *Table, createStmt string) error

// CreateTables runs fn, which creates tables with the CreateFunc it is
// given, in one session of the settings tables are created under: set once
// and restored once, and the database changed only when the next table's
// differs, so that a table costs its CREATE statement alone (on a server
// of many tables, five statements a table were most of creating them).
// fn may run other statements on conn that name their tables in full.
func CreateTables(ctx context.Context, conn *sql.Conn, fn func(CreateFunc) error) error {
	return withSession(ctx, conn, tableSettings, func() error {
		current, known := "", false
		return fn(func(targetDB string, t *Table, createStmt string) error {
			if !known || targetDB != current {
				if err := useDatabase(ctx, conn, targetDB); err != nil {
					return err
				}
				current, known = targetDB, true
			}
			_, err := conn.ExecContext(ctx, createStmt)
			switch {
			case serverError(err) == errTableExists:
				return fmt.Errorf("create %s %s.%s: %w", tableKind(t), targetDB, t.Name, ErrExists)
			case err != nil:
				return fmt.Errorf("create %s %s.%s: %w", tableKind(t), targetDB, t.Name, err)
			}
			return nil
		})
	})
}

// AlterTable runs an addIndexes or addForeignKeys statement of
// SplitCreateTable on table t of targetDB; "" does nothing. Foreign keys
// come after the indexes of every table: a foreign key needs an index on
// both sides. With foreign_key_checks=0 in the session InnoDB adds them
// without checking the rows, which the source already checked.
func AlterTable(ctx context.Context, conn *sql.Conn, targetDB string, t *Table, alter string) error {
	if alter == "" {
		return nil
	}
	if err := useDatabase(ctx, conn, targetDB); err != nil {
		return err
	}
	settings := []setting{{"sql_mode", ddlSQLMode}}
	if t.Versioned {
		// Adding keys keeps history anyway; KEEP makes sure no ALTER of a
		// versioned table is refused or drops history.
		settings = append(settings, setting{"system_versioning_alter_history", "KEEP"})
	}
	err := withSession(ctx, conn, settings, func() error {
		_, err := conn.ExecContext(ctx, alter)
		return err
	})
	if err != nil {
		return fmt.Errorf("alter table %s.%s: %w", targetDB, t.Name, err)
	}
	return nil
}

// RestoreSequence sets sequence t of targetDB to the source's state, so that
// SELECT * FROM it gives the source's row. SETVAL never moves a sequence
// back: run again on a sequence already used on the target, it does nothing.
func RestoreSequence(ctx context.Context, conn *sql.Conn, targetDB string, t *Table) error {
	if !t.Sequence {
		return fmt.Errorf("restore sequence %s.%s: not a sequence", targetDB, t.Name)
	}
	var v sql.NullInt64
	if err := conn.QueryRowContext(ctx, setValStatement(targetDB, t.Name, t.NextValue, t.CycleCount)).Scan(&v); err != nil {
		return fmt.Errorf("restore sequence %s.%s: %w", targetDB, t.Name, err)
	}
	return nil
}

// CreateViewPlaceholder creates view o in targetDB as SELECT 1 AS each of
// its columns, so that views over it can be created before it is; creating
// the real view (CREATE OR REPLACE) replaces the placeholder. mariadb-dump
// does the same.
func CreateViewPlaceholder(ctx context.Context, conn *sql.Conn, targetDB string, o *Object) error {
	if o.Kind != KindView {
		return fmt.Errorf("view placeholder %s.%s: a %s is not a view", targetDB, o.Name, o.Kind)
	}
	stmt := viewPlaceholder(targetDB, o)
	err := withSession(ctx, conn, []setting{{"sql_mode", ddlSQLMode}}, func() error {
		_, err := conn.ExecContext(ctx, stmt)
		return err
	})
	if err != nil {
		return fmt.Errorf("view placeholder %s.%s: %w", targetDB, o.Name, err)
	}
	return nil
}

// viewPlaceholder is the statement of CreateViewPlaceholder.
func viewPlaceholder(targetDB string, o *Object) string {
	cols := make([]string, len(o.Columns))
	for i, c := range o.Columns {
		cols[i] = "1 AS " + mariadb.QuoteIdent(c)
	}
	if len(cols) == 0 {
		cols = []string{"1"}
	}
	return "CREATE OR REPLACE VIEW " + mariadb.QuoteIdent(targetDB) + "." + mariadb.QuoteIdent(o.Name) + " AS SELECT " + strings.Join(cols, ", ")
}

// CreateObject creates a view, trigger, routine or event in targetDB, as
// CREATE OR REPLACE so that a phase can run again. The statement runs under
// the object's own sql_mode, character set, collation and time zone (views
// under ddlSQLMode: SHOW CREATE VIEW normalises their text), which are
// restored afterwards; a routine, trigger or event whose database collation
// differs from targetDB's is created with targetDB's default collation
// switched for the moment, as mariadb-dump does, so do not run this
// concurrently with table creation in the same database.
//
// rename maps source to target database names: it rewrites qualified names
// in view texts (see RenameDatabases for the limits) and moves a trigger
// whose text names its own database. definer, if not "", replaces the
// DEFINER (see RewriteDefiner).
func CreateObject(ctx context.Context, conn *sql.Conn, targetDB string, o *Object, rename map[string]string, definer string) error {
	if err := createObject(ctx, conn, targetDB, o, rename, definer); err != nil {
		return fmt.Errorf("create %s %s.%s: %w", o.Kind, targetDB, o.Name, err)
	}
	return nil
}

func createObject(ctx context.Context, conn *sql.Conn, targetDB string, o *Object, rename map[string]string, definer string) error {
	stmt := RewriteDefiner(o.Create, definer)
	switch o.Kind {
	case KindView:
		stmt = RenameDatabases(stmt, rename)
	case KindTrigger:
		if o.Database != targetDB {
			stmt = unqualifyTrigger(stmt, modeOf(o.SQLMode))
		}
	case KindFunction, KindProcedure, KindPackage, KindPackageBody, KindEvent:
	default:
		return fmt.Errorf("unknown object kind %q", o.Kind)
	}
	stmt, err := orReplace(stmt)
	if err != nil {
		return err
	}
	if err := useDatabase(ctx, conn, targetDB); err != nil {
		return err
	}
	text, err := EncodeFor(ctx, conn, stmt, o.CharacterSetClient)
	if err != nil {
		return err
	}
	settings := o.creationContext()
	return withDatabaseCollation(ctx, conn, targetDB, o.DatabaseCollation, func() error {
		return withSession(ctx, conn, settings, func() error {
			_, err := conn.ExecContext(ctx, text)
			return err
		})
	})
}

// EncodeFor returns stmt (UTF-8, as Read got it) in the bytes of character
// set cs, the object's character_set_client: the server takes the
// statement's bytes in that character set, and keeps it with the object.
// The server on conn converts, so every character set it knows works; a
// character cs cannot hold becomes '?', as it would have on the source.
// Without a conversion to make (ASCII text, UTF-8) it does not query.
func EncodeFor(ctx context.Context, conn *sql.Conn, stmt, cs string) (string, error) {
	if isASCII(stmt) || cs == "" || strings.HasPrefix(cs, "utf8") {
		return stmt, nil
	}
	if !isPlainName(cs) {
		return "", fmt.Errorf("character set %q: not a character set name", cs)
	}
	// The text goes as a hex literal: bytes without a character set, which
	// the inner CONVERT declares UTF-8, whatever the session's settings.
	q := "SELECT CAST(CONVERT(CONVERT(X'" + hex.EncodeToString([]byte(stmt)) + "' USING utf8mb4) USING " + cs + ") AS BINARY)"
	var b []byte
	if err := conn.QueryRowContext(ctx, q).Scan(&b); err != nil {
		return "", fmt.Errorf("convert statement to %s: %w", cs, err)
	}
	return string(b), nil
}

// withDatabaseCollation runs fn with targetDB's default collation set to
// collation, if that is not "" and differs, and sets it back afterwards.
// The server records the database collation with each routine, trigger and
// event (SHOW CREATE shows it) and takes it from the database's default.
func withDatabaseCollation(ctx context.Context, conn *sql.Conn, targetDB, collation string, fn func() error) (err error) {
	if collation == "" {
		return fn()
	}
	var current string
	if err := conn.QueryRowContext(ctx, "SELECT DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", targetDB).Scan(&current); err != nil {
		return fmt.Errorf("database %s: read collation: %w", targetDB, err)
	}
	if current == collation {
		return fn()
	}
	if !isPlainName(collation) || !isPlainName(current) {
		return fmt.Errorf("database %s: collation %q or %q: not a collation name", targetDB, collation, current)
	}
	alter := "ALTER DATABASE " + mariadb.QuoteIdent(targetDB) + " COLLATE "
	if _, err := conn.ExecContext(ctx, alter+collation); err != nil {
		return fmt.Errorf("database %s: switch collation to %s: %w", targetDB, collation, err)
	}
	defer func() {
		if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), alter+current); rerr != nil {
			err = errors.Join(err, fmt.Errorf("database %s: restore collation %s: %w", targetDB, current, rerr))
		}
	}()
	return fn()
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// isPlainName accepts character set and collation names, which the server
// does not take as parameters and so go into statement text.
func isPlainName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')) {
			return false
		}
	}
	return true
}

// CreateAccount creates a role (CREATE ROLE) or a user (its SHOW CREATE USER
// statement, password hash and authentication plugin included). An account
// already on the target is never touched: the error then wraps ErrExists,
// and the caller reports it as kept and skips its grants. That includes an
// account an interrupted earlier run created: a resuming caller must
// remember which accounts it created itself and run GrantAccount and
// SetDefaultRole again for those (both are harmless to repeat).
//
// The session's account becomes an administrator of each role it creates
// (CREATE ROLE's WITH ADMIN CURRENT_USER), as on the source for the role's
// creator; on the target that is the restoring account.
func CreateAccount(ctx context.Context, conn *sql.Conn, a *Account) error {
	return createAccount(ctx, conn, a, false)
}

// ReplaceAccount is CreateAccount for an account that may exist: CREATE OR
// REPLACE drops it first, its grants with it.
func ReplaceAccount(ctx context.Context, conn *sql.Conn, a *Account) error {
	return createAccount(ctx, conn, a, true)
}

func createAccount(ctx context.Context, conn *sql.Conn, a *Account, replace bool) error {
	if !replace {
		var n int
		if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM mysql.global_priv WHERE User = ? AND Host = ?", a.User, a.Host).Scan(&n); err != nil {
			return fmt.Errorf("account %s: %w", a, err)
		}
		if n > 0 {
			return fmt.Errorf("account %s: %w", a, ErrExists)
		}
	}
	stmt := a.Create
	if a.Role {
		stmt = "CREATE ROLE " + a.String()
	}
	if stmt == "" {
		return fmt.Errorf("account %s: no CREATE USER statement", a)
	}
	if replace {
		var err error
		if stmt, err = orReplace(stmt); err != nil {
			return fmt.Errorf("account %s: %w", a, err)
		}
	}
	if _, err := conn.ExecContext(ctx, stmt); err != nil {
		if serverError(err) == errCannotUser {
			return fmt.Errorf("account %s: %w (%v)", a, ErrExists, err)
		}
		return fmt.Errorf("create account %s: %w", a, err)
	}
	return nil
}

// GrantAccount runs the account's grants, with database names renamed (see
// RenameDatabases). Every grant is tried; the error lists those that failed
// (a grant on a table the dump left out, or on a role kept on the target
// that the restoring account may not grant).
func GrantAccount(ctx context.Context, conn *sql.Conn, a *Account, rename map[string]string) error {
	var errs []error
	for _, g := range a.Grants {
		if _, err := conn.ExecContext(ctx, RenameDatabases(g, rename)); err != nil {
			errs = append(errs, fmt.Errorf("account %s: %s: %w", a, g, err))
		}
	}
	return errors.Join(errs...)
}

// SetDefaultRole sets the account's default role; nothing if it has none.
// It comes last: the role must be granted to the account first.
func SetDefaultRole(ctx context.Context, conn *sql.Conn, a *Account) error {
	if a.DefaultRole == "" || a.Role {
		return nil
	}
	stmt := "SET DEFAULT ROLE " + mariadb.QuoteIdent(a.DefaultRole) + " FOR " + a.String()
	if _, err := conn.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("account %s: set default role %s: %w", a, a.DefaultRole, err)
	}
	return nil
}

// AccountOptions say how ApplyAccounts treats the target.
type AccountOptions struct {
	Rename map[string]string // source -> target database, for grants
	// Replace replaces accounts the target already has (CREATE OR REPLACE:
	// their old grants go), except the session's own account, which is
	// always kept: replacing it could lock the restore out.
	Replace bool
	// Ours reports the accounts an earlier, interrupted run of the same
	// load created or replaced: they get their grants again.
	Ours func(*Account) bool
	// Created hears of each account as soon as it is created or replaced,
	// so that the caller can record it before anything else happens.
	Created func(*Account) error
	// Grant picks the grants to run; nil runs all of them.
	Grant func(a *Account, grant string) bool
}

// AccountsResult says what ApplyAccounts did with each account.
type AccountsResult struct {
	Created, Replaced, Kept []*Account
}

// ApplyAccounts creates the accounts (roles before users, as Read orders
// them), then grants to those it created or replaced, then sets their
// default roles. Accounts the target has are kept as they are (reported in
// Kept) unless o.Replace. Grants are all tried; their errors come back
// together after the default roles.
func ApplyAccounts(ctx context.Context, conn *sql.Conn, accounts []*Account, o AccountOptions) (res AccountsResult, err error) {
	var self string
	if o.Replace {
		if err := conn.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&self); err != nil {
			return res, fmt.Errorf("current user: %w", err)
		}
	}
	var mine []*Account
	for _, roles := range []bool{true, false} {
		for _, a := range accounts {
			if a.Role != roles {
				continue
			}
			err := CreateAccount(ctx, conn, a)
			replaced := false
			if errors.Is(err, ErrExists) && o.Replace && !(o.Ours != nil && o.Ours(a)) && a.User+"@"+a.Host != self {
				replaced, err = true, ReplaceAccount(ctx, conn, a)
			}
			switch {
			case errors.Is(err, ErrExists) && o.Ours != nil && o.Ours(a):
				mine = append(mine, a)
			case errors.Is(err, ErrExists):
				res.Kept = append(res.Kept, a)
			case err != nil:
				return res, err
			default:
				if o.Created != nil {
					if err := o.Created(a); err != nil {
						return res, err
					}
				}
				if replaced {
					res.Replaced = append(res.Replaced, a)
				} else {
					res.Created = append(res.Created, a)
				}
				mine = append(mine, a)
			}
		}
	}
	var errs []error
	for _, a := range mine {
		b := *a
		if o.Grant != nil {
			b.Grants = nil
			for _, g := range a.Grants {
				if o.Grant(a, g) {
					b.Grants = append(b.Grants, g)
				}
			}
		}
		if err := GrantAccount(ctx, conn, &b, o.Rename); err != nil {
			errs = append(errs, err)
		}
	}
	for _, a := range mine {
		if err := SetDefaultRole(ctx, conn, a); err != nil {
			errs = append(errs, err)
		}
	}
	return res, errors.Join(errs...)
}

// creationContext is the session an object was created in, as SHOW
// CREATE recorded it: its sql_mode (a view's is the one tables are
// created under: SHOW CREATE VIEW normalises its text), character set,
// collation and time zone. Creating it again in that session makes the
// same object.
func (o *Object) creationContext() []setting {
	settings := []setting{{"sql_mode", o.SQLMode}}
	if o.Kind == KindView {
		settings[0].value = ddlSQLMode
	}
	if o.CharacterSetClient != "" {
		settings = append(settings, setting{"character_set_client", o.CharacterSetClient})
	}
	if o.CollationConnection != "" {
		settings = append(settings, setting{"collation_connection", o.CollationConnection})
	}
	if o.TimeZone != "" {
		settings = append(settings, setting{"time_zone", o.TimeZone})
	}
	return settings
}
