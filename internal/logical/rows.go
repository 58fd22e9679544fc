package logical

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/backstream/backstream/internal/mariadb"
)

// The data files hold what LOAD DATA reads with its defaults: fields
// terminated by a tab, lines by a newline, escaped by a backslash, NULL as
// \N, all bytes taken as CHARACTER SET binary. appendField writes one value
// in that form; nil is NULL.
func appendField(dst, v []byte, null bool) []byte {
	if null {
		return append(dst, '\\', 'N')
	}
	for {
		i := special(v)
		if i < 0 {
			return append(dst, v...)
		}
		dst = append(dst, v[:i]...)
		dst = append(dst, '\\', escapes[v[i]])
		v = v[i+1:]
	}
}

// escapes maps the bytes appendField escapes to the letter after the backslash.
var escapes = [256]byte{'\\': '\\', '\t': 't', '\n': 'n', 0: '0'}

const (
	lows  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special returns the index of the first byte of v that needs escaping,
// or -1. It tests eight bytes at a time: a word holds a byte equal to b
// exactly when (x^b*lows) has a zero byte, which the classic
// (y-lows) & ^y & highs test finds; rows are mostly plain text.
func special(v []byte) int {
	i := 0
	for ; i+8 <= len(v); i += 8 {
		x := binary.LittleEndian.Uint64(v[i:])
		if hasZero(x) || hasZero(x^('\t'*lows)) || hasZero(x^('\n'*lows)) || hasZero(x^('\\'*lows)) {
			break
		}
	}
	for ; i < len(v); i++ {
		if c := v[i]; c == '\\' || c == '\t' || c == '\n' || c == 0 {
			return i
		}
	}
	return -1
}

func hasZero(x uint64) bool { return (x-lows)&^x&highs != 0 }

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

// qualified is `db`.`name`.
func qualified(db, name string) string {
	return mariadb.QuoteIdent(db) + "." + mariadb.QuoteIdent(name)
}
