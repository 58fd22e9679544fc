package replica

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/go-sql-driver/mysql"
)

// MaxPasswordLength is the longest MASTER_PASSWORD MariaDB 10.11 accepts, in
// characters. Checked here because the server's own "too long" error quotes
// the password back.
const MaxPasswordLength = 96

// CHANGE MASTER TO takes string literals only: MariaDB's grammar has no
// parameter markers there (a prepared "MASTER_HOST=?" is a syntax error), so
// values are spliced in as literals and must be quoted exactly right.

// checkValue refuses what cannot travel safely in a CHANGE MASTER literal or
// survive master.info, which stores one value per line: invalid UTF-8 (the
// connection speaks utf8mb4), NUL, and line breaks. Names (host, user,
// connection name) also may not hold any other control character.
func checkValue(what, s string, secret bool) error {
	show := func() string {
		if secret {
			return ""
		}
		return fmt.Sprintf(" %q", s)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s%s is not valid UTF-8", what, show())
	}
	for _, r := range s {
		switch {
		case r == 0 || r == '\n' || r == '\r':
			return fmt.Errorf("%s%s contains a NUL or line break, which MariaDB cannot store in master.info", what, show())
		case !secret && (r < 0x20 || r == 0x7f):
			return fmt.Errorf("%s%s contains a control character", what, show())
		}
	}
	return nil
}

// secretError is a server error from a statement that carried the password.
// MariaDB quotes statement text back in some errors (1064 "near '...'", 1470
// "String '...' is too long"), so the message is rebuilt without it.
type secretError struct {
	Number   uint16
	SQLState string
	Message  string
}

func (e *secretError) Error() string {
	return fmt.Sprintf("Error %d (%s): %s", e.Number, e.SQLState, e.Message)
}

// Texts redactError puts in place of what it removes.
const (
	withheldStatement = " ... (statement text withheld: it holds the password)"
	withheldMessage   = "(message withheld: it may quote the password)"
)

// redactError turns err, returned by a statement holding secret, into an
// error that cannot contain secret. It keeps the server's error number and
// the message up to its first quote, because MariaDB puts statement text
// only inside quotes; if even that part shares four bytes in a row with the
// secret, the message goes too.
func redactError(err error, secret string) error {
	if err == nil || secret == "" {
		return err
	}
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		// A driver or network error never echoes the statement, but be sure.
		if mayLeak(err.Error(), secret) {
			return errors.New("statement failed " + withheldMessage)
		}
		return err
	}
	msg := me.Message
	if i := strings.IndexAny(msg, "'\"`"); i >= 0 {
		msg = strings.TrimSpace(msg[:i]) + withheldStatement
	}
	if mayLeak(strings.TrimSuffix(msg, withheldStatement), secret) {
		msg = withheldMessage
	}
	return &secretError{Number: me.Number, SQLState: string(me.SQLState[:]), Message: msg}
}

// mayLeak reports whether s contains secret or any four bytes of it in a
// row: a cut through an echoed password leaves a piece of it.
func mayLeak(s, secret string) bool {
	w := min(4, len(secret))
	for i := 0; i+w <= len(secret); i++ {
		if strings.Contains(s, secret[i:i+w]) {
			return true
		}
	}
	return false
}

// maxConnectionName is MariaDB's limit on a multi-source connection name.
const maxConnectionName = 64

// checkConnectionName accepts the multi-source connection names worth
// having: ASCII letters, digits, '_', '-' and '.', at most 64 of them. MariaDB
// accepts more, but a name that needs quoting care is not worth the risk.
func checkConnectionName(name string) error {
	if len(name) > maxConnectionName {
		return fmt.Errorf("connection name %q: longer than %d characters", name, maxConnectionName)
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.'
		if !ok {
			return fmt.Errorf("connection name %q: only letters, digits, '_', '-' and '.' are allowed", name)
		}
	}
	return nil
}
