package schema

import (
	"strings"

	"github.com/backstream/backstream/internal/mariadb"
)

// Grant levels: what a line of SHOW GRANTS grants on.
const (
	GrantGlobal   = "global"   // ON *.*
	GrantDatabase = "database" // ON `db`.*
	GrantTable    = "table"    // ON `db`.`t`, also with column lists; a view is a table here
	GrantRoutine  = "routine"  // ON FUNCTION | PROCEDURE | PACKAGE | PACKAGE BODY `db`.`r`
	GrantOther    = "other"    // a role granted (GRANT `r` TO ...), PROXY ON ...
)

// GrantObject is what one line of SHOW GRANTS names: its level, and for a
// database, table or routine grant the (source) database and the name.
type GrantObject struct {
	Level    string
	Kind     string // routines: KindFunction, KindProcedure, KindPackage or KindPackageBody
	Database string
	Name     string // "" for a database grant
}

// String is the object as SQL names it, for messages.
func (o GrantObject) String() string {
	switch o.Level {
	case GrantDatabase:
		return mariadb.QuoteIdent(o.Database) + ".*"
	case GrantTable:
		return mariadb.QuoteIdent(o.Database) + "." + mariadb.QuoteIdent(o.Name)
	case GrantRoutine:
		return o.Kind + " " + mariadb.QuoteIdent(o.Database) + "." + mariadb.QuoteIdent(o.Name)
	case GrantGlobal:
		return "*.*"
	}
	return o.Level
}

// ParseGrant reads what a GRANT line of SHOW GRANTS grants on. The first
// ON outside names, strings and column lists ends the privileges; a line
// without one grants a role. ok is false for text it cannot read.
func ParseGrant(g string) (o GrantObject, ok bool) {
	toks := significant(lex(g, lexMode{}))
	if len(toks) == 0 || !toks[0].is(g, "GRANT") {
		return o, false
	}
	depth, on := 0, -1
	for i := 1; i < len(toks) && on < 0; i++ {
		switch {
		case toks[i].punct(g, '('):
			depth++
		case toks[i].punct(g, ')'):
			depth--
		case depth == 0 && toks[i].is(g, "TO"):
			return GrantObject{Level: GrantOther}, true
		case depth == 0 && toks[i].is(g, "ON"):
			on = i
		}
	}
	if on < 0 {
		return o, false
	}
	if on == 2 && toks[1].is(g, "PROXY") {
		return GrantObject{Level: GrantOther}, true
	}
	rest := toks[on+1:]
	switch {
	case len(rest) > 1 && rest[0].is(g, "PACKAGE") && rest[1].is(g, "BODY"):
		o.Level, o.Kind, rest = GrantRoutine, KindPackageBody, rest[2:]
	case len(rest) > 0 && rest[0].is(g, "PACKAGE"):
		o.Level, o.Kind, rest = GrantRoutine, KindPackage, rest[1:]
	case len(rest) > 0 && rest[0].is(g, "FUNCTION"):
		o.Level, o.Kind, rest = GrantRoutine, KindFunction, rest[1:]
	case len(rest) > 0 && rest[0].is(g, "PROCEDURE"):
		o.Level, o.Kind, rest = GrantRoutine, KindProcedure, rest[1:]
	case len(rest) > 0 && rest[0].is(g, "TABLE"):
		rest = rest[1:]
	}
	// <db>.<name> or <db>.* or *.*, then TO.
	if len(rest) < 4 || !rest[1].punct(g, '.') || !rest[3].is(g, "TO") {
		return GrantObject{}, false
	}
	part := func(t token) (string, bool) {
		switch {
		case t.punct(g, '*'):
			return "*", true
		case t.kind == tokIdent:
			return t.name(g), true
		case t.kind == tokWord:
			return t.text(g), true
		}
		return "", false
	}
	db, ok1 := part(rest[0])
	name, ok2 := part(rest[2])
	if !ok1 || !ok2 {
		return GrantObject{}, false
	}
	switch {
	case db == "*" && name == "*" && o.Level == "":
		return GrantObject{Level: GrantGlobal}, true
	case db == "*":
		return GrantObject{}, false
	case name == "*" && o.Level == "":
		return GrantObject{Level: GrantDatabase, Database: db}, true
	case name == "*":
		return GrantObject{}, false
	}
	if o.Level == "" {
		o.Level = GrantTable
	}
	o.Database, o.Name = db, name
	return o, true
}

// passwordless reports whether a CREATE USER text gives the account no
// credential: no IDENTIFIED clause, or only empty passwords in it.
func passwordless(create string) bool {
	toks := significant(lex(create, lexMode{}))
	for i, t := range toks {
		if !t.is(create, "IDENTIFIED") {
			continue
		}
		// IDENTIFIED BY [PASSWORD] 'x' | VIA plugin [USING 'x'] [OR ...]:
		// any non-empty string, or any plugin other than the password
		// ones without a string, is a credential.
		for _, u := range toks[i+1:] {
			switch {
			case u.is(create, "REQUIRE") || u.is(create, "WITH") || u.is(create, "ACCOUNT"):
				return true
			case u.kind == tokString && len(u.text(create)) > 2:
				return false
			case u.kind == tokWord && isCredentialPlugin(u.text(create)):
				return false
			}
		}
		return true
	}
	return true
}

// isCredentialPlugin: an authentication plugin that needs no password of
// the account to authenticate it (the operating system, a key, Kerberos).
func isCredentialPlugin(w string) bool {
	switch strings.ToLower(w) {
	case "unix_socket", "auth_socket", "gssapi", "pam", "named_pipe", "auth_gssapi_client", "parsec":
		return true
	}
	return false
}

// Passwordless reports whether the account is a user that can log in
// without any password or other credential. Roles cannot log in.
func (a *Account) Passwordless() bool {
	return !a.Role && passwordless(a.Create)
}

// GrantPrivileges returns the privileges a GRANT line of SHOW GRANTS gives,
// upper case and without column lists ("SELECT", "SHOW CREATE ROUTINE",
// "ALL PRIVILEGES"); nil for a line that grants a role or that it cannot
// read.
func GrantPrivileges(g string) []string {
	toks := significant(lex(g, lexMode{}))
	if len(toks) == 0 || !toks[0].is(g, "GRANT") {
		return nil
	}
	var privs, words []string
	depth := 0
	for _, t := range toks[1:] {
		switch {
		case t.punct(g, '('):
			depth++
		case t.punct(g, ')'):
			depth--
		case depth > 0:
		case t.punct(g, ','):
			if len(words) > 0 {
				privs = append(privs, strings.Join(words, " "))
			}
			words = nil
		case t.is(g, "ON"):
			if len(words) > 0 {
				privs = append(privs, strings.Join(words, " "))
			}
			return privs
		case t.kind == tokWord:
			words = append(words, strings.ToUpper(t.text(g)))
		default:
			// A name or a string before ON: a role granted, not a privilege.
			return nil
		}
	}
	return nil
}
