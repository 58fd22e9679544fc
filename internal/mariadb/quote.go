package mariadb

import "strings"

// QuoteString returns s as a single-quoted SQL string literal for a session
// whose sql_mode does (noBackslashEscapes false) or does not treat backslash
// as an escape. Doubling the quote works in both modes; a backslash is
// doubled only where it escapes. s must hold no NUL.
func QuoteString(s string, noBackslashEscapes bool) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			b.WriteString("''")
		case c == '\\' && !noBackslashEscapes:
			b.WriteString(`\\`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// QuoteIdent quotes a name with backticks, doubling any backtick in it.
// Backticks quote names under every sql_mode, ANSI_QUOTES included.
func QuoteIdent(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}
