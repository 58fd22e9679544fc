package schema

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/backstream/backstream/internal/mariadb"
)

// This file writes the phases as scripts for the stock mariadb client, the
// way out for someone without backstream: the statements the functions of
// apply.go run, each after the session settings those functions give it,
// so that a script loaded with
//
//	mariadb --binary-mode --comments < script
//
// creates every object as a restore through backstream does: SHOW CREATE on
// the target gives the source's text and creation context. --binary-mode
// keeps the client from turning \r\n into \n and from running backslash
// commands it finds in a body; --comments keeps the comments of bodies,
// which the client drops otherwise. Each script sets everything it needs at
// its top and leaves the delimiter at ";", so scripts may run one after
// another in one session (cat a b | mariadb) or each in its own. No script
// renames a database or rewrites a definer.

// An Encoder returns stmt, which is UTF-8 as Read got it, in the bytes of
// character set cs: the server keeps an object's text in the character set
// of the session that created it (see EncodeFor).
type Encoder func(stmt, cs string) (string, error)

// ScriptHeader opens every script: a comment saying what it is (one line;
// line breaks in it are shown escaped) and UTF-8 for the connection.
func ScriptHeader(what string) string {
	return "-- " + commentText(what) + "\nSET NAMES utf8mb4;\n"
}

// commentText makes s safe in a -- comment: a line break would end it.
func commentText(s string) string {
	return strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(s)
}

// setSession is a SET SESSION statement (without its terminator) for the
// settings, their values quoted; the names are this package's.
func setSession(settings []setting) string {
	parts := make([]string, len(settings))
	for i, s := range settings {
		parts[i] = s.name + " = " + mariadb.QuoteString(s.value, false)
	}
	return "SET SESSION " + strings.Join(parts, ", ")
}

// DatabaseScript creates the database with the source's options. Unlike
// CreateDatabase it has no IF NOT EXISTS: a script stops on a database
// the target already has instead of loading into it.
func DatabaseScript(d *Database) string {
	var b strings.Builder
	b.WriteString(ScriptHeader("database " + mariadb.QuoteIdent(d.Name)))
	b.WriteString(setSession([]setting{{"sql_mode", ddlSQLMode}}) + ";\n")
	b.WriteString(d.Create + ";\n")
	return b.String()
}

// TablesScript creates tables or sequences of database d with the
// statement create gives for each (CreateTable's settings; time_zone
// +00:00, as a load's connections have it). The statements are whole
// (indexes and foreign keys in them); foreign_key_checks=0 lets a foreign
// key name a table created later.
func TablesScript(d *Database, tables []*Table, create func(*Table) string) string {
	var b strings.Builder
	b.WriteString(ScriptHeader("tables of database " + mariadb.QuoteIdent(d.Name)))
	b.WriteString(setSession(append(append([]setting{}, tableSettings...), setting{"foreign_key_checks", "OFF"}, setting{"time_zone", "+00:00"})) + ";\n")
	b.WriteString("USE " + mariadb.QuoteIdent(d.Name) + ";\n")
	for _, t := range tables {
		fmt.Fprintf(&b, "\n-- %s %s\n%s;\n", tableKind(t), commentText(mariadb.QuoteIdent(t.Name)), create(t))
	}
	return b.String()
}

// SetValStatement restores sequence t of database db, as RestoreSequence
// does (DO: a script has no use for the value).
func SetValStatement(db string, t *Table) string {
	return fmt.Sprintf("DO SETVAL(%s.%s, %d, 0, %d)", mariadb.QuoteIdent(db), mariadb.QuoteIdent(t.Name), t.NextValue, t.CycleCount)
}

// ViewPlaceholdersScript creates CreateViewPlaceholder's placeholder for
// every view of d.
func ViewPlaceholdersScript(d *Database) string {
	var b strings.Builder
	b.WriteString(ScriptHeader("placeholders for the views of database " + mariadb.QuoteIdent(d.Name) + ", replaced by the views themselves"))
	b.WriteString(setSession([]setting{{"sql_mode", ddlSQLMode}}) + ";\n")
	for _, v := range d.Views {
		b.WriteString(viewPlaceholder(d.Name, v) + ";\n")
	}
	return b.String()
}

// ObjectsScript creates views, triggers, routines or events of database d,
// in the order given, each as CreateObject does: views as CREATE OR REPLACE
// (a placeholder may be there) under the mode views are created under, the
// others under their own sql_mode; each under its character_set_client,
// collation_connection and (events) time zone, and with the database's
// collation switched to the one the source recorded with it for the
// moment. The text goes in the bytes of its character set, and, for a
// character set other than UTF-8, the client reads it in that character
// set (\C), or a multibyte character whose second byte is a backslash or
// a quote would end its string for the client.
func ObjectsScript(d *Database, what string, objs []*Object, encode Encoder) (string, error) {
	type block struct {
		o    *Object
		text string
		cs   bool // the client must read text in o.CharacterSetClient
	}
	var blocks []block
	texts := make([]string, 0, len(objs))
	for _, o := range objs {
		stmt := o.Create
		if o.Kind == KindView {
			var err error
			if stmt, err = orReplace(stmt); err != nil {
				return "", fmt.Errorf("%s %s.%s: %w", o.Kind, d.Name, o.Name, err)
			}
		}
		for _, name := range []string{o.CharacterSetClient, o.CollationConnection, o.DatabaseCollation} {
			if name != "" && !isPlainName(name) {
				return "", fmt.Errorf("%s %s.%s: %q is not a character set or collation name", o.Kind, d.Name, o.Name, name)
			}
		}
		cs := !isASCII(stmt) && o.CharacterSetClient != "" && !strings.HasPrefix(o.CharacterSetClient, "utf8")
		text, err := encode(stmt, o.CharacterSetClient)
		if err != nil {
			return "", fmt.Errorf("%s %s.%s: %w", o.Kind, d.Name, o.Name, err)
		}
		blocks = append(blocks, block{o, text, cs})
		texts = append(texts, text)
	}
	delim := pickDelimiter(texts)
	dbColl, restore := databaseCollation(d)
	var b strings.Builder
	b.WriteString(ScriptHeader(what + " of database " + mariadb.QuoteIdent(d.Name)))
	b.WriteString("USE " + mariadb.QuoteIdent(d.Name) + ";\n")
	b.WriteString("DELIMITER " + delim + "\n")
	for _, bl := range blocks {
		o := bl.o
		fmt.Fprintf(&b, "\n-- %s %s\n", o.Kind, commentText(mariadb.QuoteIdent(o.Name)))
		if bl.cs {
			b.WriteString(`\C ` + o.CharacterSetClient + "\n")
		}
		switchColl := o.DatabaseCollation != "" && o.DatabaseCollation != dbColl && restore != ""
		if switchColl {
			// Backquoted name, no string: read alike under every sql_mode.
			b.WriteString("ALTER DATABASE " + mariadb.QuoteIdent(d.Name) + " COLLATE " + o.DatabaseCollation + delim + "\n")
		}
		b.WriteString(setSession(o.creationContext()) + delim + "\n")
		b.WriteString(bl.text + delim + "\n")
		if switchColl {
			b.WriteString(restore + delim + "\n")
		}
		if bl.cs {
			b.WriteString(`\C utf8mb4` + "\n")
		}
	}
	b.WriteString("\nDELIMITER ;\n")
	return b.String(), nil
}

// databaseCollation returns the collation SHOW CREATE DATABASE gives d
// ("" if it names only a character set, the character set's default) and
// the statement that gives d its options back after a switch ("" if the
// text names neither). The options precede any COMMENT, so the first
// match is theirs.
func databaseCollation(d *Database) (collation, restore string) {
	if m := collateOption.FindStringSubmatch(d.Create); m != nil {
		return m[1], "ALTER DATABASE " + mariadb.QuoteIdent(d.Name) + " COLLATE " + m[1]
	}
	if m := charsetOption.FindStringSubmatch(d.Create); m != nil {
		return "", "ALTER DATABASE " + mariadb.QuoteIdent(d.Name) + " CHARACTER SET " + m[1]
	}
	return "", ""
}

var (
	collateOption = regexp.MustCompile(`(?i)\bCOLLATE[ =]+(\w+)`)
	charsetOption = regexp.MustCompile(`(?i)\bCHARACTER SET[ =]+(\w+)`)
)

// pickDelimiter returns a delimiter for the client that none of texts
// holds, so that it can only end a statement where the script puts it.
func pickDelimiter(texts []string) string {
	held := func(d string) bool {
		for _, t := range texts {
			if strings.Contains(t, d) {
				return true
			}
		}
		return false
	}
	for _, d := range []string{";;", "$$", "//"} {
		if !held(d) {
			return d
		}
	}
	d := ";;;"
	for held(d) {
		d += ";"
	}
	return d
}

// AccountsScript creates the catalog's accounts as ApplyAccounts does
// without Replace: an account the target has is kept as it is, without
// the backup's grants (the script says so), roles before users; then the
// grants of every account it created, then their default roles. The
// grants that name a table, view or routine the catalog does not hold
// are left out, as comments: the target would refuse them.
func AccountsScript(c *Catalog) string {
	var grants []string
	for _, a := range c.Users {
		grants = append(grants, a.Grants...)
		grants = append(grants, a.Create)
	}
	delim := pickDelimiter(grants)
	var b strings.Builder
	b.WriteString(ScriptHeader("users and roles, with their grants and default roles; an account this server has is kept as it is"))
	// NO_AUTO_CREATE_USER: a grant never creates an account by itself.
	b.WriteString(setSession([]setting{{"sql_mode", "NO_AUTO_CREATE_USER"}}) + ";\n")
	b.WriteString("DELIMITER " + delim + "\n")
	flag := func(i int) string { return "@backstream_created_" + strconv.Itoa(i) }
	created := make([]bool, len(c.Users))
	for _, roles := range []bool{true, false} {
		for i, a := range c.Users {
			if a.Role != roles {
				continue
			}
			stmt := a.Create
			kind := "user"
			if a.Role {
				stmt, kind = "CREATE ROLE "+a.String(), "role"
			}
			if stmt == "" {
				fmt.Fprintf(&b, "\n-- %s %s: no CREATE USER statement in the backup\n", kind, commentText(a.String()))
				continue
			}
			created[i] = true
			kept := mariadb.QuoteString(kind+" "+a.String()+" exists on this server: kept as it is, without the backup's grants", false)
			fmt.Fprintf(&b, "\n-- %s %s\nSET %s = 0%s\nBEGIN NOT ATOMIC\n  IF NOT EXISTS (SELECT 1 FROM mysql.user WHERE User = %s AND Host = %s) THEN\n    %s;\n    SET %s = 1;\n  ELSE\n    SELECT %s AS kept;\n  END IF;\nEND%s\n",
				kind, commentText(a.String()), flag(i), delim, mariadb.QuoteString(a.User, false), mariadb.QuoteString(a.Host, false), stmt, flag(i), kept, delim)
		}
	}
	for _, step := range []string{"grants", "default role"} {
		for i, a := range c.Users {
			if !created[i] {
				continue
			}
			var stmts, left []string
			switch step {
			case "grants":
				for _, g := range a.Grants {
					if what, ok := c.grantHeld(g); ok {
						stmts = append(stmts, g)
					} else {
						left = append(left, fmt.Sprintf("-- left out: %s (%s is not in the backup)", commentText(g), commentText(what)))
					}
				}
			case "default role":
				if a.DefaultRole != "" && !a.Role {
					stmts = append(stmts, "SET DEFAULT ROLE "+mariadb.QuoteIdent(a.DefaultRole)+" FOR "+a.String())
				}
			}
			if len(stmts)+len(left) == 0 {
				continue
			}
			fmt.Fprintf(&b, "\n-- %s of %s\n", step, commentText(a.String()))
			for _, l := range left {
				b.WriteString(l + "\n")
			}
			if len(stmts) == 0 {
				continue
			}
			fmt.Fprintf(&b, "BEGIN NOT ATOMIC\n  IF %s THEN\n", flag(i))
			for _, s := range stmts {
				b.WriteString("    " + s + ";\n")
			}
			b.WriteString("  END IF;\nEND" + delim + "\n")
		}
	}
	b.WriteString("\nDELIMITER ;\n")
	return b.String()
}

// grantHeld reports whether grant g names only what the catalog holds: a
// table or view, or a routine of its kind, of the catalog; a global,
// database or role grant or a proxy always. what names the object
// otherwise.
func (c *Catalog) grantHeld(g string) (what string, ok bool) {
	o, ok := ParseGrant(g)
	if !ok {
		return "", true // the server will say what is wrong with it
	}
	for _, d := range c.Databases {
		if d.Name != o.Database {
			continue
		}
		switch o.Level {
		case GrantTable:
			for _, t := range d.Tables {
				if t.Name == o.Name {
					return "", true
				}
			}
			for _, v := range d.Views {
				if v.Name == o.Name {
					return "", true
				}
			}
		case GrantRoutine:
			for _, r := range d.Routines {
				if r.Name == o.Name && r.Kind == o.Kind {
					return "", true
				}
			}
		}
	}
	switch o.Level {
	case GrantTable, GrantRoutine:
		return o.String(), false
	}
	return "", true
}
