package logical

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// The data files hold what LOAD DATA reads with its defaults: fields
// terminated by a tab, lines by a newline, escaped by a backslash, NULL as
// \N, all bytes taken as CHARACTER SET binary. appendField writes one value
// in that form; nil is NULL.
func appendField(dst, v []byte, null bool) []byte {
	if null {
		return append(dst, '\\', 'N')
	}
	start := 0
	for i, b := range v {
		var esc byte
		switch b {
		case '\\':
			esc = '\\'
		case '\t':
			esc = 't'
		case '\n':
			esc = 'n'
		case 0:
			esc = '0'
		default:
			continue
		}
		dst = append(dst, v[start:i]...)
		dst = append(dst, '\\', esc)
		start = i + 1
	}
	return append(dst, v[start:]...)
}

// parseLine splits one line of a data file back into its fields, undoing
// appendField (nil with null set for \N). It exists so that the format is
// checked from both sides (tests and fuzzing); loading is the server's
// LOAD DATA. It reports a dangling escape.
func parseLine(line []byte) (fields [][]byte, nulls []bool, err error) {
	var cur []byte
	isNull := false
	for i := 0; i < len(line); i++ {
		b := line[i]
		switch b {
		case '\t':
			fields, nulls = append(fields, cur), append(nulls, isNull)
			cur, isNull = nil, false
			continue
		case '\\':
			if i+1 == len(line) {
				return nil, nil, fmt.Errorf("byte %d: escape at the end of the line", i)
			}
			i++
			switch line[i] {
			case 't':
				b = '\t'
			case 'n':
				b = '\n'
			case '0':
				b = 0
			case 'N':
				if len(cur) == 0 && (i+1 == len(line) || line[i+1] == '\t') {
					isNull = true
					continue
				}
				b = 'N'
			default:
				b = line[i]
			}
		}
		cur = append(cur, b)
	}
	fields, nulls = append(fields, cur), append(nulls, isNull)
	return fields, nulls, nil
}

// pathName encodes a database or table name for a path inside the streams
// the way MariaDB names files: letters, digits and _ stay, every other
// character becomes @ and its code point in hex, so that any name makes a
// valid, flat, portable path element.
func pathName(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		case r == utf8.RuneError:
			b.WriteString("@fffd")
		case r <= 0xffff:
			fmt.Fprintf(&b, "@%04x", r)
		default:
			fmt.Fprintf(&b, "@@%06x", r)
		}
	}
	return b.String()
}

// quoteIdent quotes a MariaDB identifier.
func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// qualified is `db`.`name`.
func qualified(db, name string) string { return quoteIdent(db) + "." + quoteIdent(name) }
