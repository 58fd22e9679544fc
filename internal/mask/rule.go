// Package mask replaces personal data with stand-ins: it parses masking
// rules (database.table.column=function), decides for each column of a
// table which rule applies and whether the column can hold what the
// function makes, and masks single values, the same way in every table
// for the same key. It knows nothing of data files, connections, flags or
// repositories: the dump and the load hand it each value as a data file
// holds it and write what it returns.
package mask

import (
	"fmt"
	"strings"
)

// The functions a rule can name.
const (
	// FuncHash replaces a value with a keyed hash of it: a string with
	// lower-case base32 digits, an integer with an integer of the
	// column's type and sign (a keyed permutation, so that distinct
	// values stay distinct).
	FuncHash = "hash"
	// FuncFixed replaces every value with the rule's Value.
	FuncFixed = "fixed"
	// FuncNull replaces every value with NULL.
	FuncNull = "null"
	// FuncEmail replaces a value with an e-mail address at
	// example.invalid whose local part is a keyed hash of the value.
	FuncEmail = "email"
	// FuncPhone replaces every digit of a value, keeping the other
	// characters where they are.
	FuncPhone = "phone"
)

// Rule is one masking rule: the columns it names and what replaces their
// values.
type Rule struct {
	// Database and Table are names, or "" for any (written *). Column is
	// always a name.
	Database, Table, Column string
	Function                string
	Value                   string // FuncFixed's value
}

// Error is a rule that cannot be parsed or applied; nothing was masked
// or written when it is returned.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

// Refused marks the error as a refusal of what was asked: the command
// reports it as a mistake in how it was called.
func (e *Error) Refused() bool { return true }

func errorf(format string, a ...any) error { return &Error{fmt.Sprintf(format, a...)} }

// ParseRule reads a rule: database.table.column=function, where function
// is hash, null, email, phone or fixed:VALUE (VALUE is everything after
// the colon, as is). A name holding '.', '=', '`', '*' or white space is
// quoted in backticks, a backtick in it doubled (`my.db`.t.c); an
// unquoted * stands for any database or table. Function names are taken
// in any case.
func ParseRule(spec string) (Rule, error) {
	var r Rule
	bad := func(why string) (Rule, error) {
		return Rule{}, errorf("mask rule %q: %s; want database.table.column=function (hash, null, email, phone or fixed:VALUE)", spec, why)
	}
	s := strings.TrimLeft(spec, " \t")
	var names [3]string
	var wild [3]bool
	for i := range 3 {
		if i > 0 {
			if s == "" || s[0] != '.' {
				return bad("not three names separated by dots")
			}
			s = s[1:]
		}
		switch {
		case strings.HasPrefix(s, "`"):
			name, rest, ok := unquote(s)
			if !ok {
				return bad("a backtick is not closed")
			}
			if name == "" {
				return bad("an empty name")
			}
			names[i], s = name, rest
		default:
			n := strings.IndexAny(s, ".=` \t*")
			if n < 0 {
				n = len(s)
			}
			if n == 0 && strings.HasPrefix(s, "*") {
				if i == 2 {
					return bad("the column must be named (* stands for a database or a table only)")
				}
				wild[i], s = true, s[1:]
				break
			}
			if n == 0 {
				return bad("an empty name")
			}
			if s[n:] != "" && s[n] == '*' || s[n:] != "" && s[n] == '`' {
				return bad("quote a name holding * or ` in backticks")
			}
			names[i], s = s[:n], s[n:]
		}
	}
	s = strings.TrimLeft(s, " \t")
	if s == "" || s[0] != '=' {
		return bad("no =function after the column")
	}
	fn := strings.TrimLeft(s[1:], " \t")
	r = Rule{Database: names[0], Table: names[1], Column: names[2]}
	if wild[0] {
		r.Database = ""
	}
	if wild[1] {
		r.Table = ""
	}
	if prefix := fn[:min(len(fn), len(FuncFixed)+1)]; strings.EqualFold(prefix, FuncFixed+":") {
		r.Function, r.Value = FuncFixed, fn[len(prefix):]
		return r, nil
	}
	switch name := strings.ToLower(strings.TrimSpace(fn)); name {
	case FuncHash, FuncNull, FuncEmail, FuncPhone:
		r.Function = name
	case FuncFixed:
		return bad("fixed needs its value after a colon (fixed:VALUE, fixed: for the empty string)")
	default:
		return bad(fmt.Sprintf("unknown function %q", strings.TrimSpace(fn)))
	}
	return r, nil
}

// unquote reads the backtick-quoted name at the start of s.
func unquote(s string) (name, rest string, ok bool) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != '`' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '`' {
			b.WriteByte('`')
			i++
			continue
		}
		return b.String(), s[i+1:], true
	}
	return "", "", false
}

// String writes the rule back as ParseRule reads it.
func (r Rule) String() string {
	return quote(r.Database) + "." + quote(r.Table) + "." + quote(r.Column) + "=" + r.FunctionString()
}

// FunctionString is the rule's function as written: hash, fixed:VALUE, ...
func (r Rule) FunctionString() string {
	if r.Function == FuncFixed {
		return FuncFixed + ":" + r.Value
	}
	return r.Function
}

// quote writes a name of a rule: * for any, bare when ParseRule reads it
// back as is, else in backticks.
func quote(name string) string {
	if name == "" {
		return "*"
	}
	if !strings.ContainsAny(name, ".=` \t*") {
		return name
	}
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// matches reports whether the rule names column col of table db.table,
// and how specifically: 1 + one for each of database and table named.
// Database and table names compare exactly (as on a server with
// lower_case_table_names=0), column names in any case (as the server
// compares them).
func (r Rule) matches(db, table, col string) int {
	if r.Database != "" && r.Database != db || r.Table != "" && r.Table != table || !strings.EqualFold(r.Column, col) {
		return 0
	}
	n := 1
	if r.Database != "" {
		n++
	}
	if r.Table != "" {
		n++
	}
	return n
}
