package schema

import (
	"fmt"
	"strings"
)

type elemKind int

const (
	elemColumn  elemKind = iota
	elemPrimary          // PRIMARY KEY
	elemUnique           // UNIQUE KEY
	elemKey              // KEY, INDEX, FULLTEXT, SPATIAL
	elemForeign          // [CONSTRAINT `n`] FOREIGN KEY
	elemOther            // CHECK constraints, PERIOD FOR, anything else kept as is
)

// element is one entry of the parenthesised list of a CREATE TABLE.
type element struct {
	text    string // without surrounding space
	kind    elemKind
	name    string   // column name, or key name
	columns []string // key columns, in key order
	autoInc bool     // a column with AUTO_INCREMENT
	hash    bool     // a key USING HASH (long unique)
}

// createTable is a CREATE TABLE statement cut into its parts.
type createTable struct {
	head  string // "CREATE TABLE `t` ": everything before the "("
	name  string // the table name as written, quotes and qualifier included
	elems []element
	tail  string // ") ENGINE=... PARTITION BY ...": from the closing ")" on
}

// parseCreateTable parses SHOW CREATE TABLE output. It knows that output's
// shape (one element per line, every name quoted, which sql_mode ” gives)
// but relies only on the grammar: elements are the top-level comma-separated
// parts of the first parenthesised list.
func parseCreateTable(stmt string) (*createTable, error) {
	toks := lex(stmt, lexMode{})
	sig := significant(toks)
	i := 0
	word := func(w string) bool {
		if i < len(sig) && sig[i].is(stmt, w) {
			i++
			return true
		}
		return false
	}
	if !word("CREATE") {
		return nil, fmt.Errorf("not a CREATE TABLE statement")
	}
	if word("OR") && !word("REPLACE") {
		return nil, fmt.Errorf("not a CREATE TABLE statement")
	}
	word("TEMPORARY")
	if !word("TABLE") {
		return nil, fmt.Errorf("not a CREATE TABLE statement")
	}
	if word("IF") && !(word("NOT") && word("EXISTS")) {
		return nil, fmt.Errorf("CREATE TABLE: malformed IF NOT EXISTS")
	}
	// The name: a quoted or bare name, possibly qualified.
	if i >= len(sig) || (sig[i].kind != tokIdent && sig[i].kind != tokWord) {
		return nil, fmt.Errorf("CREATE TABLE: no table name")
	}
	nameStart := sig[i].start
	i++
	if i+1 < len(sig) && sig[i].punct(stmt, '.') && (sig[i+1].kind == tokIdent || sig[i+1].kind == tokWord) {
		i += 2
	}
	nameEnd := sig[i-1].end
	if i >= len(sig) || !sig[i].punct(stmt, '(') {
		return nil, fmt.Errorf("CREATE TABLE %s: no column list (CREATE ... LIKE or ... SELECT are not SHOW CREATE TABLE output)", stmt[nameStart:nameEnd])
	}
	ct := &createTable{head: stmt[:sig[i].start], name: stmt[nameStart:nameEnd]}
	open := sig[i].start

	// Split the list at top-level commas.
	depth := 0
	elemStart := open + 1
	closeAt := -1
	for _, t := range toks {
		if t.start <= open || t.kind != tokPunct {
			continue
		}
		switch stmt[t.start] {
		case '(':
			depth++
		case ')':
			if depth == 0 {
				closeAt = t.start
			} else {
				depth--
			}
		case ',':
			if depth == 0 {
				if err := ct.add(stmt[elemStart:t.start]); err != nil {
					return nil, err
				}
				elemStart = t.end
			}
		}
		if closeAt >= 0 {
			break
		}
	}
	if closeAt < 0 {
		return nil, fmt.Errorf("CREATE TABLE %s: unbalanced parentheses", ct.name)
	}
	if err := ct.add(stmt[elemStart:closeAt]); err != nil {
		return nil, err
	}
	ct.tail = stmt[closeAt:]
	return ct, nil
}

// add classifies one element and appends it.
func (ct *createTable) add(text string) error {
	text = strings.TrimSpace(text)
	toks := significant(lex(text, lexMode{}))
	if len(toks) == 0 {
		return fmt.Errorf("CREATE TABLE %s: empty element in the column list", ct.name)
	}
	if all := lex(text, lexMode{}); all[len(all)-1].kind == tokComment && text[all[len(all)-1].start] != '/' {
		// A -- or # comment ends at the line's end: keep that end, or the
		// comma that follows the element when it is joined would be
		// commented out.
		text += "\n"
	}
	e := element{text: text, kind: elemOther}
	first := toks[0]
	switch {
	case first.kind == tokIdent:
		e.kind = elemColumn
		e.name = first.name(text)
		for _, t := range toks[1:] {
			if t.is(text, "AUTO_INCREMENT") {
				e.autoInc = true
			}
		}
	case first.is(text, "PRIMARY"):
		e.kind = elemPrimary
	case first.is(text, "UNIQUE"):
		e.kind = elemUnique
	case first.is(text, "KEY"), first.is(text, "INDEX"), first.is(text, "FULLTEXT"), first.is(text, "SPATIAL"):
		e.kind = elemKey
	case first.is(text, "FOREIGN"):
		e.kind = elemForeign
	case first.is(text, "CONSTRAINT"):
		// CONSTRAINT [`name`] FOREIGN KEY ... or CHECK (...).
		for _, t := range toks[1:min(3, len(toks))] {
			if t.is(text, "FOREIGN") {
				e.kind = elemForeign
			}
		}
	case first.kind == tokWord && !isKeyword(first.text(text)):
		// A bare column name: not SHOW CREATE's style, but valid SQL.
		e.kind = elemColumn
		e.name = first.text(text)
	}
	if e.kind == elemPrimary || e.kind == elemUnique || e.kind == elemKey {
		e.name, e.columns, e.hash = keyParts(text, toks)
		if e.columns == nil {
			return fmt.Errorf("CREATE TABLE %s: key without a column list: %s", ct.name, text)
		}
	}
	ct.elems = append(ct.elems, e)
	return nil
}

// isKeyword lists the words that start a non-column element.
func isKeyword(w string) bool {
	switch strings.ToUpper(w) {
	case "PRIMARY", "UNIQUE", "KEY", "INDEX", "FULLTEXT", "SPATIAL", "FOREIGN", "CONSTRAINT", "CHECK", "PERIOD":
		return true
	}
	return false
}

// keyParts returns a key's name (the name before its column list), its
// columns, and whether it is USING HASH.
func keyParts(text string, toks []token) (name string, columns []string, hash bool) {
	open := -1
	for i, t := range toks {
		if t.punct(text, '(') {
			open = i
			break
		}
		if t.kind == tokIdent {
			name = t.name(text)
		}
	}
	if open < 0 {
		return "", nil, false
	}
	depth := 0
	expectName := true
	end := len(toks)
	for i := open + 1; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.punct(text, '('):
			depth++
		case t.punct(text, ')'):
			if depth == 0 {
				end = i
			} else {
				depth--
			}
		case depth == 0 && t.punct(text, ','):
			expectName = true
		case depth == 0 && expectName && (t.kind == tokIdent || t.kind == tokWord):
			columns = append(columns, t.name(text))
			expectName = false
		}
		if end < len(toks) {
			break
		}
	}
	for _, t := range toks[end:] {
		if t.is(text, "HASH") {
			hash = true
		}
	}
	if columns == nil {
		columns = []string{}
	}
	return name, columns, hash
}

// SplitCreateTable returns the CREATE TABLE without secondary indexes and
// foreign keys, so that loading is fast, the ALTER TABLE that adds the
// indexes back and the one that adds the foreign keys; "" when there is
// nothing to add. The ALTERs use ADD ... KEY IF NOT EXISTS and ADD
// CONSTRAINT ... FOREIGN KEY IF NOT EXISTS, so running them again (a resumed
// load) is harmless. They name the table as the CREATE does (unqualified in
// SHOW CREATE TABLE output): run them in the table's database.
//
// The base keeps the PRIMARY KEY; without one, every UNIQUE key (InnoDB
// clusters on the first UNIQUE NOT NULL key, and would pick another one
// otherwise); and every key holding the AUTO_INCREMENT column (the table
// needs one). The server orders keys (unique first, FULLTEXT last, else as
// declared) and appends added keys before ordering; so that the restored
// SHOW CREATE TABLE is byte-identical, the base keeps every key up to the
// last one it must keep, and the ALTER adds the rest in their order.
//
// A CREATE SEQUENCE comes back unchanged with two empty ALTERs.
func SplitCreateTable(create string) (base, addIndexes, addForeignKeys string, err error) {
	return splitCreateTable(create, false)
}

// SplitForeignKeys is SplitCreateTable keeping every index in the base:
// for a table too small for building its indexes after the load to pay
// for the ALTER TABLE it costs (on a server of many small tables, a
// statement and a rebuild per table). Only the foreign keys are left for
// after the load, when every table they name exists.
func SplitForeignKeys(create string) (base, addForeignKeys string, err error) {
	base, _, addForeignKeys, err = splitCreateTable(create, true)
	return base, addForeignKeys, err
}

func splitCreateTable(create string, keepIndexes bool) (base, addIndexes, addForeignKeys string, err error) {
	if isCreateSequence(create) {
		return create, "", "", nil
	}
	ct, err := parseCreateTable(create)
	if err != nil {
		return "", "", "", err
	}
	hasPrimary := false
	autoInc := ""
	for _, e := range ct.elems {
		switch {
		case e.kind == elemPrimary:
			hasPrimary = true
		case e.kind == elemColumn && e.autoInc:
			autoInc = e.name
		}
	}
	lastKept := -1
	for i, e := range ct.elems {
		isKey := e.kind == elemPrimary || e.kind == elemUnique || e.kind == elemKey
		must := (keepIndexes && isKey) || e.kind == elemPrimary ||
			(e.kind == elemUnique && !hasPrimary) ||
			((e.kind == elemUnique || e.kind == elemKey) && autoInc != "" && containsFold(e.columns, autoInc))
		if must {
			lastKept = i
		}
	}
	var kept, keys, fks []string
	for i, e := range ct.elems {
		isKey := e.kind == elemPrimary || e.kind == elemUnique || e.kind == elemKey
		switch {
		case isKey && i > lastKept:
			keys = append(keys, "ADD "+insertIfNotExists(e.text, "KEY", "INDEX"))
		case e.kind == elemForeign:
			fks = append(fks, "ADD "+insertIfNotExists(e.text, "KEY"))
		default:
			kept = append(kept, e.text)
		}
	}
	if len(kept) == 0 {
		return "", "", "", fmt.Errorf("CREATE TABLE %s: no columns", ct.name)
	}
	base = ct.head + "(\n  " + strings.Join(kept, ",\n  ") + "\n" + ct.tail
	if len(keys) > 0 {
		addIndexes = "ALTER TABLE " + ct.name + " " + strings.Join(keys, ", ")
	}
	if len(fks) > 0 {
		addForeignKeys = "ALTER TABLE " + ct.name + " " + strings.Join(fks, ", ")
	}
	return base, addIndexes, addForeignKeys, nil
}

// insertIfNotExists inserts " IF NOT EXISTS" after the first of the words
// (KEY or INDEX in "UNIQUE KEY `u` (...)", KEY in "CONSTRAINT `f` FOREIGN
// KEY (...)"), which is where MariaDB's ALTER TABLE ADD takes it.
func insertIfNotExists(text string, words ...string) string {
	for _, t := range significant(lex(text, lexMode{})) {
		for _, w := range words {
			if t.is(text, w) {
				return text[:t.end] + " IF NOT EXISTS" + text[t.end:]
			}
		}
	}
	return text
}

func isCreateSequence(stmt string) bool {
	sig := significant(lex(stmt, lexMode{}))
	i := 0
	if i < len(sig) && sig[i].is(stmt, "CREATE") {
		i++
		if i+1 < len(sig) && sig[i].is(stmt, "OR") && sig[i+1].is(stmt, "REPLACE") {
			i += 2
		}
		return i < len(sig) && sig[i].is(stmt, "SEQUENCE")
	}
	return false
}

// containsFold reports whether names holds name; column names are
// case-insensitive in MariaDB.
func containsFold(names []string, name string) bool {
	for _, n := range names {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}
