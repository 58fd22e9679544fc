package schema

import "strings"

// tokenKind classifies a piece of SQL text. The lexer knows just enough of
// MariaDB's grammar to find statement structure in SHOW CREATE output:
// where quoted names, strings and comments start and end, so that a keyword
// or a comma inside them is never taken for structure.
type tokenKind int

const (
	tokSpace   tokenKind = iota // whitespace
	tokComment                  // /* ... */ (also /*!40100 ... */), -- ..., # ...
	tokIdent                    // `quoted` name, or "quoted" under ANSI_QUOTES
	tokString                   // '...', or "..." without ANSI_QUOTES
	tokWord                     // keyword, bare name or number
	tokPunct                    // any other single byte
)

type token struct {
	kind       tokenKind
	start, end int // byte offsets into the lexed text
}

// lexer options follow the sql_mode the text was written under.
type lexMode struct {
	ansiQuotes  bool // "..." quotes a name, not a string
	noBackslash bool // NO_BACKSLASH_ESCAPES: \ is an ordinary character in strings
}

// modeOf returns the lexer options for an object's sql_mode.
func modeOf(sqlMode string) lexMode {
	var m lexMode
	for _, f := range strings.Split(strings.ToUpper(sqlMode), ",") {
		switch strings.TrimSpace(f) {
		case "ANSI_QUOTES", "ANSI", "ORACLE", "DB2", "MSSQL", "POSTGRESQL", "MAXDB":
			// The combination modes include ANSI_QUOTES; SHOW CREATE reports
			// the expanded list, but be safe with the short form too.
			m.ansiQuotes = true
		case "NO_BACKSLASH_ESCAPES":
			m.noBackslash = true
		}
	}
	return m
}

// lex splits s into tokens. It never fails: an unterminated quote or comment
// runs to the end of s, which callers then see as a malformed statement.
func lex(s string, m lexMode) []token {
	var toks []token
	for i := 0; i < len(s); {
		start := i
		kind := tokPunct
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			kind = tokSpace
			for i < len(s) && strings.IndexByte(" \t\n\r\f\v", s[i]) >= 0 {
				i++
			}
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			kind = tokComment
			if j := strings.Index(s[i+2:], "*/"); j >= 0 {
				i += 2 + j + 2
			} else {
				i = len(s)
			}
		case c == '#' || (c == '-' && strings.HasPrefix(s[i:], "--") && (i+2 == len(s) || strings.IndexByte(" \t\n\r", s[i+2]) >= 0)):
			kind = tokComment
			if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
				i += j + 1
			} else {
				i = len(s)
			}
		case c == '`':
			kind = tokIdent
			i = endQuoted(s, i, '`', false)
		case c == '"':
			if m.ansiQuotes {
				kind = tokIdent
				i = endQuoted(s, i, '"', false)
			} else {
				kind = tokString
				i = endQuoted(s, i, '"', !m.noBackslash)
			}
		case c == '\'':
			kind = tokString
			i = endQuoted(s, i, '\'', !m.noBackslash)
		case isWordByte(c):
			kind = tokWord
			for i < len(s) && isWordByte(s[i]) {
				i++
			}
		default:
			i++
		}
		toks = append(toks, token{kind: kind, start: start, end: i})
	}
	return toks
}

// endQuoted returns the offset just past the quoted text starting at s[i]
// (the opening quote q); a doubled quote is an escaped quote.
func endQuoted(s string, i int, q byte, backslash bool) int {
	for i++; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if backslash {
				i++
			}
		case q:
			if i+1 < len(s) && s[i+1] == q {
				i++
				continue
			}
			return i + 1
		}
	}
	return len(s)
}

// isWordByte reports whether c can be part of an unquoted name, keyword or
// number. Bytes of multi-byte UTF-8 characters count: MariaDB allows them in
// unquoted names.
func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 ||
		('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

func (t token) text(s string) string { return s[t.start:t.end] }

// is reports whether t is the bare word w, in any case.
func (t token) is(s, w string) bool {
	return t.kind == tokWord && strings.EqualFold(s[t.start:t.end], w)
}

// punct reports whether t is the single byte c.
func (t token) punct(s string, c byte) bool {
	return t.kind == tokPunct && s[t.start] == c
}

// name returns the name a tokIdent, tokWord or tokString stands for
// (SHOW GRANTS quotes some account names as strings). A string's backslash
// escapes are left as they are: names with backslashes are not worth the
// sql_mode bookkeeping.
func (t token) name(s string) string {
	txt := s[t.start:t.end]
	if (t.kind != tokIdent && t.kind != tokString) || len(txt) < 2 {
		return txt
	}
	q := txt[:1]
	return strings.ReplaceAll(txt[1:len(txt)-1], q+q, q)
}

// significant returns the tokens that are neither space nor comment.
func significant(toks []token) []token {
	out := make([]token, 0, len(toks))
	for _, t := range toks {
		if t.kind != tokSpace && t.kind != tokComment {
			out = append(out, t)
		}
	}
	return out
}
