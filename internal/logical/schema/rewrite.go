package schema

import (
	"fmt"
	"strings"

	"github.com/backstream/backstream/internal/mariadb"
)

// objectWords end the header of a CREATE statement of a view, trigger,
// routine or event: DEFINER and OR REPLACE come before them.
var objectWords = []string{"VIEW", "TRIGGER", "FUNCTION", "PROCEDURE", "PACKAGE", "EVENT"}

// header returns the significant tokens of stmt before its object word
// (VIEW, TRIGGER, ...), or nil if stmt does not start with CREATE.
func header(stmt string, toks []token) []token {
	if len(toks) == 0 || !toks[0].is(stmt, "CREATE") {
		return nil
	}
	for i, t := range toks {
		for _, w := range objectWords {
			if t.is(stmt, w) {
				return toks[:i]
			}
		}
	}
	return nil
}

// RewriteDefiner replaces the DEFINER=... clause of a CREATE statement of a
// view, trigger, routine or event with definer, given as a user writes it:
// user@host, 'user'@'host', `user`@`host`, "user"@"host", a role name, or
// CURRENT_USER. The account is split at its last @ outside quotes (a user
// name may hold @, a host name cannot). "" leaves stmt as it is, and so does
// a statement without a DEFINER clause (SHOW CREATE always prints one).
func RewriteDefiner(stmt, definer string) string {
	definer = strings.TrimSpace(definer)
	if definer == "" {
		return stmt
	}
	toks := significant(lex(stmt, lexMode{}))
	head := header(stmt, toks)
	for i, t := range head {
		if !t.is(stmt, "DEFINER") {
			continue
		}
		// "SQL SECURITY DEFINER" is not the clause; DEFINER = account is.
		j := i + 2
		if j >= len(head) || !head[i+1].punct(stmt, '=') {
			continue
		}
		// The account: name [@ host], or CURRENT_USER [()].
		end := head[j].end
		if j+2 < len(head) && (head[j+1].punct(stmt, '@') || (head[j+1].punct(stmt, '(') && head[j+2].punct(stmt, ')'))) {
			end = head[j+2].end
		}
		return stmt[:head[i].start] + "DEFINER=" + formatAccount(definer) + stmt[end:]
	}
	return stmt
}

// formatAccount quotes an account the user gave for a DEFINER clause.
func formatAccount(a string) string {
	if strings.EqualFold(a, "CURRENT_USER") || strings.EqualFold(a, "CURRENT_USER()") {
		return "CURRENT_USER"
	}
	at := -1
	var quote byte
	for i := 0; i < len(a); i++ {
		switch c := a[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			quote = c
		case c == '@':
			at = i
		}
	}
	if at < 0 {
		return mariadb.QuoteIdent(unquoteName(a))
	}
	return mariadb.QuoteIdent(unquoteName(a[:at])) + "@" + mariadb.QuoteIdent(unquoteName(a[at+1:]))
}

// unquoteName strips one level of ', " or ` quotes, undoing doubled quotes.
func unquoteName(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 {
		if q := s[0]; (q == '\'' || q == '"' || q == '`') && s[len(s)-1] == q {
			return strings.ReplaceAll(s[1:len(s)-1], string(q)+string(q), string(q))
		}
	}
	return s
}

// orReplace turns "CREATE ..." into "CREATE OR REPLACE ..." unless it says so
// already; the server does not keep the OR REPLACE in the text it stores
// (SHOW CREATE TRIGGER shows the original statement without it).
func orReplace(stmt string) (string, error) {
	toks := significant(lex(stmt, lexMode{}))
	if len(toks) < 2 || !toks[0].is(stmt, "CREATE") {
		return "", fmt.Errorf("not a CREATE statement: %.40q", stmt)
	}
	if toks[1].is(stmt, "OR") {
		return stmt, nil
	}
	return stmt[:toks[0].end] + " OR REPLACE" + stmt[toks[0].end:], nil
}

// RenameDatabases rewrites every `src`. qualifier in stmt to `dst`. for each
// src -> dst of rename: the database names SHOW CREATE VIEW prints before
// tables of other databases, SHOW CREATE TABLE before foreign key targets
// and sequences of other databases (DEFAULT NEXTVAL(`db`.`s`)), SHOW GRANTS
// before tables and routines.
//
// Only backquoted names followed directly by a dot change, as SHOW CREATE
// prints them; strings and comments never change. The limits: a table alias
// spelled like a renamed database (`src`.`column`) changes too, and the
// bodies of triggers, routines and events (the text as their author wrote
// it, qualified or not, also inside dynamic SQL) are not rewritten.
func RenameDatabases(stmt string, rename map[string]string) string {
	if len(rename) == 0 {
		return stmt
	}
	toks := lex(stmt, lexMode{})
	var b strings.Builder
	last := 0
	for i, t := range toks {
		if t.kind != tokIdent || i+1 >= len(toks) || !toks[i+1].punct(stmt, '.') {
			continue
		}
		dst, ok := rename[t.name(stmt)]
		if !ok || dst == t.name(stmt) {
			continue
		}
		b.WriteString(stmt[last:t.start])
		b.WriteString(mariadb.QuoteIdent(dst))
		last = t.end
	}
	if last == 0 {
		return stmt
	}
	b.WriteString(stmt[last:])
	return b.String()
}

// unqualifyTrigger drops the database qualifier of the trigger's own name and
// of its table in a CREATE TRIGGER header ("trigger db.trg before insert on
// db.t"): SHOW CREATE TRIGGER shows the statement as written, and a
// qualifier would create the trigger in the source database. Unqualified,
// it goes to the session's database.
func unqualifyTrigger(stmt string, m lexMode) string {
	toks := significant(lex(stmt, m))
	isName := func(i int) bool {
		return i < len(toks) && (toks[i].kind == tokIdent || toks[i].kind == tokWord)
	}
	// qualified reports whether a db.name starts at toks[i].
	qualified := func(i int) bool {
		return isName(i) && i+2 < len(toks) && toks[i+1].punct(stmt, '.') && isName(i+2)
	}
	var cuts [][2]int
	for i := 0; i < len(toks); i++ {
		if toks[i].is(stmt, "TRIGGER") {
			j := i + 1
			if j+2 < len(toks) && toks[j].is(stmt, "IF") && toks[j+1].is(stmt, "NOT") && toks[j+2].is(stmt, "EXISTS") {
				j += 3
			}
			if qualified(j) {
				cuts = append(cuts, [2]int{toks[j].start, toks[j+2].start})
			}
			// The table follows the first ON of the header.
			for k := j; k < len(toks); k++ {
				if toks[k].is(stmt, "ON") {
					if qualified(k + 1) {
						cuts = append(cuts, [2]int{toks[k+1].start, toks[k+3].start})
					}
					break
				}
			}
			break
		}
	}
	for i := len(cuts) - 1; i >= 0; i-- {
		stmt = stmt[:cuts[i][0]] + stmt[cuts[i][1]:]
	}
	return stmt
}

// renameCreateDatabase replaces the database name of a SHOW CREATE DATABASE
// statement and adds IF NOT EXISTS.
func renameCreateDatabase(stmt, target string) (string, error) {
	toks := significant(lex(stmt, lexMode{}))
	i := 0
	if len(toks) < 3 || !toks[0].is(stmt, "CREATE") || !(toks[1].is(stmt, "DATABASE") || toks[1].is(stmt, "SCHEMA")) {
		return "", fmt.Errorf("not a CREATE DATABASE statement: %.40q", stmt)
	}
	i = 2
	if i+2 < len(toks) && toks[i].is(stmt, "IF") && toks[i+1].is(stmt, "NOT") && toks[i+2].is(stmt, "EXISTS") {
		i += 3
	}
	if i >= len(toks) || (toks[i].kind != tokIdent && toks[i].kind != tokWord) {
		return "", fmt.Errorf("CREATE DATABASE without a name: %.40q", stmt)
	}
	return "CREATE DATABASE IF NOT EXISTS " + mariadb.QuoteIdent(target) + stmt[toks[i].end:], nil
}
