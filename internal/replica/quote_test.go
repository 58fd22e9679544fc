package replica

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/backstream/backstream/internal/mariadb"
	"github.com/go-sql-driver/mysql"
)

// lexString reads one single-quoted string literal at the start of s the way
// MariaDB's lexer does (sql/sql_lex.cc get_text): ” is a quote, and unless
// noBackslash, a backslash escapes the next byte (\0 \b \n \r \t \Z map to
// control bytes, \% and \_ keep their backslash, anything else is itself).
// It returns the value and what follows the closing quote.
func lexString(s string, noBackslash bool) (value, rest string, err error) {
	if !strings.HasPrefix(s, "'") {
		return "", "", errors.New("no opening quote")
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && !noBackslash:
			i++
			if i == len(s) {
				return "", "", errors.New("backslash at end")
			}
			switch e := s[i]; e {
			case '0':
				b.WriteByte(0)
			case 'b':
				b.WriteByte('\b')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'Z':
				b.WriteByte(0x1a)
			case '%', '_':
				b.WriteByte('\\')
				b.WriteByte(e)
			default:
				b.WriteByte(e)
			}
		case c == '\'':
			if i+1 < len(s) && s[i+1] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			return b.String(), s[i+1:], nil
		default:
			b.WriteByte(c)
		}
	}
	return "", "", errors.New("no closing quote")
}

func TestQuoteString(t *testing.T) {
	tests := []struct {
		in          string
		escapes     string // default sql_mode
		noBackslash string // NO_BACKSLASH_ESCAPES
	}{
		{"", `''`, `''`},
		{"plain", `'plain'`, `'plain'`},
		{"it's", `'it''s'`, `'it''s'`},
		{`back\slash`, `'back\\slash'`, `'back\slash'`},
		{`end\`, `'end\\'`, `'end\'`},
		{`\'`, `'\\'''`, `'\'''`},
		{`%_"`, `'%_"'`, `'%_"'`},
		{"ü€\t", "'ü€\t'", "'ü€\t'"},
	}
	for _, tt := range tests {
		for _, mode := range []struct {
			nb   bool
			want string
		}{{false, tt.escapes}, {true, tt.noBackslash}} {
			got := mariadb.QuoteString(tt.in, mode.nb)
			if got != mode.want {
				t.Errorf("mariadb.QuoteString(%q, noBackslash=%v) = %s, want %s", tt.in, mode.nb, got, mode.want)
			}
			v, rest, err := lexString(got+", MASTER_PORT=1", mode.nb)
			if err != nil || v != tt.in || rest != ", MASTER_PORT=1" {
				t.Errorf("lexing %s (noBackslash=%v) gave %q, rest %q, err %v", got, mode.nb, v, rest, err)
			}
		}
	}
}

func FuzzQuoteString(f *testing.F) {
	for _, s := range []string{"", "a'b", `a\b`, `\`, `'`, `\'`, "x\x1ay", "ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if checkValue("value", s, true) != nil {
			return
		}
		for _, nb := range []bool{false, true} {
			q := mariadb.QuoteString(s, nb)
			v, rest, err := lexString(q+" tail", nb)
			if err != nil || v != s || rest != " tail" {
				t.Fatalf("mariadb.QuoteString(%q, %v) = %s lexes to %q, rest %q, err %v", s, nb, q, v, rest, err)
			}
		}
	})
}

func TestCheckValue(t *testing.T) {
	tests := []struct {
		s         string
		secret    bool
		wantError bool
	}{
		{"repl", false, false},
		{"pa ss\tword'\\", true, false},
		{"tab\tin name", false, true},
		{"nl\n", true, true},
		{"cr\r", true, true},
		{"nul\x00", true, true},
		{"bad\xffutf8", true, true},
		{"del\x7f", false, true},
		{"del\x7f", true, false},
	}
	for _, tt := range tests {
		err := checkValue("v", tt.s, tt.secret)
		if (err != nil) != tt.wantError {
			t.Errorf("checkValue(%q, secret=%v) = %v, want error %v", tt.s, tt.secret, err, tt.wantError)
		}
		if err != nil && tt.secret && strings.Contains(err.Error(), tt.s) {
			t.Errorf("checkValue error shows the secret: %v", err)
		}
	}
}

func TestCheckConnectionName(t *testing.T) {
	for _, ok := range []string{"", "primary", "dc-2.east_1", strings.Repeat("a", 64)} {
		if err := checkConnectionName(ok); err != nil {
			t.Errorf("checkConnectionName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"a'b", `a\b`, "a b", "ü", strings.Repeat("a", 65)} {
		if err := checkConnectionName(bad); err == nil {
			t.Errorf("checkConnectionName(%q) accepted", bad)
		}
	}
}

func TestRedactError(t *testing.T) {
	const secret = "hunter2'x"
	tests := []struct {
		name string
		err  error
		want string // substring of the result
	}{
		{"syntax error quoting the statement",
			&mysql.MySQLError{Number: 1064, SQLState: [5]byte{'4', '2', '0', '0', '0'}, Message: "You have an error in your SQL syntax; check the manual that corresponds to your MariaDB server version for the right syntax to use near 'hunter2'x', MASTER_PORT=1' at line 1"},
			"Error 1064 (42000): You have an error in your SQL syntax; check the manual that corresponds to your MariaDB server version for the right syntax to use near ... (statement text withheld"},
		{"too long",
			&mysql.MySQLError{Number: 1470, SQLState: [5]byte{'H', 'Y', '0', '0', '0'}, Message: "String 'hunter2'x...' is too long for MASTER_PASSWORD (should be no longer than 96)"},
			"Error 1470 (HY000): String ... (statement text withheld"},
		{"cut inside the secret", &mysql.MySQLError{Number: 1, Message: "odd hunter2'x"}, "Error 1 (\x00\x00\x00\x00\x00): (message withheld"},
		{"piece of the secret before any quote", &mysql.MySQLError{Number: 1, Message: "nter then 'quote'"}, "(message withheld"},
		{"harmless text before a quote", &mysql.MySQLError{Number: 1, Message: "odd then 'quote'"}, "odd then ... (statement text withheld"},
		{"driver error", errors.New("invalid connection"), "invalid connection"},
		{"driver error with the secret", fmt.Errorf("x %s y", secret), "message withheld"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := redactError(tt.err, secret)
			if strings.Contains(got.Error(), secret) {
				t.Fatalf("redacted error shows the secret: %v", got)
			}
			if !strings.Contains(got.Error(), tt.want) {
				t.Errorf("redactError = %q, want it to contain %q", got, tt.want)
			}
		})
	}
	if err := redactError(nil, secret); err != nil {
		t.Errorf("redactError(nil) = %v", err)
	}
	plain := errors.New("near 'x'")
	if got := redactError(plain, ""); got != plain {
		t.Errorf("with no password the error should pass through, got %v", got)
	}
}

func FuzzRedactError(f *testing.F) {
	f.Add("near 'pw' at line 1", "pw", true)
	f.Add("pw", "pw", false)
	f.Add("x'pw", "'pw", true)
	f.Fuzz(func(t *testing.T, msg, secret string, server bool) {
		if secret == "" || !utf8.ValidString(msg) {
			return
		}
		var err error = errors.New(msg)
		if server {
			err = &mysql.MySQLError{Number: 1064, Message: msg}
		}
		got := redactError(err, secret)
		// Only the part that came from msg counts: the fixed texts may
		// happen to contain a fuzzed secret.
		var shown string
		var se *secretError
		switch {
		case errors.As(got, &se):
			shown = strings.TrimSuffix(se.Message, withheldStatement)
			if shown == withheldMessage {
				shown = ""
			}
		case got == err:
			shown = msg
		default:
			shown = ""
		}
		if strings.Contains(shown, secret) {
			t.Fatalf("redactError(%q, %q) = %q shows the secret", msg, secret, got)
		}
	})
}
