package schema

import (
	"strconv"
	"strings"
)

// ColumnDef is what a table's CREATE TABLE says of one column beyond
// information_schema's DATA_TYPE: what bounds the values it takes.
type ColumnDef struct {
	Name string
	// Length is the first number in parentheses after the type: 64 of
	// varchar(64), 16 of binary(16), 11 of int(11) (a display width);
	// 0 when there is none.
	Length   int64
	Unsigned bool
	NotNull  bool
	// Charset is the character set of a textual column (CHAR, VARCHAR,
	// TEXT, ENUM, SET): its own CHARACTER SET, or the one its COLLATE
	// names, else the table's DEFAULT CHARSET; lower case, "" for other
	// types or when the statement does not say.
	Charset string
	// JSON: the column has CHECK (json_valid(...)), which is what
	// MariaDB's JSON type is (a LONGTEXT).
	JSON bool
}

// ColumnDefs reads the column definitions of a SHOW CREATE TABLE
// statement, in the order it lists them.
func ColumnDefs(create string) ([]ColumnDef, error) {
	ct, err := parseCreateTable(create)
	if err != nil {
		return nil, err
	}
	tableCharset := defaultCharset(ct.tail)
	var out []ColumnDef
	for _, e := range ct.elems {
		if e.kind == elemColumn {
			out = append(out, columnDef(e.name, e.text, tableCharset))
		}
	}
	return out, nil
}

// columnDef reads one column element: `name` type[(n[,m])] [UNSIGNED] ...
func columnDef(name, text, tableCharset string) ColumnDef {
	d := ColumnDef{Name: name}
	toks := significant(lex(text, lexMode{}))
	if len(toks) < 2 {
		return d
	}
	typ := strings.ToLower(toks[1].text(text))
	i := 2
	if i < len(toks) && toks[i].punct(text, '(') {
		if i+1 < len(toks) && toks[i+1].kind == tokWord {
			d.Length, _ = strconv.ParseInt(toks[i+1].text(text), 10, 64)
		}
		i = skipParens(text, toks, i)
	}
	collation := ""
	for ; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.punct(text, '('):
			// An expression (AS (...), DEFAULT (...)): skipped, but a CHECK's
			// is looked into below.
			i = skipParens(text, toks, i) - 1
		case t.is(text, "UNSIGNED"):
			d.Unsigned = true
		case t.is(text, "NOT") && i+1 < len(toks) && toks[i+1].is(text, "NULL"):
			d.NotNull = true
			i++
		case (t.is(text, "CHARSET") || t.is(text, "SET") && i > 0 && toks[i-1].is(text, "CHARACTER")) && i+1 < len(toks):
			d.Charset = strings.ToLower(toks[i+1].name(text))
			i++
		case t.is(text, "COLLATE") && i+1 < len(toks):
			collation = strings.ToLower(toks[i+1].name(text))
			i++
		case t.is(text, "CHECK") && i+1 < len(toks) && toks[i+1].punct(text, '('):
			end := skipParens(text, toks, i+1)
			for _, u := range toks[i+1 : end] {
				if u.is(text, "json_valid") {
					d.JSON = true
				}
			}
			i = end - 1
		}
	}
	switch typ {
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set":
		if d.Charset == "" && collation != "" {
			d.Charset, _, _ = strings.Cut(collation, "_")
		}
		if d.Charset == "" {
			d.Charset = tableCharset
		}
	default:
		d.Charset = ""
	}
	return d
}

// skipParens returns the index just past the parenthesis that closes the
// one at toks[open].
func skipParens(text string, toks []token, open int) int {
	depth := 0
	for i := open; i < len(toks); i++ {
		switch {
		case toks[i].punct(text, '('):
			depth++
		case toks[i].punct(text, ')'):
			if depth--; depth == 0 {
				return i + 1
			}
		}
	}
	return len(toks)
}

// defaultCharset reads the table's DEFAULT CHARSET (or CHARACTER SET,
// or the character set its COLLATE names) from the end of a CREATE TABLE.
func defaultCharset(tail string) string {
	toks := significant(lex(tail, lexMode{}))
	value := func(i int) string {
		if i < len(toks) && toks[i].punct(tail, '=') {
			i++
		}
		if i < len(toks) {
			return strings.ToLower(toks[i].name(tail))
		}
		return ""
	}
	collation := ""
	for i, t := range toks {
		switch {
		case t.is(tail, "CHARSET"), t.is(tail, "SET") && i > 0 && toks[i-1].is(tail, "CHARACTER"):
			return value(i + 1)
		case t.is(tail, "COLLATE") && collation == "":
			collation = value(i + 1)
		}
	}
	cs, _, _ := strings.Cut(collation, "_")
	return cs
}
